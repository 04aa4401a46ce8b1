"""The embedded tiny model: locally trained tokenizer, Qwen3 weights, toolgym.json, offline reload."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer
from typer.testing import CliRunner

from test_agent_support import tiny_tokenizer
from toolgym.chat.render import Renderer, load_prompt_style, read_model_config
from toolgym.cli.main import app as cli
from toolgym.envs import registry
from toolgym.model.tiny import PAD_TOKEN, SPECIAL_TOKENS, TAG_TOKENS, build_tokenizer, init_tiny, suite_corpus
from toolgym.schema import Message

SMALL = {"hidden_size": 32, "layers": 1, "heads": 2, "kv_heads": 1}


def test_special_tokens_and_tags() -> None:
    tokenizer = tiny_tokenizer()
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == PAD_TOKEN
    for token in (*SPECIAL_TOKENS, *TAG_TOKENS):
        ids = tokenizer("x" + token + "y", add_special_tokens=False)["input_ids"]
        assert tokenizer.convert_tokens_to_ids(token) in ids, f"{token} is not a single token"
    ids = tokenizer('<think>a</think><tool_call>{"name": "x"}</tool_call><|im_end|>', add_special_tokens=False)["input_ids"]
    # Tags are not special: skipping special tokens keeps them and drops only <|im_end|>.
    assert tokenizer.decode(ids, skip_special_tokens=True) == '<think>a</think><tool_call>{"name": "x"}</tool_call>'
    assert set(tokenizer.all_special_tokens) >= set(SPECIAL_TOKENS)
    assert not set(TAG_TOKENS) & set(tokenizer.all_special_tokens)


def test_digits_are_split_and_bytes_round_trip() -> None:
    tokenizer = tiny_tokenizer()
    ids = tokenizer("note 2026", add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids)[-4:] == ["2", "0", "2", "6"]
    text = "Zoë met 東京 at 9:30 — ok 🚀\n\ttabs"
    assert tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"]) == text


def test_tokenizer_is_deterministic() -> None:
    corpus = ["alpha beta gamma 123", '{"name": "add_note", "arguments": {}}', "delta epsilon"] * 20
    first, second = build_tokenizer(corpus, vocab_size=400), build_tokenizer(corpus, vocab_size=400)
    assert first.backend_tokenizer.to_str() == second.backend_tokenizer.to_str()
    with pytest.raises(ValueError, match="vocab_size must exceed 265"):
        build_tokenizer(corpus, vocab_size=100)


def test_suite_corpus_skips_a_missing_app(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(registry, "APP_MODULES", {"toy": "toolgym.envs.examples.toy", "gone": "toolgym.envs.apps.not_there"})
    monkeypatch.setattr(registry, "_loaded", {})
    with caplog.at_level(logging.WARNING, logger="toolgym.model.tiny"):
        corpus = list(suite_corpus(seed=1))
    assert any("skipping app 'gone'" in r.getMessage() for r in caplog.records)
    text = "\n".join(corpus)
    assert '"name": "add_note"' in text and "You manage notes." in text  # the toy app's schemas and policy
    assert corpus == list(suite_corpus(seed=1))
    assert build_tokenizer(corpus, vocab_size=600).get_vocab()


def test_init_tiny_round_trips_offline(tmp_path: Path) -> None:
    out = init_tiny(tmp_path / "tiny", seed=3, tokenizer=tiny_tokenizer(), context_length=512, **SMALL)
    assert {p.name for p in out.iterdir()} >= {"config.json", "model.safetensors", "tokenizer.json", "toolgym.json"}
    assert json.loads((out / "toolgym.json").read_text()) == {"prompt_style": "compact", "context_length": 512}
    assert load_prompt_style(out) == "compact" and read_model_config(out)["context_length"] == 512

    model = AutoModelForCausalLM.from_pretrained(out, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(out, local_files_only=True)
    assert type(model).__name__ == "Qwen3ForCausalLM"
    assert model.config.tie_word_embeddings and model.config.vocab_size == len(tokenizer)
    assert model.config.num_key_value_heads == 1 and model.config.max_position_embeddings == 512
    assert model.config.eos_token_id == tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert tokenizer.chat_template == tiny_tokenizer().chat_template
    assert tokenizer.model_max_length == 512

    renderer = Renderer(tokenizer, load_prompt_style(out))
    prompt = renderer.prompt_ids([Message(role="user", content="hi")], None)
    assert tokenizer.decode(prompt) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    with torch.no_grad():
        logits = model(torch.tensor([prompt])).logits
    assert logits.shape == (1, len(prompt), len(tokenizer))


def test_init_tiny_is_deterministic_given_the_seed(tmp_path: Path) -> None:
    a = load_file(init_tiny(tmp_path / "a", seed=5, tokenizer=tiny_tokenizer(), **SMALL) / "model.safetensors")
    b = load_file(init_tiny(tmp_path / "b", seed=5, tokenizer=tiny_tokenizer(), **SMALL) / "model.safetensors")
    c = load_file(init_tiny(tmp_path / "c", seed=6, tokenizer=tiny_tokenizer(), **SMALL) / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (tmp_path / "b" / "tokenizer.json").read_bytes()


def test_default_shape(tmp_path: Path) -> None:
    out = init_tiny(tmp_path / "tiny", tokenizer=tiny_tokenizer(), prompt_style="full")
    config = json.loads((out / "config.json").read_text())
    assert (config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"], config["num_key_value_heads"]) == (128, 4, 4, 2)
    assert load_prompt_style(out) == "full"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hidden_size": 30, "heads": 4}, "hidden_size 30 is not divisible by heads 4"),
        ({"heads": 4, "kv_heads": 3}, "heads 4 is not divisible by kv_heads 3"),
        ({"prompt_style": "tiny"}, "prompt_style must be one of full, compact"),
    ],
)
def test_bad_shapes_are_refused(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        init_tiny(tmp_path, tokenizer=tiny_tokenizer(), **kwargs)


def test_cli_init_tiny(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "model"
    result = runner.invoke(cli, ["model", "init-tiny", str(out), "--hidden-size", "32", "--layers", "1", "--heads", "2",
                                 "--kv-heads", "1", "--vocab-size", "800", "--context-length", "1024"])
    assert result.exit_code == 0, result.output
    assert "wrote tiny model" in result.output
    assert read_model_config(out) == {"prompt_style": "compact", "context_length": 1024}
    assert len(AutoTokenizer.from_pretrained(out, local_files_only=True)) == 800

    bad = runner.invoke(cli, ["model", "init-tiny", str(tmp_path / "bad"), "--prompt-style", "huge"])
    assert bad.exit_code == 2 and "must be one of full, compact" in bad.output
    shape = runner.invoke(cli, ["model", "init-tiny", str(tmp_path / "bad"), "--heads", "3"])
    assert shape.exit_code == 2 and "hidden_size 128 is not divisible by heads 3" in shape.output
    assert not (tmp_path / "bad").exists()


def test_init_tiny_settings_default_to_the_builders() -> None:
    """The command's settings restate init_tiny's defaults (the config tree must not import the builder)."""
    import inspect

    from toolgym.config.model import InitTinyConfig

    builder = inspect.signature(init_tiny).parameters
    assert InitTinyConfig().model_dump() == {name: builder[name].default for name in InitTinyConfig.model_fields}


def test_cli_init_tiny_reads_a_config_file_then_set_and_refuses_an_unknown_key(tmp_path: Path) -> None:
    runner = CliRunner()
    config = tmp_path / "tiny.yaml"
    config.write_text("hidden_size: 32\nlayers: 1\nheads: 2\nkv_heads: 1\nvocab_size: 800\nprompt_style: full\n")
    out = tmp_path / "model"
    result = runner.invoke(cli, ["model", "init-tiny", str(out), "--config", str(config), "--context-length", "512",
                                 "--set", "layers=2"])
    assert result.exit_code == 0, result.output
    shape = json.loads((out / "config.json").read_text())
    assert (shape["hidden_size"], shape["num_hidden_layers"], shape["num_attention_heads"]) == (32, 2, 2)
    assert read_model_config(out) == {"prompt_style": "full", "context_length": 512}

    config.write_text("hidden_size: 32\nkv_head: 1\n")
    bad = runner.invoke(cli, ["model", "init-tiny", str(tmp_path / "bad"), "--config", str(config)])
    text = " ".join(bad.output.split())
    assert bad.exit_code == 2, bad.output
    assert f"{config}" in text and "field kv_head: unknown setting; known:" in text and "(line 2)" in text
    assert not (tmp_path / "bad").exists()
