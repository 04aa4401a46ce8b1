"""Shared setup for the research scripts: tokenizer (tiny.py's when present), renderer, model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

from toolgym.agent.render import Renderer, system_prompt
from toolgym.model.pretrain.corpus import generate_corpus
from toolgym.schema import Message

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"


def corpus_texts(seed: int, count: int) -> list[str]:
    """Rendered text without a tokenizer (for training a provisional BPE)."""
    import jinja2

    template = jinja2.Environment().from_string(
        Path("src/toolgym/model/tiny_chat_template.jinja").read_text())
    texts = []
    for e in generate_corpus(seed, count):
        msgs = [Message(role="system", content=system_prompt("", e.env_variables, e.tools, "compact")), *e.messages]
        texts.append(template.render(messages=[m.to_openai() for m in msgs], tools=None, add_generation_prompt=False))
    return texts


def provisional_tokenizer(vocab_size: int = 4096) -> object:
    out = RUNS / f"tok_prov_{vocab_size}"
    if not (out / "tokenizer.json").exists():
        sys.path.insert(0, str(HERE))
        from provisional_tokenizer import build

        build(corpus_texts(12345, 6000), vocab_size, out)
    return AutoTokenizer.from_pretrained(out)


def make_model(vocab_size: int, hidden: int, layers: int, heads: int, kv_heads: int, intermediate: int,
               seed: int, head_dim: int | None = None) -> Qwen3ForCausalLM:
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=vocab_size, hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim or hidden // heads,
        max_position_embeddings=2048, rope_theta=10000.0, tie_word_embeddings=True, rms_norm_eps=1e-6,
        initializer_range=0.02, attn_implementation="sdpa",
    )
    model = Qwen3ForCausalLM(config)
    return model


def log_jsonl(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def renderer_for(tokenizer: object) -> Renderer:
    return Renderer(tokenizer, prompt_style="compact")


ISOLATED_WORDS_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def tiny_tokenizer(kind: str = "qwen", vocab_size: int = 4000) -> object:
    """tiny.py's build_tokenizer on the generic corpus; kind 'iso' isolates words from their leading space."""
    out = RUNS / f"tok_{kind}_{vocab_size}"
    if not (out / "tokenizer.json").exists():
        from toolgym.model import tiny

        saved = tiny.PRETOKENIZE_PATTERN
        if kind == "iso":
            tiny.PRETOKENIZE_PATTERN = ISOLATED_WORDS_PATTERN
        try:
            tok = tiny.build_tokenizer(corpus_texts(12345, 6000), vocab_size=vocab_size)
        finally:
            tiny.PRETOKENIZE_PATTERN = saved
        tok.save_pretrained(out)
        (out / "toolgym.json").write_text(json.dumps({"prompt_style": "compact"}))
    return AutoTokenizer.from_pretrained(out)
