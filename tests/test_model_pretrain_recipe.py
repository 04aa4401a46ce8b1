"""The pre-training recipe end to end on a toy shape: reproducible, verifiable, loadable offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from typer.testing import CliRunner

from toolgym.chat.render import Renderer
from toolgym.cli.main import app
from toolgym.model.pretrain.corpus import generate_episode
from toolgym.model.pretrain.data import episode_stream, pack_batch
from toolgym.model.pretrain.recipe import TinyRecipe, pretrain_tiny, verify_default
from toolgym.model.pretrain.render import tokenize_episode
from toolgym.model.pretrain.train import TrainConfig, fast_bf16

TOY = TinyRecipe(
    vocab_size=600, tokenizer_episodes=150, hidden_size=32, layers=1, heads=2, kv_heads=1, verify_steps=3,
    planted_copy=False,  # too small for the circuit; test_the_recipe_plants_the_copy_circuit covers it
    train=TrainConfig(steps=4, rows=1, seq_len=2048, warmup_steps=2, eval_episodes=4, threads=1),
)


@pytest.fixture(scope="module")
def toy_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("toy") / "model"
    pretrain_tiny(out, TOY)
    return out


def test_folder_loads_offline_as_float32_with_the_compact_style(toy_model: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(toy_model, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(toy_model, local_files_only=True)
    assert next(model.parameters()).dtype == torch.float32
    assert model.config.vocab_size == len(tokenizer)
    settings = json.loads((toy_model / "toolgym.json").read_text())
    assert settings["prompt_style"] == "compact"
    assert len(settings["pretrain"]["reference_losses"]) == 3
    assert "no env-suite task" in (toy_model / "MODEL_CARD.md").read_text()


def test_verify_reproduces_the_recorded_losses(toy_model: Path) -> None:
    result = verify_default(toy_model)
    assert result.ok, result.message
    assert result.steps == 3 and result.tokenizer_matches


def _copy_with_a_tampered_loss(model: Path, tmp_path: Path, step: int, **recorded: object) -> Path:
    """A copy of `model` whose recorded loss at `step` is off by 1e-3, with `recorded` set in its pretrain section."""
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in model.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    settings = json.loads((copy / "toolgym.json").read_text())
    settings["pretrain"]["reference_losses"][step] += 1e-3
    settings["pretrain"].update(recorded)
    (copy / "toolgym.json").write_text(json.dumps(settings))
    return copy


def test_verify_fails_on_a_tampered_loss(toy_model: Path, tmp_path: Path) -> None:
    result = verify_default(_copy_with_a_tampered_loss(toy_model, tmp_path, step=1))
    assert not result.ok
    assert "step 1" in result.message
    # Built on this machine: its own bf16 path, so no note about another CPU's rounding.
    assert "round differently" not in result.message


def test_verify_explains_a_mismatch_on_a_cpu_that_emulates_the_recorded_bf16(toy_model: Path, tmp_path: Path) -> None:
    # As if the losses had been recorded on a CPU where bf16 is native.
    result = verify_default(_copy_with_a_tampered_loss(toy_model, tmp_path, step=0, fast_bf16=True))
    assert not result.ok
    assert ("round differently" in result.message) == (not fast_bf16())


def test_verify_command_shows_progress_and_says_when_this_cpu_emulates_bf16(toy_model: Path) -> None:
    """The note appears exactly where bf16 is emulated: there the recorded CPU time is far off."""
    result = CliRunner().invoke(app, ["model", "verify-default", str(toy_model)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "3/3 steps" in result.output and "OK" in result.output
    assert ("no native bfloat16" in result.output) == (TOY.train.bf16 and not fast_bf16())


def test_verify_command_names_a_folder_without_a_recipe(tmp_path: Path) -> None:
    (tmp_path / "toolgym.json").write_text(json.dumps({"prompt_style": "compact"}))
    result = CliRunner().invoke(app, ["model", "verify-default", str(tmp_path)], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert "no 'pretrain' section" in result.output


def test_verify_names_a_folder_without_a_recipe(tmp_path: Path) -> None:
    (tmp_path / "toolgym.json").write_text(json.dumps({"prompt_style": "compact"}))
    with pytest.raises(ValueError, match="no 'pretrain' section"):
        verify_default(tmp_path)


def test_loss_mask_covers_exactly_the_assistant_turns(toy_model: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(toy_model)
    renderer = Renderer(tokenizer, prompt_style="compact")
    episode = generate_episode(0, 5)
    tokenized = tokenize_episode(episode, renderer)
    supervised = tokenizer.decode([i for i, m in zip(tokenized.input_ids, tokenized.loss_mask, strict=True) if m])
    assistant_turns = [m for m in episode.messages if m.role == "assistant"]
    assert supervised.count("<|im_end|>") == len(assistant_turns)
    assert "<|im_start|>" not in supervised and "<tool_response>" not in supervised
    for message in assistant_turns:
        for call in message.tool_calls or []:
            assert f'"name": "{call.name}"' in supervised
    for span in tokenized.spans:
        assert all(tokenized.loss_mask[span.start:span.end])


def test_packed_targets_are_next_tokens_of_supervised_positions(toy_model: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(toy_model)
    renderer = Renderer(tokenizer, prompt_style="compact")
    stream = episode_stream(0, renderer, 0, 2047)
    batch = pack_batch(stream, 2, 2048, tokenizer.pad_token_id, tokenizer.convert_tokens_to_ids("<|endoftext|>"), [])
    ids, targets = batch.input_ids, batch.targets
    where = (targets != -100).nonzero()
    assert len(where) == batch.supervised_tokens > 0
    for row, col in where.tolist():
        assert targets[row, col] == ids[row, col + 1]


def test_context_weight_adds_the_rest_of_the_episode_at_its_weight(toy_model: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(toy_model)
    renderer = Renderer(tokenizer, prompt_style="compact")
    separator = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    plain = pack_batch(episode_stream(0, renderer, 0, 2047), 1, 2048, tokenizer.pad_token_id, separator, [])
    mixed = pack_batch(episode_stream(0, renderer, 0, 2047), 1, 2048, tokenizer.pad_token_id, separator, [], 0.3)
    assert torch.equal(plain.input_ids, mixed.input_ids)
    assert mixed.supervised_tokens == plain.supervised_tokens
    assert mixed.weights.unique().tolist() == pytest.approx([0.0, 0.3, 1.0])
    context = (mixed.weights > 0) & (mixed.weights < 1)
    assert int(context.sum()) > 3 * plain.supervised_tokens  # most of an episode is context
    assert bool((mixed.targets[mixed.weights == 0] == -100).all())


def test_the_recipe_plants_the_copy_circuit(tmp_path: Path) -> None:
    from toolgym.model.pretrain.plant import ROPE_THETA
    from toolgym.model.pretrain.recipe import _initial_model, build_recipe_tokenizer
    from toolgym.model.pretrain.train import chunk_copy_batch

    recipe = TOY.model_copy(update={"planted_copy": True, "hidden_size": 256, "layers": 2, "heads": 4, "kv_heads": 2})
    model = _initial_model(recipe, build_recipe_tokenizer(recipe), tmp_path)
    assert model.config.rope_parameters["rope_theta"] == ROPE_THETA
    ids, targets = chunk_copy_batch(0, 1, rows=2, length=256, vocab_low=10, vocab_high=model.config.vocab_size)
    with torch.no_grad():
        predicted = model(ids).logits.argmax(-1)
    selected = targets != -100
    assert float((predicted[selected] == targets[selected]).float().mean()) > 0.85
