"""Build a versioned task dataset from the apps' generators: deterministic, split, leak-checked.

Single apps come first, in `apps` order, then multi-app compositions (`toolgym.envs.multi`), in
`compositions` order. A composition task's `env` is the composition name ("mail+drive"); a
composition that contains a held-out environment is held out as a whole (`heldout_env`). With no
compositions the output is exactly what the single-app build always produced.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolgym.envs import App, TaskDraft, TaskFamily, World, app_names, get_app
from toolgym.envs.multi import Composition, MultiTaskFamily, Worlds, composition_names, get_composition
from toolgym.schema import Task

DEFAULT_HELDOUT_ENVS = ("mail",)


@dataclass
class BuildConfig:
    """What a dataset version is made of; stored in its manifest."""

    __pydantic_config__ = {"extra": "forbid"}  # as the pipeline's `tasks.build:` section: unknown keys are errors
    version: str = "v0.2"
    seed: int = 7
    apps: list[str] = field(default_factory=app_names)
    tasks_per_family: int = 90
    heldout_envs: list[str] = field(default_factory=lambda: list(DEFAULT_HELDOUT_ENVS))
    heldout_task_fraction: float = 0.08
    with_env_variables: bool = True  # v0.1 had none; v0.2 gives every task its runtime context
    # Multi-app compositions to add ("mail+drive"); None: every defined one whose apps are all in `apps`.
    compositions: list[str] | None = None

    def __post_init__(self) -> None:
        if self.compositions is None:
            self.compositions = [name for name in composition_names()
                                 if all(app in self.apps for app in name.split("+"))]


def _family_rng(seed: int, app: str, family: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}/{app}/{family}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _is_heldout_task(seed: int, task_id: str, fraction: float) -> bool:
    digest = hashlib.sha256(f"split/{seed}/{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def _distinct_drafts(generate: Callable[[], TaskDraft | None], wanted: int) -> list[TaskDraft]:
    """Up to `wanted` drafts with distinct prompts, giving up after `wanted * 20` draws."""
    drafts: list[TaskDraft] = []
    seen_prompts: set[str] = set()
    attempts = 0
    while len(drafts) < wanted and attempts < wanted * 20:
        attempts += 1
        draft = generate()
        if draft is None or draft.prompt in seen_prompts:
            continue
        seen_prompts.add(draft.prompt)
        drafts.append(draft)
    return drafts


def _split(config: BuildConfig, env_apps: list[str], task_id: str) -> str:
    """heldout_env if any app of the environment is held out; else train or heldout_tasks by task id."""
    if any(app in config.heldout_envs for app in env_apps):
        return "heldout_env"
    if _is_heldout_task(config.seed, task_id, config.heldout_task_fraction):
        return "heldout_tasks"
    return "train"


def _task(config: BuildConfig, task_id: str, env: dict[str, Any], family: str, shape: str,
          draft: TaskDraft) -> Task:
    return Task(
        id=task_id,
        env=env["name"],
        env_version=env["version"],
        prompt=draft.prompt,
        split=_split(config, env["apps"], task_id),
        family=family,
        difficulty=draft.difficulty,
        env_variables=draft.env_variables if config.with_env_variables else {},
        data_id=env["data_id"],
        data_version=env["version"],
        checks=draft.checks,
        reference_solution=draft.reference_solution,
        expected_answer=draft.expected_answer,
        user_scenario=draft.user_scenario,
        metadata={"shape": shape, **draft.metadata},
    )


def _family_tasks(
    config: BuildConfig, name: str, env: dict[str, Any], families: Sequence[TaskFamily | MultiTaskFamily],
    world: World | Worlds,
) -> list[Task]:
    """`tasks_per_family` distinct-prompt tasks from each family, each drawn from `world`, ids `name/family/NNNN`."""
    tasks: list[Task] = []
    for family in families:
        rng = _family_rng(config.seed, name, family.name)
        wanted = max(1, round(config.tasks_per_family * family.weight))
        drafts = _distinct_drafts(lambda f=family, r=rng: f.generate(r, world), wanted)
        for index, draft in enumerate(drafts):
            tasks.append(_task(config, f"{name}/{family.name}/{index:04d}", env, family.name, family.shape, draft))
    return tasks


def generate_app_tasks(app: App, config: BuildConfig) -> list[Task]:
    """`tasks_per_family` distinct-prompt tasks from each family of one app."""
    world = app.world()
    env = {"name": app.name, "version": app.version, "data_id": app.data_id, "apps": [app.name]}
    return _family_tasks(config, app.name, env, app.task_families(), world)


def generate_composition_tasks(composition: Composition, config: BuildConfig) -> list[Task]:
    """`tasks_per_family` distinct-prompt tasks from each family of a multi-app composition."""
    apps = [get_app(name) for name in composition.apps]
    worlds = composition.worlds()
    env = {"name": composition.name, "version": "+".join(a.version for a in apps),
           "data_id": "+".join(a.data_id for a in apps), "apps": list(composition.apps)}
    return _family_tasks(config, composition.name, env, composition.task_families(), worlds)


def leakage(tasks: list[Task]) -> list[str]:
    """Task ids or identical prompts that appear in both training and evaluation splits."""
    problems: list[str] = []
    ids = Counter(t.id for t in tasks)
    problems += [f"duplicate task id {i!r}" for i, n in ids.items() if n > 1]
    train_prompts = {t.prompt for t in tasks if t.split == "train"}
    problems += [f"prompt of eval task {t.id} also appears in train" for t in tasks if t.is_eval and t.prompt in train_prompts]
    return problems


def build_tasks(config: BuildConfig) -> list[Task]:
    """All tasks of all configured apps and compositions; a prompt already used in another split is
    dropped (no leak)."""
    tasks: list[Task] = []
    for name in config.apps:
        tasks.extend(generate_app_tasks(get_app(name), config))
    for name in config.compositions or []:
        tasks.extend(generate_composition_tasks(get_composition(name), config))
    first_split: dict[str, str] = {}
    kept: list[Task] = []
    for task in tasks:
        if first_split.setdefault(task.prompt, task.split) == task.split:
            kept.append(task)
    return kept
