"""The pieces every composition shares: what a composition and its task families are, and the scratch
environment generators read the seed through.

A generator works like an agent would: it calls the composed apps' own tools (in a fresh copy of the
seed, with the task's CURRENT_DATE and LOGGED_IN_USER) to see what a tool will answer, so a task's
gold calls and expected values follow exactly the semantics replay will have. It can also rehearse
its gold calls there to learn what a write returns (a new event id, a new ticket key). A draw whose
answer would be ambiguous, or whose gold calls fail, is rejected (`Unusable`), never guessed.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from toolgym.envs import kit
from toolgym.envs.app import TaskDraft, TaskShape, World
from toolgym.envs.environment import Environment
from toolgym.envs.registry import get_app, make_env
from toolgym.schema import Check, DiffOnly, ToolCall


class Unusable(Exception):
    """This draw cannot make a clear task (a tie, a failed lookup, a gold call that errors): draw again."""


@dataclass
class Worlds:
    """The read-only seeds of a composition's apps, by app name, for generators to pick entities from."""

    env_name: str
    worlds: dict[str, World]

    def __getitem__(self, app: str) -> World:
        return self.worlds[app]

    def scratch(self, env_variables: dict[str, str]) -> Scratch:
        return Scratch(self.env_name, env_variables)


Generator = Callable[[random.Random, Worlds], TaskDraft | None]


@dataclass
class MultiTaskFamily:
    """A kind of multi-app task: `generate(rng, worlds)` returns a draft, or None when the draw is unusable."""

    name: str
    shape: TaskShape
    generate: Generator
    weight: float = 1.0


@dataclass(frozen=True)
class Composition:
    """Apps joined over the shared population, with the task families that need all of them."""

    apps: tuple[str, ...]
    families: tuple[MultiTaskFamily, ...]

    @property
    def name(self) -> str:
        """The environment name: what `make_env` takes and what a task's `env` says ('mail+drive')."""
        return "+".join(self.apps)

    def worlds(self) -> Worlds:
        return Worlds(self.name, {app: get_app(app).world() for app in self.apps})

    def task_families(self) -> list[MultiTaskFamily]:
        return list(self.families)


def guarded(generate: Callable[[random.Random, Worlds], TaskDraft]) -> Generator:
    """Turn `Unusable` into None, so generators can bail out from any depth."""

    @functools.wraps(generate)
    def wrapper(rng: random.Random, worlds: Worlds) -> TaskDraft | None:
        try:
            return generate(rng, worlds)
        except Unusable:
            return None

    return wrapper


@dataclass
class Scratch:
    """A fresh copy of the composed seed, as the task's user on the task's day: read, and rehearse writes."""

    env_name: str
    env_variables: dict[str, str]
    env: Environment = field(init=False)

    def __post_init__(self) -> None:
        self.env = make_env(self.env_name)
        self.env.reset(self.env_variables)

    def __call__(self, tool_name: str, /, **arguments: Any) -> Any:
        """The parsed result of a tool call; a tool error makes the draw unusable."""
        result = self.env.call_tool(tool_name, arguments)
        if result.is_error:
            raise Unusable(f"{tool_name}: {result.content}")
        return json.loads(result.content)

    def fails(self, tool_name: str, /, **arguments: Any) -> str | None:
        """The error text if the call fails, else None (the call's change, if any, stays in the scratch)."""
        result = self.env.call_tool(tool_name, arguments)
        return result.content if result.is_error else None

    def rehearse(self, calls: list[ToolCall]) -> list[Any]:
        """Run the gold calls in order; all must succeed. Returns their parsed results."""
        return [self(c.name, **c.arguments) for c in calls]

    def close(self) -> None:
        self.env.close()


# -- small helpers the families share ----------------------------------------------------------------------

def choice(rng: random.Random, items: list[Any]) -> Any:
    """rng.choice that makes an empty pool an unusable draw."""
    if not items:
        raise Unusable("nothing to choose from")
    return items[rng.randrange(len(items))]


def sample(rng: random.Random, items: list[Any], count: int) -> Iterator[Any]:
    """Up to `count` distinct items in random order (candidates to try one after another)."""
    yield from rng.sample(items, min(count, len(items)))


def day_phrases(today: dt.date, day: dt.date) -> list[tuple[str, str]]:
    """Ways to say `day` relative to `today` (prompt wording, tool argument) that resolve to it exactly."""
    options: list[tuple[str, str]] = [(f"on {kit.human_date(day)}", day.isoformat())]
    delta = (day - today).days
    if delta == 0:
        options.append(("today", "today"))
    elif delta == 1:
        options.append(("tomorrow", "tomorrow"))
    name = kit.WEEKDAY_NAMES[day.weekday()]
    if 1 <= delta <= 7:
        options.append((f"next {name}", f"next {name}"))
    if 0 <= delta <= 6 and delta != 1:
        options.append((f"this {name}", f"this {name}"))
    return options


NO_APP_CHANGED = "no app changed"  # the unchanged-diff label of composition tasks


def no_change(weight: float = 1.0) -> DiffOnly:
    """No app of the composition changed at all."""
    return kit.diff_only([], weight=weight, label=NO_APP_CHANGED)


def refusal_checks(write_tools: list[str]) -> list[Check]:
    """The kit's impossible-task checks, worded as composition tasks word them."""
    return kit.impossible_checks(write_tools, reply_label=kit.SAYS_IT_CANNOT, unchanged_label=NO_APP_CHANGED)


def draft(prompt: str, env: dict[str, str], gold: list[ToolCall], answer: str, checks: list[Check],
          difficulty: int, index: int, **metadata: Any) -> TaskDraft:
    """A composition task from its parts in one call; `index` is the phrasing drawn, first in the metadata."""
    return TaskDraft(prompt=prompt, env_variables=env, reference_solution=gold, expected_answer=answer,
                     checks=checks, difficulty=difficulty, metadata={"phrasing": index, **metadata})


def refusal(env: dict[str, str], prompt: str, index: int, kind: str, reason: str, gold: list[ToolCall],
            write_tools: list[str], extra: dict[str, Any] | None = None) -> TaskDraft:
    """An impossible composition task: the gold calls find out why, and the reply says 'I cannot' and why."""
    return draft(prompt, env, gold, f"I cannot do that: {reason}.", refusal_checks(write_tools), 2, index,
                 reason=kind, **(extra or {}))
