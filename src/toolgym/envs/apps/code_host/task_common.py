"""Shared pieces of the code_host task generators: wordings, env variables, seed lookups, checks.

Every query has an ORDER BY and every choice goes through the generator's `rng`, so a build seed
fixes the tasks.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from toolgym.envs import World
from toolgym.schema import Check, DiffOnly, ExpectedChange, FieldEquals

FIRST_TODAY = dt.date(2026, 4, 22)  # after the last seeded activity, inside the allowed CURRENT_DATE range
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


def label_phrase(label: str) -> str:
    return "bug" if label == "bug" else f"'{label}' issue"


def assignment_checks(issue_id: int, assignee: str, label: str) -> list[Check]:
    """The issue now has `assignee`, and nothing else changed: shared by the assign-to-someone and to-me tasks."""
    return [
        FieldEquals(table="issues", where={"id": issue_id}, field="assignee", value=assignee, weight=2, label=label),
        DiffOnly(
            expected=[ExpectedChange(table="issues", op="update", where={"id": issue_id}, fields=["assignee"])],
            weight=1,
            label="only that assignment",
        ),
    ]
