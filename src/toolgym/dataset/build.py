"""Build a versioned task dataset from the apps' generators: deterministic, split, leak-checked."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass, field

from toolgym.envs import App, app_names, get_app
from toolgym.schema import Task

DEFAULT_HELDOUT_ENVS = ("mail",)


@dataclass
class BuildConfig:
    """What a dataset version is made of; stored in its manifest."""

    version: str = "v0.2"
    seed: int = 7
    apps: list[str] = field(default_factory=app_names)
    tasks_per_family: int = 90
    heldout_envs: list[str] = field(default_factory=lambda: list(DEFAULT_HELDOUT_ENVS))
    heldout_task_fraction: float = 0.08
    with_env_variables: bool = True  # v0.1 had none; v0.2 gives every task its runtime context


def _family_rng(seed: int, app: str, family: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}/{app}/{family}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _is_heldout_task(seed: int, task_id: str, fraction: float) -> bool:
    digest = hashlib.sha256(f"split/{seed}/{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def generate_app_tasks(app: App, config: BuildConfig) -> list[Task]:
    """`tasks_per_family` distinct-prompt tasks from each family of one app."""
    world = app.world()
    tasks: list[Task] = []
    for family in app.task_families():
        rng = _family_rng(config.seed, app.name, family.name)
        wanted = max(1, round(config.tasks_per_family * family.weight))
        seen_prompts: set[str] = set()
        attempts = 0
        index = 0
        while index < wanted and attempts < wanted * 20:
            attempts += 1
            draft = family.generate(rng, world)
            if draft is None or draft.prompt in seen_prompts:
                continue
            seen_prompts.add(draft.prompt)
            task_id = f"{app.name}/{family.name}/{index:04d}"
            index += 1
            if app.name in config.heldout_envs:
                split = "heldout_env"
            elif _is_heldout_task(config.seed, task_id, config.heldout_task_fraction):
                split = "heldout_tasks"
            else:
                split = "train"
            tasks.append(
                Task(
                    id=task_id,
                    env=app.name,
                    env_version=app.version,
                    prompt=draft.prompt,
                    split=split,
                    family=family.name,
                    difficulty=draft.difficulty,
                    env_variables=draft.env_variables if config.with_env_variables else {},
                    data_id=app.data_id,
                    data_version=app.version,
                    checks=draft.checks,
                    reference_solution=draft.reference_solution,
                    expected_answer=draft.expected_answer,
                    metadata={"shape": family.shape, **draft.metadata},
                )
            )
    return tasks


def leakage(tasks: list[Task]) -> list[str]:
    """Task ids or identical prompts that appear in both training and evaluation splits."""
    problems: list[str] = []
    ids = Counter(t.id for t in tasks)
    problems += [f"duplicate task id {i!r}" for i, n in ids.items() if n > 1]
    train_prompts = {t.prompt for t in tasks if t.split == "train"}
    problems += [f"prompt of eval task {t.id} also appears in train" for t in tasks if t.is_eval and t.prompt in train_prompts]
    return problems


def build_tasks(config: BuildConfig) -> list[Task]:
    """All tasks of all configured apps; a prompt already used in another split is dropped (no leak)."""
    tasks: list[Task] = []
    for name in config.apps:
        tasks.extend(generate_app_tasks(get_app(name), config))
    first_split: dict[str, str] = {}
    kept: list[Task] = []
    for task in tasks:
        if first_split.setdefault(task.prompt, task.split) == task.split:
            kept.append(task)
    return kept
