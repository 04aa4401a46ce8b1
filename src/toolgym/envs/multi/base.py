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
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from toolgym.envs.app import TaskDraft, TaskShape, World
from toolgym.envs.environment import Environment
from toolgym.envs.registry import get_app, make_env
from toolgym.schema import AnswerContains, Check, DiffOnly, ToolCall, ToolNotCalled

WINDOW_START = dt.date(2026, 4, 1)  # the CURRENT_DATE range every app's tasks use
WINDOW_END = dt.date(2026, 8, 31)
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


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
    description: str
    families: Callable[[], list[MultiTaskFamily]]

    @property
    def name(self) -> str:
        """The environment name: what `make_env` takes and what a task's `env` says ('mail+drive')."""
        return "+".join(self.apps)

    def worlds(self) -> Worlds:
        return Worlds(self.name, {app: get_app(app).world() for app in self.apps})

    def task_families(self) -> list[MultiTaskFamily]:
        return self.families()


def guarded(generate: Callable[[random.Random, Worlds], TaskDraft]) -> Generator:
    """Turn `Unusable` into None, so generators can bail out from any depth."""

    def wrapper(rng: random.Random, worlds: Worlds) -> TaskDraft | None:
        try:
            return generate(rng, worlds)
        except Unusable:
            return None

    wrapper.__name__ = generate.__name__
    wrapper.__doc__ = generate.__doc__
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

def call(tool_name: str, /, **arguments: Any) -> ToolCall:
    """A gold call; arguments left as None are dropped (the tool's default applies)."""
    return ToolCall(name=tool_name, arguments={k: v for k, v in arguments.items() if v is not None})


def env_vars(username: str, name: str, today: dt.date) -> dict[str, str]:
    return {"CURRENT_DATE": today.isoformat(), "LOGGED_IN_USER": username, "LOGGED_IN_NAME": name}


def random_day(rng: random.Random, start: dt.date = WINDOW_START, end: dt.date = WINDOW_END) -> dt.date:
    return start + dt.timedelta(days=rng.randint(0, (end - start).days))


def phrase(rng: random.Random, phrasings: tuple[str, ...], **slots: Any) -> tuple[int, str]:
    """One phrasing, filled; its index goes into the task metadata (tests count distinct phrasings)."""
    index = rng.randrange(len(phrasings))
    return index, phrasings[index].format(**slots)


def choice(rng: random.Random, items: list[Any]) -> Any:
    """rng.choice that makes an empty pool an unusable draw."""
    if not items:
        raise Unusable("nothing to choose from")
    return items[rng.randrange(len(items))]


def sample(rng: random.Random, items: list[Any], count: int) -> Iterator[Any]:
    """Up to `count` distinct items in random order (candidates to try one after another)."""
    yield from rng.sample(items, min(count, len(items)))


def human_date(day: dt.date) -> str:
    """2026-05-03 -> 'Sunday, May 3': how people write dates in requests."""
    return f"{WEEKDAY_NAMES[day.weekday()]}, {day:%B} {day.day}"


def day_phrases(today: dt.date, day: dt.date) -> list[tuple[str, str]]:
    """Ways to say `day` relative to `today` (prompt wording, tool argument) that resolve to it exactly."""
    options: list[tuple[str, str]] = [(f"on {day:%B} {day.day}", day.isoformat())]
    delta = (day - today).days
    if delta == 0:
        options.append(("today", "today"))
    elif delta == 1:
        options.append(("tomorrow", "tomorrow"))
    name = WEEKDAY_NAMES[day.weekday()]
    if 1 <= delta <= 7:
        options.append((f"next {name}", f"next {name}"))
    if 0 <= delta <= 6 and delta != 1:
        options.append((f"this {name}", f"this {name}"))
    return options


def no_change(weight: float = 1.0) -> DiffOnly:
    """No app of the composition changed at all."""
    return DiffOnly(expected=[], weight=weight, label="no app changed")


def impossible_checks(write_tools: list[str]) -> list[Check]:
    """The request cannot be done: no app changes, none of its writes attempted, an 'I cannot' reply."""
    return [
        DiffOnly(expected=[], weight=2.0, label="no app changed"),
        *(ToolNotCalled(name=name, weight=1.0, label=f"{name} not called") for name in write_tools),
        AnswerContains(values=["cannot"], weight=1.0, label="says it cannot"),
    ]
