"""How many SFT rows overflow a model's context, counted in the tokens TRL's SFTTrainer renders them to.

A row longer than the model's context cannot be trained whole (TRL truncates it, `toolgym train sft` drops
it), so `data convert` and `data validate`, given the model, say how many rows that is and by how much before a
training run finds out. The context is what `toolgym train sft` takes as its max_length: config.json's
max_position_embeddings, else the tokenizer's model_max_length.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from toolgym.data.convert import episode_row, trainer_row
from toolgym.data.validate import RowCheck
from toolgym.model import context_length, model_folder

UNSET_CONTEXT = 10**9  # transformers' model_max_length when the tokenizer does not know it (1e30): no context


@dataclass
class ContextReport:
    """Rows measured against one model's context; `overflows` holds, per row over it, the tokens past it."""

    model: str
    context: int
    rows: int = 0
    longest: int = 0
    overflows: list[int] = field(default_factory=list)

    def add(self, tokens: int) -> None:
        self.rows += 1
        self.longest = max(self.longest, tokens)
        if tokens > self.context:
            self.overflows.append(tokens - self.context)

    @property
    def overflow_median(self) -> float | None:
        return statistics.median(self.overflows) if self.overflows else None

    def render(self) -> str:
        head = f"model {self.model}: context {self.context} tokens; as TRL renders them,"
        if not self.overflows:
            return f"{head} all {self.rows} rows fit (the longest is {self.longest} tokens)"
        return (f"{head} {len(self.overflows)} of {self.rows} rows overflow it, by up to {max(self.overflows)} "
                f"tokens (median {self.overflow_median:g}; the longest row is {self.longest} tokens)")

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "context": self.context, "rows": self.rows, "longest": self.longest,
                "rows_over_context": len(self.overflows), "overflow_max": max(self.overflows, default=None),
                "overflow_median": self.overflow_median}


class ContextCheck:
    """A model's tokenizer and context, loaded once, measuring rows in the ids TRL's SFTTrainer gives them."""

    def __init__(self, model: str) -> None:
        """`model`: a model folder, or `default` for the shipped default model."""
        from transformers import AutoTokenizer

        folder = model_folder(model)
        self.model = model
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        context = context_length(folder) or getattr(self.tokenizer, "model_max_length", None)
        if not isinstance(context, int) or not 0 < context < UNSET_CONTEXT:
            raise ValueError(f"{model}: neither {folder / 'config.json'} (max_position_embeddings) nor its tokenizer "
                             "(model_max_length) says how long its context is")
        self.context = context
        # Measured against `context` here: the tokenizer's own warning on each long row would only repeat it.
        self.tokenizer.model_max_length = UNSET_CONTEXT

    def token_ids(self, row: dict[str, Any]) -> list[int]:
        """The ids TRL's SFTTrainer tokenizes an SFT row into: its `tokenize_fn` on the row `sft_rows` gives."""
        trained = trainer_row(row)
        tools = json.loads(trained["tools"]) if isinstance(trained["tools"], str) else trained["tools"]
        out = self.tokenizer.apply_chat_template(trained["messages"], tools=tools, tokenize=True, return_dict=True,
                                                 **trained["chat_template_kwargs"])
        return list(out["input_ids"])

    def report(self) -> ContextReport:
        return ContextReport(model=self.model, context=self.context)

    def measure(self, rows: Iterable[dict[str, Any]]) -> ContextReport:
        """The report over SFT rows (what `data convert` writes)."""
        report = self.report()
        for row in rows:
            report.add(len(self.token_ids(row)))
        return report

    def add_checked(self, report: ContextReport, row: Any, check: RowCheck) -> None:
        """Measure a row `data validate` passed: an SFT row as it is, a results row as the conversation convert
        would write of it (episode mode); error rows hold nothing to train on and are left out."""
        if not check.valid:
            return
        if check.kind == "sft":
            report.add(len(self.token_ids(row)))
        elif check.results is not None and check.results.status != "error":
            report.add(len(self.token_ids(episode_row(check.results))))
