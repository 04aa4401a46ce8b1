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
from toolgym.envs.registry import get_app

AUTOMATED_ADDRESSES = frozenset(a[1] for a in AUTOMATED) | frozenset(s[1] for s in SPAM)


@dataclass(frozen=True)
class Owner:
    username: str
    name: str
    email: str

    def env(self, today: dt.date) -> dict[str, str]:
        return kit.env_vars(self.username, self.name, today)


def owners(world: World) -> list[Owner]:
    rows = world.query("SELECT username, name, email FROM users WHERE has_mailbox=1 ORDER BY username")
    return [Owner(r["username"], r["name"], r["email"]) for r in rows]


class Reader(kit.SeedReader):
    """The mail tools run on the read-only seed as `owner` on `today` (tools that write would fail)."""

    def __init__(self, world: World, owner: Owner, today: dt.date) -> None:
        super().__init__(get_app("mail"), world, owner.env(today))


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
    options = when_options(day, allow_today)
    if not options:
        return None
    nouns = sorted({o.noun for o in options})
    noun = rng.choice(nouns)
    return rng.choice([o for o in options if o.noun == noun])


def overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


SEND_TEXTS: tuple[tuple[str, str], ...] = (
    ("Lunch on Thursday?", "Are you free for lunch on Thursday around noon?"),
    ("Slides for Monday", "Could you send me the slides before Monday's review?"),
    ("Quick question about the report", "Do you have five minutes today to go over the report figures?"),
    ("Thank you!", "Thanks again for your help with the customer demo yesterday."),
    ("Running late", "I'm running about 15 minutes late for our meeting, sorry!"),
    ("Updated timeline", "I've moved the deadline to the end of the month; let me know if that works."),
    ("New analyst", "I'd like to introduce our new analyst, who joins the project next week."),
    ("Coffee next week?", "Would you like to grab coffee next week to catch up?"),
    ("Draft ready", "The draft is in the team folder; please take a look when you have a moment."),
    ("Out on Friday", "I'll be out of office on Friday; please reach out to my manager if anything is urgent."),
    ("Project kickoff", "We're kicking off the new project on Monday at 10am. Hope you can join."),
    ("Feedback request", "Could you share your feedback on the proposal by Wednesday?"),
    ("Contract signed", "Good news: the contract was signed this morning."),
    ("Welcome aboard", "Welcome to the team! Let me know if you need anything during your first week."),
    ("Schedule change", "Our weekly sync moves to Tuesdays at 3pm starting next week."),
    ("Receipts uploaded", "I've uploaded my receipts from the trip; let me know if anything is missing."),
    ("Happy birthday!", "Happy birthday! Hope you have a great day."),
    ("Call notes", "Notes from today's call: the client wants a revised quote by Friday."),
    ("Survey closes tomorrow", "Just a reminder that the team survey closes tomorrow."),
    ("Team photo", "The team photo is on Thursday at 2pm in the lobby."),
)

REPLY_TEXTS: tuple[str, ...] = (
    "Thanks, that works for me.",
    "I'll review it today and get back to you.",
    "Could we push this to next week?",
    "Sounds good, count me in.",
    "Thanks for the update, I'll share it with the team.",
    "Let me check with my manager and come back to you tomorrow.",
    "Great, I'll send the details by Friday.",
    "Can you resend the latest version?",
    "Got it, thank you!",
    "I'm out this week; let's pick this up on Monday.",
    "Yes, please go ahead.",
    "I'd prefer the afternoon slot if possible.",
    "Agreed. Let's finalize it at our next sync.",
    "Thanks! I've added it to my calendar.",
)

MEETING_TITLES: tuple[str, ...] = (
    "Project kickoff", "Quarterly planning", "Design sync", "Contract review", "Hiring debrief",
    "Marketing brainstorm", "Customer escalation", "Budget walkthrough", "Onboarding check-in", "Launch retro",
    "Vendor evaluation", "Roadmap deep dive", "Sales pipeline sync", "Data review", "Team catch-up",
    "Mentoring session",
)

MEETING_STARTS: tuple[str, ...] = ("09:00", "09:30", "10:00", "11:00", "13:30", "14:00", "15:00", "16:00")

OUTSIDE_ADDRESSES: tuple[str, ...] = (
    "alex.rivera@northwindtraders.com", "priya.nair@contoso.io", "marco.bellini@fabrikam.net",
    "hannah.okafor@tailspintoys.com", "li.wei@adventure-works.com", "sofia.moreno@wingtiptoys.co",
    "tom.becker@litware.io", "aisha.khan@proseware.com", "jonas.lind@fourthcoffee.com",
    "emma.dubois@margiestravel.com",
)


KEYWORDS = tuple(topic.keyword for topic in TOPICS)
