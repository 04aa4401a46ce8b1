"""Which tasks a rollout runs: a dataset folder or file, filtered by split and environment."""

from __future__ import annotations

from pathlib import Path

from toolgym.dataset.manifest import tasks_file as tasks_file
from toolgym.schema import EVAL_SPLITS, Task
from toolgym.schema.jsonl import read_models

SPLIT_CHOICES = ("train", "heldout_tasks", "heldout_env", "eval")


def select_tasks(
    tasks: list[Task], *, split: str | None = None, envs: list[str] | None = None, limit: int | None = None
) -> list[Task]:
    """Tasks of one split ("eval" = every held-out split) and of the given environments, first `limit`."""
    if split is not None and split not in SPLIT_CHOICES:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(SPLIT_CHOICES)}")
    chosen = [
        t for t in tasks
        if (split is None or (t.split in EVAL_SPLITS if split == "eval" else t.split == split))
        and (not envs or t.env in envs)
    ]
    return chosen[:limit] if limit is not None else chosen


def load_tasks(
    dataset: str | Path, *, split: str | None = None, envs: list[str] | None = None, limit: int | None = None
) -> tuple[Path, list[Task]]:
    path = tasks_file(dataset)
    return path, select_tasks(read_models(path, Task), split=split, envs=envs, limit=limit)
