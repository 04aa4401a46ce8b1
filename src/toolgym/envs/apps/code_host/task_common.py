"""Shared pieces of the code_host task generators: wordings, env variables, seed lookups, checks.

Every query has an ORDER BY and every choice goes through the generator's `rng`, so a build seed
fixes the tasks.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import World, kit
from toolgym.envs.kit.members import members_with
from toolgym.envs.kit.row_checks import field_is, only, updated
from toolgym.schema import Check

TEXTS = kit.module_texts(__file__)

FIRST_TODAY = dt.date(2026, 4, 22)  # after the last seeded activity, inside the allowed CURRENT_DATE range
WRITE = ("write", "admin")

COMMENT_TEXTS = TEXTS["COMMENT_TEXTS"]
CLOSE_TEXTS = TEXTS["CLOSE_TEXTS"]
CHANGES_TEXTS = TEXTS["CHANGES_TEXTS"]
BODY_TEXTS = TEXTS["BODY_TEXTS"]
METHOD_PHRASES = {"merge": "merge", "squash": "squash-merge", "rebase": "rebase-merge"}


def full_name(repo: dict[str, Any]) -> str:
    return f"{repo['owner']}/{repo['name']}"


def all_repos(world: World) -> list[dict[str, Any]]:
    return world.query("SELECT * FROM repos ORDER BY id")


def members(
    world: World, repo_id: int, permissions: tuple[str, ...] = ("read", "write", "admin")
) -> list[str]:
    return members_with(world, "collaborators", ("repo_id", repo_id), "permission", permissions)


def open_issues(world: World, repo_id: int) -> list[dict[str, Any]]:
    return world.query("SELECT * FROM issues WHERE repo_id=? AND state='open' ORDER BY number", (repo_id,))


def env_on_a_day(rng: random.Random, world: World, username: str) -> dict[str, str]:
    """env_variables logging in `username` on a random day after the seeded activity."""
    return kit.env_for_username(world, username, kit.random_day(rng, FIRST_TODAY))


def open_issues_with_label(world: World, repo_id: int, label: str) -> list[dict[str, Any]]:
    return world.query(
        "SELECT i.* FROM issues i JOIN issue_labels il ON il.issue_id = i.id JOIN labels l ON l.id = il.label_id "
        "WHERE i.repo_id=? AND i.state='open' AND l.name=? ORDER BY i.created_at, i.id",
        (repo_id, label),
    )


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
        field_is("issues", {"id": issue_id}, "assignee", assignee, label, weight=2),
        only("only that assignment", [updated("issues", {"id": issue_id}, ["assignee"])]),
    ]
