"""The settings of the tiny model's pre-training: the recipe (tokenizer, shape, init) and its training run.

Kept free of torch and transformers so the command line reads them cheaply; the model's `toolgym.json`
stores a recipe as `TinyRecipe.model_dump()` and `verify-default` reads it back with `model_validate`.
"""

from __future__ import annotations

import math
from typing import Literal, Self

from pydantic import Field, model_validator

from toolgym.schema.section import Section

Pretokenizer = Literal["word_isolating", "qwen"]
WeightsDtype = Literal["bfloat16", "float16", "float32"]


def check_shape(hidden_size: int, layers: int, heads: int, kv_heads: int) -> None:
    """Refuse a Qwen3 shape the attention cannot split, in the words every tiny-model command uses."""
    if min(hidden_size, layers, heads, kv_heads) < 1:
        raise ValueError("hidden_size, layers, heads and kv_heads must be positive")
    if hidden_size % heads:
        raise ValueError(f"hidden_size {hidden_size} is not divisible by heads {heads}")
    if heads % kv_heads:
        raise ValueError(f"heads {heads} is not divisible by kv_heads {kv_heads}")


class TrainConfig(Section):
    """Everything that decides a pre-training run; stored in the model's toolgym.json."""

    seed: int = 0
    """Seed of the corpus order and the random-copy rows (follows the recipe's seed unless given)."""
    steps: int = 1000
    """Training steps."""
    rows: int = 4
    """Packed rows per step."""
    seq_len: int = 2048
    """Tokens per packed row; longer episodes are skipped."""
    lr: float = 2e-3
    """Peak learning rate."""
    min_lr_ratio: float = 0.1
    """Final learning rate as a fraction of the peak."""
    warmup_steps: int = 100
    """Steps of linear warm-up from zero to the peak learning rate."""
    decay_start: float = 0.8
    """Hold the learning rate constant until this fraction of the steps, then cosine to the minimum."""
    weight_decay: float = 0.1
    """AdamW weight decay of the matrices (norms and biases get none)."""
    beta1: float = 0.9
    """AdamW beta1."""
    beta2: float = 0.95
    """AdamW beta2."""
    grad_clip: float = 1.0
    """Gradient-norm clip (0: no clipping)."""
    bf16: bool = True
    """Run matmuls under bf16 autocast (master weights stay fp32); the recorded losses depend on it."""
    threads: int = 1
    """torch threads of the whole build, the planted init included (its weights change with the thread count);
    1 is far better on a machine shared with other jobs."""
    eval_every_s: float = 300.0
    """CPU seconds between held-out evaluations (the first and last steps are always evaluated)."""
    eval_episodes: int = 300
    """Held-out corpus episodes per evaluation."""
    context_weight: float = 0.3
    """Loss weight of non-assistant tokens (system prompt, requests, tool results): their repeated keys, names
    and ids give the copy (induction) circuit far more signal than assistant turns alone."""
    curriculum_episodes: int = 0
    """The first episodes are mostly verbatim copying (corpus.CURRICULUM_WEIGHTS)."""
    copy_steps: int = 0
    """Phase 0: the first steps repeat random token sequences (copy_rows × copy_len, second half = first half);
    copy targets that nothing but copying predicts make the copy circuit form in ~150 steps (the corpus alone
    had not formed it after 450)."""
    copy_rows: int = 16
    """Rows per phase-0 random-copy step."""
    copy_len: int = 128
    """Tokens per phase-0 random-copy row."""
    copy_mix_rows: int = 0
    """After phase 0, random-copy rows added to every corpus step, so the copy circuit is kept while the corpus
    teaches when to copy (without them the first corpus steps erase it)."""
    copy_mix_len: int = 256
    """Tokens per mixed-in random-copy row."""
    skill_weights: dict[str, float] = Field(default_factory=dict)
    """Sampling weight of each corpus skill (empty: the corpus's own weights)."""

    def lr_at(self, step: int) -> float:
        """The learning rate at `step`: linear warm-up, a constant hold, then cosine down to the floor."""
        if step < self.warmup_steps:
            return self.lr * (step + 1) / self.warmup_steps
        hold = int(self.decay_start * self.steps)
        if step < hold:
            return self.lr
        progress = (step - hold) / max(1, self.steps - hold)
        floor = self.lr * self.min_lr_ratio
        return floor + 0.5 * (self.lr - floor) * (1 + math.cos(math.pi * min(1.0, progress)))


class TinyRecipe(Section):
    """Everything that decides the default model; a changed field is a different model."""

    seed: int = 0
    """One seed fixes the tokenizer corpus, the init, the corpus order and so every loss."""
    vocab_size: int = 4000
    """BPE vocabulary size of the tokenizer trained on the generic corpus."""
    pretokenizer: Pretokenizer = "word_isolating"
    """Pre-tokenizer split: `word_isolating` (a word never carries its leading space or quote) or `qwen`."""
    tokenizer_episodes: int = 6000
    """Generic corpus episodes the tokenizer is trained on."""
    hidden_size: int = 256
    """Hidden size of the Qwen3 network."""
    layers: int = 4
    """Number of decoder layers."""
    heads: int = 4
    """Attention heads (must divide hidden size)."""
    kv_heads: int = 2
    """Key/value heads (must divide heads)."""
    context_length: int = 4096
    """Maximum sequence length (prompt + generation)."""
    weights_dtype: WeightsDtype = "bfloat16"
    """Storage dtype of the weights file only: the folder loads as float32 (config dtype)."""
    verify_steps: int = 20
    """First training steps whose losses are recorded for `toolgym model verify-default`."""
    planted_copy: bool = True
    """Start from weights with a copy circuit planted (plant.py): copying never formed from random init."""
    train: TrainConfig = Field(default_factory=TrainConfig)
    """The pre-training run."""

    @model_validator(mode="after")
    def _shape_divides_and_train_seed_follows(self) -> Self:
        """A shape the network cannot take fails before hours of tokenizer training, not after; and one seed
        decides the whole model: the run's seed is the recipe's unless given on its own."""
        check_shape(self.hidden_size, self.layers, self.heads, self.kv_heads)
        if "seed" not in self.train.model_fields_set:
            self.train = self.train.model_copy(update={"seed": self.seed})
        return self
