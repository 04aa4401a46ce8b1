"""The model commands' settings: `toolgym model init-tiny` (the shape of a freshly initialised tiny Qwen3),
`pretrain-tiny` (the whole recipe of the default model) and `verify-default` (how much of it to re-run).

The init-tiny defaults are `toolgym.model.tiny.init_tiny`'s (a test keeps the two equal); the recipe is the
model layer's torch-free `toolgym.model.pretrain.settings`. Nothing here imports torch, so reading the
settings stays cheap for the command line.
"""

from __future__ import annotations

from toolgym.chat.render import PROMPT_STYLES, PromptStyle
from toolgym.config.base import Section, one_of
from toolgym.model.pretrain.settings import TinyRecipe


class InitTinyConfig(Section):
    """`toolgym model init-tiny OUT`: train the tokenizer on the env suite and write a randomly initialised
    Qwen3ForCausalLM of this shape (heads must divide hidden_size, kv_heads must divide heads)."""

    hidden_size: int = 128
    """Hidden size of the Qwen3 network."""
    layers: int = 4
    """Number of decoder layers."""
    heads: int = 4
    """Attention heads (must divide hidden size)."""
    kv_heads: int = 2
    """Key/value heads (must divide heads)."""
    seed: int = 0
    """Weight-initialisation seed: the same seed gives the same weights."""
    prompt_style: PromptStyle = "compact"
    """Prompt style the model is meant for."""
    context_length: int = 4096
    """Maximum sequence length (prompt + generation)."""
    vocab_size: int = 4000
    """BPE vocabulary size of the tokenizer trained on the env suite."""

    _known_style = one_of("prompt_style", PROMPT_STYLES, "must be one of {choices}; got {value!r}")


class PretrainTinyConfig(TinyRecipe):
    """`toolgym model pretrain-tiny OUT`: build the tokenizer, init the network (with the planted copy circuit)
    and pre-train it on the generic synthetic tool-use corpus on CPU; the defaults are the shipped default
    model's recipe, and `train.seed` follows `seed` unless given."""


class VerifyDefaultConfig(Section):
    """`toolgym model verify-default [MODEL_DIR]`: rebuild the tokenizer and re-run the first recorded training
    steps of a pre-trained folder (default: the shipped default model); the losses must match."""

    steps: int | None = None
    """How many of the recorded first steps to re-run (default: all)."""
    tolerance: float = 1e-4
    """Largest allowed absolute loss difference."""
