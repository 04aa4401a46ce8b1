"""The tasks a command is about to run: loaded, filtered, not empty, and their verifiers allowed here.

`toolgym rollout` and `toolgym eval` stop on the same faults in the same words, before any episode starts.
"""

from __future__ import annotations

from pathlib import Path

from toolgym.rollout.tasks import load_tasks
from toolgym.schema import Task
from toolgym.verify.isolation import tasks_have_verifiers, verifier_refusal


def load_runnable_tasks(
    dataset: str | Path,
    *,
    split: str | None,
    envs: list[str] | None,
    limit: int | None,
    trust_verifiers: bool,
) -> tuple[Path, list[Task]]:
    """(tasks file, selected tasks); FileNotFoundError or ValueError carries the message the command prints."""
    tasks_path, selected = load_tasks(Path(dataset), split=split, envs=envs, limit=limit)
    if not selected:
        env = ",".join(envs) if envs else None
        raise ValueError(f"no tasks in {tasks_path} match split={split} env={env}")
    refused = verifier_refusal(tasks_have_verifiers(selected), trust_verifiers)
    if refused:
        raise ValueError(refused)
    return tasks_path, selected
