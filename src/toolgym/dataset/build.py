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
from typing import Any

from pydantic import Field, field_validator, model_validator

from toolgym.envs import App, TaskDraft, TaskFamily, World, app_names, get_app
from toolgym.envs.multi import Composition, MultiTaskFamily, Worlds, composition_names, get_composition
from toolgym.schema import Task
from toolgym.schema.section import Section

DEFAULT_HELDOUT_ENVS = ("mail",)


class BuildConfig(Section):
    """What a dataset version is made of; stored in its manifest (`toolgym tasks build`, the pipeline's
    `tasks.build:`)."""

    version: str = "v0.2"
    """Dataset version: v0.1 has no env_variables, v0.2 has them."""
    seed: int = 7
    """Generator seed; the same seed gives a byte-identical tasks.jsonl."""
    apps: list[str] = Field(default_factory=app_names, min_length=1)
    """Apps whose task families are drawn (default: every registered app)."""
    tasks_per_family: int = Field(90, ge=1)
    """Tasks drawn from each task family (scaled by the family's weight, at least one)."""
    heldout_envs: list[str] = Field(default_factory=lambda: list(DEFAULT_HELDOUT_ENVS))
    """Environments used only for evaluation (split heldout_env); a composition holding one is held out too."""
    heldout_task_fraction: float = Field(0.08, ge=0.0, le=1.0)
    """Share of the other environments' tasks held out (split heldout_tasks), chosen by task id."""
    with_env_variables: bool | None = None
    """Give every task its runtime context (env_variables); default: true for every version but v0.1."""
    compositions: list[str] | None = None
    """Multi-app compositions to add ("mail+drive"); default: every defined one whose apps are all in apps."""

    @field_validator("apps")
    @classmethod
    def _known_apps(cls, apps: list[str]) -> list[str]:
        known = app_names()
        unknown = [app for app in apps if app not in known]
        if unknown:
            raise ValueError(f"unknown app {', '.join(map(repr, unknown))}; known apps: {', '.join(known)}")
        return apps

    @field_validator("compositions")
    @classmethod
    def _known_compositions(cls, compositions: list[str] | None) -> list[str] | None:
        known = composition_names()
        unknown = [name for name in compositions or [] if name not in known]
        if unknown:
            raise ValueError(f"unknown composition {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
        return compositions

    @model_validator(mode="after")
    def _derived(self) -> BuildConfig:
        """The one place the defaults that depend on other fields are filled in, for the CLI and the pipeline."""
        if self.with_env_variables is None:
            self.with_env_variables = self.version != "v0.1"
        if self.compositions is None:
            self.compositions = [name for name in composition_names()
                                 if all(app in self.apps for app in name.split("+"))]
        return self


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
