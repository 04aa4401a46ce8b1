"""Helpers for the mail task generators: mailbox owners, read-only tool calls on the seed, relative
date phrases that resolve to a chosen day, and the text pools that prompts draw from.

Generators read the seed through the app's own tools (on the read-only seed connection), so a
task's expected answer is computed with exactly the semantics the agent's tool calls will have.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Any

from toolgym.envs import World, kit, resolve_date
from toolgym.envs.apps.mail.content import AUTOMATED, SPAM, TOPICS
from toolgym.envs.kit.grouped import pick_group
from toolgym.envs.kit.task_user import TaskUser
from toolgym.envs.registry import get_app

TEXTS = kit.module_texts(__file__)

AUTOMATED_ADDRESSES = frozenset(a[1] for a in AUTOMATED) | frozenset(s[1] for s in SPAM)


@dataclass(frozen=True)
class Owner(TaskUser):
    """A mailbox owner a task runs as."""

    email: str


def owners(world: World) -> list[Owner]:
    rows = world.query("SELECT username, name, email FROM users WHERE has_mailbox=1 ORDER BY username")
    return [Owner(r["username"], r["name"], r["email"]) for r in rows]


class Reader(kit.SeedReader):
    """The mail tools run on the read-only seed as `owner` on `today` (tools that write would fail)."""

    def __init__(self, world: World, owner: Owner, today: dt.date) -> None:
        super().__init__(get_app("mail"), world, owner.env(today))
        self.owner = owner
        self.today = today


def setup(rng: random.Random, world: World) -> Reader:
    """A mailbox owner and a CURRENT_DATE drawn for a task, and the tools as they see the seed."""
    return Reader(world, rng.choice(owners(world)), kit.random_day(rng))


def folder_id(world: World, owner: Owner, name: str) -> int:
    row = world.one("SELECT id FROM folders WHERE owner=? AND name=?", (owner.username, name))
    if row is None:
        raise KeyError(f"{owner.username} has no folder {name!r}")
    return int(row["id"])


def is_person(address: str) -> bool:
    return address.lower() not in AUTOMATED_ADDRESSES


@dataclass(frozen=True)
class When:
    """A relative day: how the prompt says it, what a tool is given, and the CURRENT_DATE that makes it `day`."""

    noun: str
    adverb: str
    argument: str
    today: dt.date
    day: dt.date


def when_options(day: dt.date, allow_today: bool = True) -> list[When]:
    """Every (phrase, CURRENT_DATE in the task window) that resolves to `day`."""
    options: list[When] = []

    def add(noun: str, adverb: str, argument: str, today: dt.date) -> None:
        if kit.FIRST_DAY <= today <= kit.LAST_DAY and resolve_date(argument, today) == day:
            options.append(When(noun, adverb, argument, today, day))

    if allow_today:
        add("today", "today", "today", day)
    add("tomorrow", "tomorrow", "tomorrow", day - dt.timedelta(days=1))
    add("the day after tomorrow", "the day after tomorrow", "day after tomorrow", day - dt.timedelta(days=2))
    name = kit.WEEKDAY_NAMES[day.weekday()]
    for back in range(1, 7):
        add(name, f"on {name}", name, day - dt.timedelta(days=back))
    for back in range(1, 8):
        today = day - dt.timedelta(days=back)
        if today.weekday() >= day.weekday():  # "next X" only when X this week has already passed
            add(f"next {name}", f"next {name}", f"next {name}", today)
    return options


def pick_when(rng: random.Random, day: dt.date, allow_today: bool = True) -> When | None:
    """A phrase for `day`: its noun drawn evenly, then one of the CURRENT_DATEs it works from."""
    group = pick_group(rng, when_options(day, allow_today), lambda o: o.noun)
    return rng.choice(group) if group else None


def pick_listed_day(rng: random.Random, world: World, sql: str, params: tuple[Any, ...]) -> When | None:
    """One of the days `sql` lists (its `day` column), said as a phrase that resolves to it; None when it
    lists none or no phrase fits the window."""
    days = [r["day"] for r in world.query(sql, params)]
    if not days:
        return None
    return pick_when(rng, dt.date.fromisoformat(rng.choice(days)))


def overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


SEND_TEXTS: tuple[tuple[str, str], ...] = TEXTS["SEND_TEXTS"]

REPLY_TEXTS: tuple[str, ...] = TEXTS["REPLY_TEXTS"]

MEETING_TITLES: tuple[str, ...] = TEXTS["MEETING_TITLES"]

MEETING_STARTS: tuple[str, ...] = ("09:00", "09:30", "10:00", "11:00", "13:30", "14:00", "15:00", "16:00")

OUTSIDE_ADDRESSES: tuple[str, ...] = TEXTS["OUTSIDE_ADDRESSES"]


KEYWORDS = tuple(topic.keyword for topic in TOPICS)
