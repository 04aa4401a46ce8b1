"""Multi-app compositions: environments, task generation, replay to reward 1, determinism and the build."""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import json
import os
import subprocess
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from toolgym.dataset.build import (
    BuildConfig,
    build_tasks,
    generate_app_tasks,
    generate_composition_tasks,
    leakage,
)
from toolgym.dataset.replay import replay_task
from toolgym.envs import get_app, kit, make_env
from toolgym.envs.multi import COMPOSITION_MODULES, composition_names, get_composition
from toolgym.schema import DiffOnly, FieldEquals, RowAbsent, RowExists, Task

SHAPES = {"lookup", "write", "search_choose_write", "multi_step", "impossible", "context"}


@cache
def tasks_30(name: str) -> tuple[Task, ...]:
    return tuple(generate_composition_tasks(get_composition(name), BuildConfig(tasks_per_family=30)))


def digest(tasks: list[Task] | tuple[Task, ...]) -> str:
    return hashlib.sha256("\n".join(t.model_dump_json() for t in tasks).encode()).hexdigest()


# -- compositions and their environments ---------------------------------------------------------------

def test_compositions_are_defined_with_enough_families() -> None:
    names = composition_names()
    assert {"mail+drive", "mail+maps", "tracker+code_host"} <= set(names)
    families = [f for name in names for f in get_composition(name).task_families()]
    assert len(families) >= 4
    assert len({f.name for f in families}) == len(families), "family names are unique across compositions"
    for name in names:
        composition = get_composition(name)
        assert composition.name == name and len(composition.apps) >= 2
        assert len(composition.task_families()) >= 4, name


def test_families_are_plain_generators_and_the_kit_is_not_copied() -> None:
    """The apps' family style (a `generate(rng, worlds)` function per family, listed in FAMILIES), and no
    composition module with its own copy of a kit helper."""
    for name in composition_names():
        module = importlib.import_module(COMPOSITION_MODULES[name])
        assert get_composition(name).task_families() == list(module.FAMILIES)
        for family in module.FAMILIES:
            assert family.generate.__module__ == module.__name__, family.name
            assert list(inspect.signature(family.generate).parameters) == ["rng", "worlds"], family.name
    for source in sorted(Path(importlib.import_module("toolgym.envs.multi").__file__).parent.glob("*.py")):
        defined = {node.name for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
                   if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        assert sorted(defined & set(kit.__all__)) == [], source.name


@pytest.mark.parametrize("name", composition_names())
def test_composed_environment_joins_the_apps_without_tool_clashes(name: str) -> None:
    env = make_env(name)  # Environment raises on a tool name two apps define
    composition = get_composition(name)
    assert [a.name for a in env.apps] == list(composition.apps)
    assert len(env.tool_specs()) == sum(len(get_app(a).tools) for a in composition.apps)
    for app in composition.apps:
        assert get_app(app).policy.strip() in env.policy


def test_unknown_composition_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="unknown composition 'mail\\+nothing'; known compositions: mail\\+drive"):
        get_composition("mail+nothing")


# -- generated tasks ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", composition_names())
def test_every_task_replays_to_reward_one(name: str) -> None:
    tasks = tasks_30(name)
    by_family: dict[str, int] = defaultdict(int)
    for task in tasks:
        by_family[task.family] += 1
    assert set(by_family) == {f.name for f in get_composition(name).task_families()}
    assert all(count >= 25 for count in by_family.values()), by_family
    env = make_env(name)
    failed = []
    for task in tasks:
        outcome = replay_task(task, env)
        if not outcome.kept or outcome.verdict.reward != 1.0 or outcome.verdict.partial_score != 1.0:
            failed.append((task.id, outcome.reason))
    assert failed == []


@pytest.mark.parametrize("name", composition_names())
def test_tasks_are_well_formed(name: str) -> None:
    tasks = tasks_30(name)
    composition = get_composition(name)
    versions = "+".join(get_app(a).version for a in composition.apps)
    for task in tasks:
        assert task.env == name and task.env_version == versions and task.data_version == versions
        assert task.id.startswith(f"{name}/{task.family}/")
        assert task.data_id == "+".join(get_app(a).data_id for a in composition.apps)
        assert task.metadata["shape"] in SHAPES
        assert set(task.env_variables) == {"CURRENT_DATE", "LOGGED_IN_USER", "LOGGED_IN_NAME"}
        assert "2026-04-01" <= task.env_variables["CURRENT_DATE"] <= "2026-08-31"
        assert task.reference_solution and task.expected_answer
        assert 1 <= task.difficulty <= 3
        assert sum(isinstance(c, DiffOnly) for c in task.checks) == 1, "one diff_only over every app"
        for check in task.checks:
            if isinstance(check, RowExists | RowAbsent | FieldEquals):
                assert check.table.split(".", 1)[0] in composition.apps, check.table
            if isinstance(check, DiffOnly):
                assert all(e.table.split(".", 1)[0] in composition.apps for e in check.expected)
    shapes = {t.metadata["shape"] for t in tasks}
    assert "impossible" in shapes


@pytest.mark.parametrize("name", composition_names())
def test_every_app_a_task_changes_has_row_checks(name: str) -> None:
    """A write's verifier checks the rows of each app the gold solution changes, not only the diff."""
    env = make_env(name)
    writers = 0
    for task in tasks_30(name):
        replay_task(task, env)
        changed = {c.table.split(".", 1)[0] for c in env.diff()}
        checked = {c.table.split(".", 1)[0] for c in task.checks if isinstance(c, RowExists | FieldEquals)}
        assert changed <= checked, (task.id, changed, checked)
        writers += bool(changed)
    assert writers >= 60


@pytest.mark.parametrize("name", composition_names())
def test_each_family_uses_at_least_three_phrasings(name: str) -> None:
    prompts: dict[str, set[str]] = defaultdict(set)
    phrasings: dict[str, set[int]] = defaultdict(set)
    for task in tasks_30(name):
        prompts[task.family].add(task.prompt)
        phrasings[task.family].add(task.metadata["phrasing"])
    for family, seen in phrasings.items():
        assert len(seen) >= 3, family
        assert len(prompts[family]) == sum(1 for t in tasks_30(name) if t.family == family), "prompts are distinct"


def test_impossible_families_cover_several_reasons() -> None:
    reasons: dict[str, set[str]] = defaultdict(set)
    for name in composition_names():
        for task in tasks_30(name):
            if task.metadata["shape"] == "impossible":
                reasons[task.family].add(task.metadata["reason"])
    assert reasons["share_or_ask_impossible"] == {"external_sender", "view_only_file", "owner_not_in_contacts"}
    assert reasons["travel_plan_impossible"] == {"video_call", "cancelled_meeting"}
    assert {"ci_failing", "no_approval"} <= reasons["merge_and_close_impossible"]


# -- determinism -----------------------------------------------------------------------------------------

def test_same_seed_gives_identical_tasks_and_another_seed_does_not() -> None:
    name = "tracker+code_host"
    again = generate_composition_tasks(get_composition(name), BuildConfig(tasks_per_family=30))
    assert digest(again) == digest(tasks_30(name))
    other = generate_composition_tasks(get_composition(name), BuildConfig(tasks_per_family=30, seed=8))
    assert digest(other) != digest(tasks_30(name))


def test_generation_does_not_depend_on_hash_randomisation() -> None:
    """Another interpreter with another PYTHONHASHSEED builds the same composition tasks."""
    script = (
        "import hashlib\n"
        "from toolgym.dataset.build import BuildConfig, generate_composition_tasks\n"
        "from toolgym.envs.multi import get_composition\n"
        "tasks = generate_composition_tasks(get_composition('mail+drive'), BuildConfig(tasks_per_family=6))\n"
        "print(hashlib.sha256('\\n'.join(t.model_dump_json() for t in tasks).encode()).hexdigest())\n"
    )
    here = generate_composition_tasks(get_composition("mail+drive"), BuildConfig(tasks_per_family=6))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert result.stdout.strip() == digest(here)


# -- the dataset build ------------------------------------------------------------------------------------

def test_build_config_picks_compositions_whose_apps_are_all_built() -> None:
    assert BuildConfig().compositions == composition_names()
    assert BuildConfig(apps=["tracker", "code_host", "forum"]).compositions == ["tracker+code_host"]
    assert BuildConfig(apps=["mail", "forum"]).compositions == []
    assert BuildConfig(apps=["forum"], compositions=["mail+drive"]).compositions == ["mail+drive"]
    assert json.loads(json.dumps(BuildConfig().__dict__))["compositions"] == composition_names()


def test_build_adds_composition_tasks_after_the_apps_with_their_splits() -> None:
    config = BuildConfig(apps=["code_host", "tracker"], tasks_per_family=4)
    tasks = build_tasks(config)
    singles = build_tasks(BuildConfig(apps=["code_host", "tracker"], tasks_per_family=4, compositions=[]))
    assert tasks[:len(singles)] == singles, "single-app tasks come first, unchanged"
    assert singles == [*generate_app_tasks(get_app("code_host"), config), *generate_app_tasks(get_app("tracker"), config)]
    multi = tasks[len(singles):]
    assert multi and {t.env for t in multi} == {"tracker+code_host"}
    assert {t.split for t in multi} <= {"train", "heldout_tasks"}
    assert leakage(tasks) == []


def test_a_composition_with_a_heldout_app_is_held_out_as_a_whole() -> None:
    tasks = generate_composition_tasks(get_composition("mail+maps"), BuildConfig(tasks_per_family=3))
    assert tasks and {t.split for t in tasks} == {"heldout_env"}
    opened = generate_composition_tasks(get_composition("mail+maps"), BuildConfig(tasks_per_family=3, heldout_envs=[]))
    assert [t.prompt for t in opened] == [t.prompt for t in tasks]
    assert "heldout_env" not in {t.split for t in opened}
    tracker = generate_composition_tasks(get_composition("tracker+code_host"),
                                         BuildConfig(tasks_per_family=3, heldout_envs=["code_host"]))
    assert {t.split for t in tracker} == {"heldout_env"}
