"""Shared pieces of the code_host task generators: wordings, env variables, seed lookups, checks.

Every query has an ORDER BY and every choice goes through the generator's `rng`, so a build seed
fixes the tasks.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import World
from toolgym.schema import AnswerContains, Check, DiffOnly, ToolCall, ToolNotCalled

FIRST_DAY = dt.date(2026, 4, 22)  # after the last seeded activity, inside the allowed CURRENT_DATE range
LAST_DAY = dt.date(2026, 8, 31)
WRITE = ("write", "admin")

COMMENT_TEXTS = [
    "I can reproduce this on the latest main branch.",
    "This also affects the 2.3 release; bumping priority.",
    "Workaround: set the timeout to 30 seconds until a fix lands.",
    "Confirmed by the QA team on staging today.",
    "Could whoever picks this up add a regression test as well?",
    "Customer Acme Corp reported the same problem this morning.",
    "Looks related to the recent dependency upgrade.",
]
CLOSE_TEXTS = [
    "Fixed on main; closing.",
    "Closing as this no longer reproduces.",
    "Resolved by the latest release.",
    "Closing: duplicate of an older report.",
    "Done, thanks everyone!",
]
CHANGES_TEXTS = [
    "CI is failing; please fix the tests before review.",
    "Please get the build green first.",
    "The test suite fails on this branch; please take a look.",
]
BODY_TEXTS = [
    "Seen in production since the last deploy.",
    "Reported by a customer via support.",
    "Found while reviewing the release checklist.",
    "",
]
METHOD_PHRASES = {"merge": "merge", "squash": "squash-merge", "rebase": "rebase-merge"}


def pick_phrasing(rng: random.Random, phrasings: list[str]) -> tuple[str, int]:
    """One of several wordings, and which one (kept in metadata so tests can count phrasings)."""
    index = rng.randrange(len(phrasings))
    return phrasings[index], index


def gold_call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def random_day(rng: random.Random, first: dt.date = FIRST_DAY, last: dt.date = LAST_DAY) -> dt.date:
    return first + dt.timedelta(days=rng.randint(0, (last - first).days))


def env_vars(world: World, user: str, today: dt.date) -> dict[str, str]:
    row = world.one("SELECT name FROM users WHERE username=?", (user,))
    return {
        "CURRENT_DATE": today.isoformat(),
        "LOGGED_IN_USER": user,
        "LOGGED_IN_NAME": row["name"] if row else user,
    }


def full_name(repo: dict[str, Any]) -> str:
    return f"{repo['owner']}/{repo['name']}"


def all_repos(world: World) -> list[dict[str, Any]]:
    return world.query("SELECT * FROM repos ORDER BY id")


def members(
    world: World, repo_id: int, permissions: tuple[str, ...] = ("read", "write", "admin")
) -> list[str]:
    marks = ",".join("?" * len(permissions))
    return [
        r["username"]
        for r in world.query(
            f"SELECT username FROM collaborators WHERE repo_id=? AND permission IN ({marks}) ORDER BY username",
            (repo_id, *permissions),
        )
    ]


def open_issues_with_label(world: World, repo_id: int, label: str) -> list[dict[str, Any]]:
    return world.query(
        "SELECT i.* FROM issues i JOIN issue_labels il ON il.issue_id = i.id JOIN labels l ON l.id = il.label_id "
        "WHERE i.repo_id=? AND i.state='open' AND l.name=? ORDER BY i.created_at, i.id",
        (repo_id, label),
    )


def approvers(world: World, pr_id: int) -> list[str]:
    latest: dict[str, str] = {}
    for row in world.query(
        "SELECT reviewer, state FROM reviews WHERE pr_id=? AND state != 'commented' ORDER BY id", (pr_id,)
    ):
        latest[row["reviewer"]] = row["state"]
    return sorted(r for r, s in latest.items() if s == "approved")


def fresh_reviewers(world: World, pr: dict[str, Any]) -> list[str]:
    """Writers of the PR's repository other than its author who have not reviewed it yet."""
    reviewed = {
        r["reviewer"]
        for r in world.query("SELECT reviewer FROM reviews WHERE pr_id=? ORDER BY id", (pr["id"],))
    }
    return [u for u in members(world, pr["repo_id"], WRITE) if u != pr["author"] and u not in reviewed]


def lookup_checks(values: list[str]) -> list[Check]:
    return [
        AnswerContains(values=values, weight=2, label="answer has the facts"),
        DiffOnly(expected=[], weight=1, label="nothing changed"),
    ]


def impossible_checks(write_tool: str) -> list[Check]:
    return [
        DiffOnly(expected=[], weight=2, label="nothing changed"),
        ToolNotCalled(name=write_tool, weight=1, label=f"{write_tool} not called"),
        AnswerContains(values=["cannot"], weight=1, label="says it cannot"),
    ]


def label_phrase(label: str) -> str:
    return "bug" if label == "bug" else f"'{label}' issue"
