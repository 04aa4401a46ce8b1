"""Leakage check: does any eval task appear in the training data, by task id or by normalized prompt?

Training data may be tasks (tasks.jsonl: only rows with split "train" count), SFT rows
(`messages` + a task id in `task_id`, `example_id`, `metadata.task_id`, `info.task_id` or
`provenance.task_id`) or results rows; the prompt of a conversation is its first user message.
Prompts are compared after normalization (Unicode NFKC, case-folded, punctuation and runs of
whitespace collapsed), so a re-cased or re-punctuated copy of an eval prompt is still caught.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgym.schema import EVAL_SPLITS
from toolgym.schema.jsonl import JsonlError, iter_json_rows

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
ID_PATHS: tuple[tuple[str, ...], ...] = (
    ("task_id",), ("example_id",), ("metadata", "task_id"), ("info", "task_id"), ("provenance", "task_id"),
)


def normalize_prompt(text: str) -> str:
    """Case-, punctuation- and whitespace-insensitive form of a prompt."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_NON_WORD.sub(" ", folded).split())


@dataclass(frozen=True)
class PromptItem:
    """One task-like thing: its id (if known), its prompt, and where it was read."""

    task_id: str | None
    prompt: str
    origin: str

    @property
    def normalized(self) -> str:
        return normalize_prompt(self.prompt)


def _lookup(row: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = row
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _first_user_text(messages: Any) -> str | None:
    if not isinstance(messages, list):
        return None
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # OpenAI content parts
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return None


def row_item(row: dict[str, Any], origin: str, *, train_only: bool) -> PromptItem | None:
    """The (id, prompt) of a task row, results row or SFT row; None for a row to skip.

    `train_only`: a task row counts only if its split is "train" (a dataset file holds both sides).
    """
    if isinstance(row.get("prompt"), str) and "id" in row:  # a Task
        split = row.get("split", "train")
        if train_only and split != "train":
            return None
        return PromptItem(str(row["id"]), row["prompt"], origin)
    task_id = next((str(v) for p in ID_PATHS if (v := _lookup(row, p)) is not None), None)
    prompt = _first_user_text(row.get("messages"))
    if prompt is None:
        prompt = _first_user_text(row.get("prompt"))  # a results row: prompt = messages before the reply
    if prompt is None and task_id is None:
        raise ValueError(f"{origin}: neither a task id nor a user message found (not a task, SFT or results row)")
    return PromptItem(task_id, prompt or "", origin)


def _rows_file(folder: Path) -> Path | None:
    """A folder's tasks.jsonl, else its results.jsonl, else None."""
    return next((c for c in (folder / "tasks.jsonl", folder / "results.jsonl") if c.is_file()), None)


def _file_items(path: Path, *, train_only: bool, skip: Callable[[dict[str, Any]], bool] | None = None
                ) -> list[PromptItem]:
    """The prompt item of every row of a JSONL file that `skip` does not pass over; a bad row names its line."""
    items: list[PromptItem] = []
    for line, row in iter_json_rows(path):
        if skip is not None and skip(row):
            continue
        try:
            item = row_item(row, f"{path}:{line}", train_only=train_only)
        except ValueError as exc:
            raise JsonlError(path, line, str(exc).split(": ", 1)[-1]) from exc
        if item is not None:
            items.append(item)
    return items


def read_items(path: str | Path, *, train_only: bool) -> list[PromptItem]:
    """Every task-like row of a JSONL file (or a dataset folder's tasks.jsonl)."""
    path = Path(path)
    if path.is_dir():
        found = _rows_file(path)
        if found is None:
            raise FileNotFoundError(f"{path}: no tasks.jsonl or results.jsonl inside")
        path = found
    return _file_items(path, train_only=train_only)


def _train_task_row(row: dict[str, Any]) -> bool:
    return "id" in row and isinstance(row.get("prompt"), str) and row.get("split", "train") not in EVAL_SPLITS


def eval_items_from_tasks(path: str | Path) -> list[PromptItem]:
    """The eval side: a dataset's held-out tasks (train-split task rows are skipped), or every results row."""
    source = Path(path)
    if source.is_dir():
        source = _rows_file(source) or source
    if not source.is_file():
        raise FileNotFoundError(f"{path}: no such tasks or results file")
    return _file_items(source, train_only=False, skip=_train_task_row)


@dataclass
class Overlap:
    by: str  # "task id" or "prompt"
    eval_item: PromptItem
    train_item: PromptItem

    def describe(self) -> str:
        what = f"task id {self.eval_item.task_id!r}" if self.by == "task id" else (
            f"prompt of eval task {self.eval_item.task_id!r} (normalized: {self.eval_item.normalized[:80]!r})"
        )
        return f"{what} is in the training data ({self.train_item.origin}; eval: {self.eval_item.origin})"


@dataclass
class LeakageReport:
    train_items: int
    eval_items: int
    overlaps: list[Overlap] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.overlaps

    @property
    def id_overlaps(self) -> list[Overlap]:
        return [o for o in self.overlaps if o.by == "task id"]

    @property
    def prompt_overlaps(self) -> list[Overlap]:
        return [o for o in self.overlaps if o.by == "prompt"]

    def headline(self) -> str:
        if self.clean:
            return (f"leakage check passed: none of {self.eval_items} eval task(s) shares a task id or a "
                    f"normalized prompt with {self.train_items} training item(s)")
        eval_ids = {id(o.eval_item) for o in self.overlaps}
        return (f"LEAKAGE: {len(eval_ids)}/{self.eval_items} eval task(s) appear in the training data "
                f"({len(self.id_overlaps)} by task id, {len(self.prompt_overlaps)} by normalized prompt)")

    def to_dict(self) -> dict[str, Any]:
        return {
            "clean": self.clean, "train_items": self.train_items, "eval_items": self.eval_items,
            "overlaps": [{"by": o.by, "eval_task_id": o.eval_item.task_id, "train_task_id": o.train_item.task_id,
                          "eval_origin": o.eval_item.origin, "train_origin": o.train_item.origin}
                         for o in self.overlaps],
        }


def check_leakage(train: Iterable[PromptItem], evals: Iterable[PromptItem]) -> LeakageReport:
    """Every eval item whose id or normalized prompt occurs in the training items (one overlap per kind)."""
    train = list(train)
    evals = list(evals)
    by_id = {t.task_id: t for t in train if t.task_id is not None}
    by_prompt = {t.normalized: t for t in train if t.normalized}
    report = LeakageReport(train_items=len(train), eval_items=len(evals))
    for item in evals:
        if item.task_id is not None and item.task_id in by_id:
            report.overlaps.append(Overlap("task id", item, by_id[item.task_id]))
        if item.normalized and item.normalized in by_prompt:
            report.overlaps.append(Overlap("prompt", item, by_prompt[item.normalized]))
    return report


def check_files(train_paths: Iterable[str | Path], eval_path: str | Path) -> LeakageReport:
    train = [item for p in train_paths for item in read_items(p, train_only=True)]
    return check_leakage(train, eval_items_from_tasks(eval_path))
