"""The contract every registered app must keep: the package layout and the kit used once, seed and schema,
documented tools that never crash, a short policy, task families over every shape whose tasks replay, are
deterministic, well formed and graded so that wrong work loses credit. App-specific rules and hand-computed
scores live in tests/test_app_<name>.py."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from app_helpers import (
    CANNOT_RULE,
    SHAPES,
    TASK_DATES,
    TASKS_PER_FAMILY,
    AppKit,
    declared_tools,
    generated_tasks,
)
from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.dataset.replay import replay_task, user_tools
from toolgym.envs import Environment, app_names, get_app, kit, make_env
from toolgym.envs.database import user_tables
from toolgym.envs.people import person, population
from toolgym.schema import AnswerContains, DiffOnly, ToolNotCalled
from toolgym.verify import verify_task

APPS = app_names()
POPULATION_SUBSET = {"forum"}  # apps whose users are only some of the shared people
PROMPTS_SHARED_ACROSS_FAMILIES = {"booking"}  # e.g. a hotel_facts prompt that another lookup family also draws
APPS_DIR = Path(__file__).parents[1] / "src/toolgym/envs/apps"
REQUIRED_FILES = {"__init__.py", "schema.py", "data.py", "tools.py", "tasks.py", "policy.md"}
OPTIONAL_MODULE = re.compile(r"^(content|rules|task_common|tool_common|user_actions|tasks_[a-z]+|tools_[a-z]+)\.py$")
DATA_MODULES = {"content.py"}  # word lists and corpora: as long as the data they hold
MAX_MODULE_LINES = 500
# kit helpers under the names apps once gave their private copies
KIT_SYNONYMS = {"gold_call", "long_date", "unique_top", "unique_latest", "pick_today", "random_today", "any_today",
                "next_rowid", "dollars", "article", "no_change", "stars_words", "day_between"}

pytestmark = pytest.mark.parametrize("name", APPS)


# ---------------------------------------------------------------- layout: one convention, the kit used once


def test_package_follows_the_layout(name: str) -> None:
    """The files docs/adding-an-app.md names, and no module longer than MAX_MODULE_LINES but data."""
    files = {p.name for p in (APPS_DIR / name).iterdir() if p.is_file()}
    assert files >= REQUIRED_FILES
    assert sorted(f for f in files - REQUIRED_FILES if not OPTIONAL_MODULE.match(f)) == []
    for source in (APPS_DIR / name).glob("*.py"):
        if source.name not in DATA_MODULES:
            assert len(source.read_text(encoding="utf-8").splitlines()) <= MAX_MODULE_LINES, source.name


def test_app_is_packaged_and_its_families_are_plain_generators(name: str) -> None:
    """One family style: FAMILIES in tasks.py lists `generate(rng, world)` functions of the app's tasks*.py
    (written out, or built from a table of specs), never generators bound to an app instance."""
    app = get_app(name)
    assert isinstance(app, kit.PackagedApp)
    assert app.task_families() == list(importlib.import_module(f"toolgym.envs.apps.{name}.tasks").FAMILIES)
    for family in app.task_families():
        generate = family.generate
        assert generate.__module__.startswith(f"toolgym.envs.apps.{name}.tasks"), family.name
        assert list(inspect.signature(generate).parameters) == ["rng", "world"], family.name


def test_no_module_defines_its_own_copy_of_a_kit_helper(name: str) -> None:
    """Shared helpers live once, in toolgym.envs.kit: no app function or class is named like one."""
    reserved = set(kit.__all__) | KIT_SYNONYMS
    for source in sorted((APPS_DIR / name).glob("*.py")):
        defined = {node.name for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
                   if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        assert sorted(d for d in defined if d.lstrip("_") in reserved) == [], source.name


# ---------------------------------------------------------------- schema and seed


def test_schema_has_six_or_more_filled_rowid_tables_and_stays_small(name: str) -> None:
    app = get_app(name)
    db = app.world().db
    tables = user_tables(db)
    assert len(tables) >= 6
    for table in tables:
        assert db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0] > 0, table
    assert "WITHOUT ROWID" not in app.schema.upper()  # change tracking keys rows by rowid
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert len(app.snapshot().data) < 2_000_000


def test_users_are_the_shared_population(name: str) -> None:
    names = [r["username"] for r in get_app(name).world().query("SELECT username FROM users ORDER BY id")]
    everyone = [p.username for p in population()]
    assert names == [u for u in everyone if u in set(names)]  # members of the population, in its order
    if name not in POPULATION_SUBSET:
        assert names == everyone


# ---------------------------------------------------------------- tools and policy


def test_tools_are_documented(name: str) -> None:
    app = get_app(name)
    assert len(app.tools) >= 8
    for t in app.tools:
        assert t.description, t.name
        for param in t.params:
            assert param.description, f"{t.name}.{param.name}"


def test_registered_tools_are_exactly_the_declared_ones(name: str) -> None:
    """APP.tools lists every @tool function of the app's package: none forgotten, none from elsewhere."""
    declared = [declared_tools(source) for source in sorted((APPS_DIR / name).glob("*.py"))]
    assert {t.name for t in get_app(name).tools} == set().union(*declared)
    assert sum(len(d) for d in declared) == len(get_app(name).tools)


def test_tool_names_do_not_clash_and_every_pair_of_apps_joins(name: str) -> None:
    app = get_app(name)
    mine = {t.name for t in app.tools}
    for other_name in APPS:
        if other_name == name:
            continue
        other = get_app(other_name)
        clash = mine & {t.name for t in other.tools}
        assert not clash, f"{name} and {other_name} both define {sorted(clash)}"
        joined = Environment([app, other])  # raises on a clash the names above missed
        assert len(joined.tool_specs("agent")) + len(joined.tool_specs("user")) == len(app.tools) + len(other.tools)


def test_every_tool_answers_an_empty_call_without_crashing(name: str) -> None:
    """Called by its owner with no arguments, a tool answers or refuses readably, naming what is missing."""
    app = get_app(name)
    task = generated_tasks(name)[0]  # a user and a day that have data in this app
    env = make_env(name)
    for t in app.tools:
        env.reset(task.env_variables)
        result = env.call_tool(t.name, {}, caller=t.owner)  # an EnvError (a crashed tool) fails the test
        required = t.spec.parameters.get("required", [])
        if result.is_error:
            assert result.content.startswith("Error: ") and len(result.content) > 10, (t.name, result.content)
            assert all(f"'{r}'" in result.content for r in required), (t.name, result.content)
        else:
            assert not required, t.name
            json.loads(result.content)


def test_policy_is_short_and_states_the_cannot_convention(name: str) -> None:
    policy = get_app(name).policy
    assert "I cannot" in policy and CANNOT_RULE in policy
    assert len([line for line in policy.splitlines() if line.strip()]) >= 5
    assert len(policy.strip().splitlines()) <= 12
    assert policy == (APPS_DIR / name / "policy.md").read_text(encoding="utf-8")


def test_families_cover_every_shape(name: str) -> None:
    families = get_app(name).task_families()
    assert len(families) >= 7
    assert {f.shape for f in families} == SHAPES
    assert len({f.name for f in families}) == len(families)


# ---------------------------------------------------------------- generated tasks


def test_every_task_replays_to_reward_one(name: str) -> None:
    tasks = generated_tasks(name)
    counts = Counter(t.family for t in tasks)
    assert counts == {f.name: TASKS_PER_FAMILY for f in get_app(name).task_families()}
    env = make_env(name)
    failures = []
    for task in tasks:
        outcome = replay_task(task, env)
        if not outcome.kept or outcome.verdict.reward != 1.0:
            failures.append(f"{task.id}: {outcome.reason}")
    assert failures == []


def test_generation_is_deterministic(name: str) -> None:
    again = generate_app_tasks(get_app(name), BuildConfig(tasks_per_family=TASKS_PER_FAMILY))
    assert [t.model_dump() for t in again] == [t.model_dump() for t in generated_tasks(name)]


def test_tasks_carry_runtime_context_and_the_required_checks(name: str) -> None:
    tool_names = {t.name for t in get_app(name).tools}
    for task in generated_tasks(name):
        variables = task.env_variables
        assert set(variables) == {"CURRENT_DATE", "LOGGED_IN_USER", "LOGGED_IN_NAME"}, task.id
        assert TASK_DATES[0] <= variables["CURRENT_DATE"] <= TASK_DATES[1], task.id
        assert variables["LOGGED_IN_NAME"] == person(variables["LOGGED_IN_USER"]).name, task.id
        assert task.expected_answer and task.reference_solution and task.checks, task.id
        assert 1 <= task.difficulty <= 3, task.id
        assert task.metadata["shape"] in SHAPES, task.id
        diffs = [c for c in task.checks if isinstance(c, DiffOnly)]
        assert len(diffs) == 1, task.id
        if task.metadata["shape"] == "impossible":
            assert diffs[0].expected == [], task.id
            forbidden = [c for c in task.checks if isinstance(c, ToolNotCalled)]
            assert forbidden and all(c.name in tool_names for c in forbidden), task.id
            assert not {c.name for c in forbidden} & {c.name for c in task.reference_solution}, task.id
            assert any(isinstance(c, AnswerContains) and c.values == ["cannot"] for c in task.checks), task.id
            assert task.expected_answer.startswith("I cannot"), task.id
        elif diffs[0].expected == []:  # a lookup: the answer is what gets graded
            assert any(isinstance(c, AnswerContains) for c in task.checks), task.id
        else:  # a write: graded on the rows as well as on the diff
            assert len(task.checks) >= 2, task.id


def test_each_family_uses_three_or_more_phrasings(name: str) -> None:
    tasks = generated_tasks(name)
    phrasings: dict[str, set[str]] = defaultdict(set)
    openings: dict[str, set[str]] = defaultdict(set)
    prompts: dict[str, set[str]] = defaultdict(set)
    for task in tasks:
        phrasings[task.family].add(str(task.metadata["phrasing"]))
        openings[task.family].add(" ".join(task.prompt.split()[:2]))
        prompts[task.family].add(task.prompt)
    for family in get_app(name).task_families():
        assert len(phrasings[family.name]) >= 3, family.name
        assert len(openings[family.name]) >= 3, family.name
        assert len(prompts[family.name]) == TASKS_PER_FAMILY, family.name  # no two draws ask the same thing
    if name not in PROMPTS_SHARED_ACROSS_FAMILIES:
        assert len({t.prompt for t in tasks}) == len(tasks)


def test_answers_are_grounded_in_what_the_reference_calls_showed(name: str) -> None:
    """Every value an answer must contain appears in the tool outputs the gold solution saw."""
    env = make_env(name)
    by_user = user_tools(env)
    for task in generated_tasks(name):
        env.reset(task.env_variables)
        seen = " ".join(env.call_tool(c.name, c.arguments, caller="user" if c.name in by_user else "agent").content
                        for c in task.reference_solution).casefold()
        for check in task.checks:
            if isinstance(check, AnswerContains):
                for value in check.values:
                    assert value == "cannot" or value.casefold() in seen, (task.id, value)


# ---------------------------------------------------------------- grading: wrong work loses credit


def test_skipping_the_writes_or_the_refusal_loses_credit(name: str) -> None:
    """A write task left undone fails its diff check; an impossible task answered 'done' fails its answer."""
    kit = AppKit(name)
    env = make_env(name)
    for task in generated_tasks(name):
        diff_check = next(c for c in task.checks if isinstance(c, DiffOnly))
        if diff_check.expected:
            verdict = kit.verdict(task, [], task.expected_answer)
            assert verdict.reward == 0.0 and verdict.partial_score < 1.0, task.id
            assert not next(c for c in verdict.checks if c.kind == "diff_only").passed, task.id
        elif task.metadata["shape"] == "impossible":
            env.reset(task.env_variables)
            verdict = verify_task(task, env, "Done, it is all taken care of.")
            assert verdict.reward == 0.0 and verdict.partial_score < 1.0, task.id
