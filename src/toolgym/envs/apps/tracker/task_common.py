"""Shared pieces of the tracker task generators: wordings, env variables, seed lookups, checks.

Every query has an ORDER BY and every choice goes through the generator's `rng`, so a build seed
fixes the tasks. The rules (allowed moves, blockers, done statuses) come from `rules`, the same
code the tools run, so a generated answer is what the tools will say.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import World, kit
from toolgym.envs.apps.tracker.data import FIRST_TODAY
from toolgym.envs.apps.tracker.rules import done_statuses, priority_rank
from toolgym.envs.kit.members import members_with

TEXTS = kit.module_texts(__file__)

COMMON_LAST_TODAY = dt.date(2026, 6, 7)  # every project's active sprint is still running on this day

COMMENT_TEXTS = TEXTS["COMMENT_TEXTS"]
WORK_NOTES = ["Implementation", "Code review fixes", "Debugging on staging", "Writing tests", "Pairing session"]


def projects(world: World) -> list[dict[str, Any]]:
    return world.query("SELECT * FROM projects ORDER BY id")


def members(world: World, project_id: int, roles: tuple[str, ...] = ("admin", "member")) -> list[str]:
    return members_with(world, "project_members", ("project_id", project_id), "role", roles)


def sprint_in(world: World, project_id: int, state: str) -> dict[str, Any] | None:
    """The active sprint, the earliest planned one, or the latest closed one."""
    order = "start_date DESC" if state == "closed" else "start_date"
    return world.one(
        f"SELECT * FROM sprints WHERE project_id=? AND state=? ORDER BY {order}, id", (project_id, state)
    )


def day_in_sprint(rng: random.Random, sprint: dict[str, Any]) -> dt.date:
    """A CURRENT_DATE while the sprint runs and after the seeded activity."""
    return kit.random_day(rng, max(FIRST_TODAY, kit.day_of(sprint["start_date"])), kit.day_of(sprint["end_date"]))


def common_day(rng: random.Random) -> dt.date:
    return kit.random_day(rng, FIRST_TODAY, COMMON_LAST_TODAY)


def unfinished(world: World, project_id: int) -> set[str]:
    """Status names of the project that are not Done."""
    done = done_statuses(world, project_id)
    return {
        r["name"]
        for r in world.query("SELECT name FROM statuses WHERE project_id=? ORDER BY position", (project_id,))
        if r["name"] not in done
    }


def open_tickets(world: World, project_id: int, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Unfinished tickets of a project matching an extra SQL condition, oldest first."""
    todo = unfinished(world, project_id)
    rows = world.query(
        f"SELECT * FROM tickets WHERE project_id=? AND {where} ORDER BY created_at, id", (project_id, *params)
    )
    return [r for r in rows if r["status"] in todo]


def by_priority(row: dict[str, Any]) -> int:
    return priority_rank(row["priority"])
