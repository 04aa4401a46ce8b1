"""Shared scaffolding for the app tests: generated tasks, seed queries, fresh environments, tool calls, scoring.

Every tests/test_app_<name>.py and tests/test_app_contract.py use these, so the per-app files keep only
what is specific to their app, and all of them share one (cached) task generation per app and process.
"""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path
from typing import Any

from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs import Environment, get_app, make_env
from toolgym.envs.app import App
from toolgym.envs.people import person
from toolgym.schema import DiffOnly, Task, ToolNotCalled, Verdict
from toolgym.verify import verify_task

SHAPES = {"lookup", "write", "search_choose_write", "multi_step", "impossible", "context"}
TASKS_PER_FAMILY = 30
TASK_DATES = ("2026-04-01", "2026-08-31")  # every generated task's CURRENT_DATE lies in this window
CANNOT_RULE = "If a request cannot be done, change nothing and reply starting with 'I cannot' and the reason."


@cache
def generated_tasks(app_name: str, per_family: int = TASKS_PER_FAMILY) -> tuple[Task, ...]:
    """One generation per app and process: the contract and the app's own tests share it."""
    return tuple(generate_app_tasks(get_app(app_name), BuildConfig(tasks_per_family=per_family)))


def declared_tools(source: Path) -> set[str]:
    """Names of the @tool functions in a module, read without importing it (its own name or `name=`)."""
    names = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Name) and target.id == "tool":
                renamed = [k.value.value for k in getattr(decorator, "keywords", [])
                           if k.arg == "name" and isinstance(k.value, ast.Constant)]
                names.add(renamed[0] if renamed else node.name)
    return names


def call(env: Environment, tool_name: str, /, *, caller: str = "agent", **arguments: object) -> Any:
    """A tool call that must succeed; returns its parsed JSON result."""
    result = env.call_tool(tool_name, arguments, caller=caller)
    assert not result.is_error, result.content
    return json.loads(result.content)


def error(env: Environment, tool_name: str, /, *, caller: str = "agent", **arguments: object) -> str:
    """A tool call that must be refused; returns the error text."""
    result = env.call_tool(tool_name, arguments, caller=caller)
    assert result.is_error, f"{tool_name} should have failed: {result.content}"
    return result.content


def assert_small_json(env: Environment, calls: list[tuple[str, dict[str, Any]]], limit: int,
                      caller: str = "agent") -> None:
    """Listing tools answer with valid JSON shorter than `limit` characters, so a context window holds them."""
    for name, arguments in calls:
        result = env.call_tool(name, arguments, caller=caller)
        assert not result.is_error and len(result.content) < limit, (name, len(result.content))
        json.loads(result.content)


def assert_reference_writes_match_the_shape(tasks: tuple[Task, ...] | list[Task], write_tools: set[str]) -> None:
    """Gold solutions of lookups and impossible tasks call no write tool; write tasks call one; an impossible
    task forbids a write tool."""
    for task in tasks:
        expected = next(c for c in task.checks if isinstance(c, DiffOnly)).expected
        writes = {c.name for c in task.reference_solution} & write_tools
        if task.metadata["shape"] == "impossible":
            assert not writes, task.id
            assert any(isinstance(c, ToolNotCalled) and c.name in write_tools for c in task.checks), task.id
        elif expected == []:
            assert not writes, task.id
        else:
            assert writes, task.id


def failed_kinds(verdict: Verdict) -> set[str]:
    return {c.kind for c in verdict.checks if not c.passed}


def failed_labels(verdict: Verdict) -> set[str]:
    return {c.label for c in verdict.checks if not c.passed}


class AppKit:
    """One app's test helpers, so a test module names its app (and its usual 'today') once."""

    def __init__(self, name: str, today: str = "2026-05-04", with_name: bool = False) -> None:
        self.name = name
        self.today = today
        self.with_name = with_name  # also set LOGGED_IN_NAME (from the shared population) in fresh_env

    @property
    def app(self) -> App:
        return get_app(self.name)

    def tasks_30(self) -> tuple[Task, ...]:
        return generated_tasks(self.name)

    def tasks_of(self, family: str) -> list[Task]:
        return [t for t in self.tasks_30() if t.family == family]

    def first_task(self, family: str) -> Task:
        return next(t for t in self.tasks_30() if t.family == family)

    def seed_one(self, sql: str, params: tuple[Any, ...] = ()) -> dict[str, Any]:
        row = self.app.world().one(sql, params)
        assert row is not None, sql
        return row

    def seed_all(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return self.app.world().query(sql, params)

    def fresh_env(self, user: str | None, today: str | None = None) -> Environment:
        """A reset environment of this app on `today`, logged in as `user` (or as nobody)."""
        env = make_env(self.name)
        variables = {"CURRENT_DATE": today or self.today}
        if user:
            variables["LOGGED_IN_USER"] = user
            if self.with_name:
                variables["LOGGED_IN_NAME"] = person(user).name
        env.reset(variables)
        return env

    def verdict(self, task: Task, calls: list[tuple[str, dict[str, Any]]], answer: str | None = None) -> Verdict:
        """Verify `task` after running `calls` (each must succeed) in a fresh episode."""
        env = make_env(self.name)
        env.reset(task.env_variables)
        for name, arguments in calls:
            result = env.call_tool(name, arguments)
            assert not result.is_error, result.content
        return verify_task(task, env, answer)

    def run(self, task: Task, calls: list[tuple[str, dict[str, Any]]],
            answer: str | None) -> tuple[float, set[str]]:
        """The partial score after `calls` and the kinds of the checks that failed."""
        verdict = self.verdict(task, calls, answer)
        return verdict.partial_score, failed_kinds(verdict)

    def score(self, task: Task, calls: list[tuple[str, dict[str, Any]]]) -> tuple[float, float, set[str]]:
        """Reward, partial score and failed check labels after `calls`, answering the expected answer."""
        verdict = self.verdict(task, calls, task.expected_answer)
        return verdict.reward, verdict.partial_score, failed_labels(verdict)
