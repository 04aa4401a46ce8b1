"""`toolgym data convert`'s settings (which episodes of a rollout become SFT rows, and how) and `data validate`'s.

`ConvertOptions` is the converter's own settings type (`toolgym.data.convert` takes it, as do the RFT
trainer and the pipeline's teacher stage); the command adds where the rows are written.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, field_validator

from toolgym.config.base import Section, one_of

RowMode = Literal["episode", "turn"]
ROW_MODES: tuple[RowMode, ...] = get_args(RowMode)
DEFAULT_STATUSES = ("ok", "truncated")


class ConvertOptions(Section):
    """Which rollout rows are converted, and into what rows."""

    min_reward: float | None = None
    """Keep episodes with reward ≥ R."""
    statuses: list[str] = Field(default_factory=lambda: list(DEFAULT_STATUSES))
    """Statuses to keep: ok, truncated (error rows are never converted)."""
    row_mode: RowMode = "episode"
    """episode: one row per episode; turn: one per assistant turn."""
    dedupe: bool = False
    """Drop rows whose messages and tools repeat an earlier row."""
    train_malformed_turns: bool = False
    """Also train assistant turns that wrote a malformed call (default: kept as context, weight 0)."""

    _known_row_mode = one_of("row_mode", ROW_MODES, "row mode must be one of {choices}; got {value!r}")

    @field_validator("statuses")
    @classmethod
    def _known_statuses(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in ("ok", "truncated", "error")]
        if unknown:
            raise ValueError(f"unknown status {unknown[0]!r}; use ok, truncated (error rows are never converted)")
        return value


class ModelContext(Section):
    """The model whose context the rows must fit, for `data convert` and `data validate` to measure them against."""

    model: str | None = None
    """Model folder, or default (the shipped default model): also count the rows longer than its context
    (max_position_embeddings, else the tokenizer's model_max_length) and by how many tokens, as TRL's
    SFTTrainer tokenizes them (a results row as the conversation convert writes of it)."""


class ConvertConfig(ConvertOptions, ModelContext):
    """`toolgym data convert RUN_DIR`: a rollout's results.jsonl → SFT rows `{messages, tools, …provenance,
    token_samples}`, every input row converted or skipped with a reason."""

    out: str | None = None
    """SFT rows file to write (JSONL); a .manifest.json goes beside it."""

    def options(self) -> ConvertOptions:
        """The converter's settings, without where the rows are written."""
        return self.part(ConvertOptions)


class DataValidateConfig(ModelContext):
    """`toolgym data validate PATH`: check roles, system placement, tool-call ids, arguments, tools and token
    samples of a results.jsonl or SFT rows file; count the reasons."""

    strict: bool = False
    """Exit with status 1 if any row is invalid (without it: only when no row is valid)."""

