"""Tracker rules shared by the seed, the tools and the task generators, so all three agree exactly.

Anything with a `query(sql, params)` method works as `source`: a ToolContext (episode state) or a
World (the seed, read-only). Workflows are data (the `statuses` and `transitions` tables), seeded from
the templates in texts/rules.json; this module holds the few rules computed on top of them.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any, Protocol

from toolgym.envs import kit

TEXTS = kit.module_texts(__file__)

PRIORITIES = ("Highest", "High", "Medium", "Low", "Lowest")  # most urgent first
STORY_POINTS = (1, 2, 3, 5, 8, 13, 21)  # the Fibonacci scale the teams estimate with
DONE = "Done"
BLOCKED = "Blocked"

# workflow name -> ordered (status, category) and the allowed (from, to) moves; Done is final.
WORKFLOWS: dict[str, dict[str, Any]] = TEXTS["WORKFLOWS"]

_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*[-\s]\s*(\d+)\s*$")


class Source(Protocol):
    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]: ...


def ticket_key(project_key: str, number: int) -> str:
    return f"{project_key}-{number}"


def parse_key(text: str) -> tuple[str, int] | None:
    """'plat-12', ' PLAT 12 ' -> ('PLAT', 12); None when it is not a ticket key."""
    match = _KEY.match(text)
    if match is None:
        return None
    return match.group(1).upper(), int(match.group(2))


def priority_rank(priority: str) -> int:
    """0 for Highest ... 4 for Lowest: sort ascending for 'most urgent first'."""
    return PRIORITIES.index(priority)


def normalize_priority(text: str) -> str | None:
    for name in PRIORITIES:
        if name.lower() == text.strip().lower():
            return name
    return None


def allowed_moves(source: Source, project_id: int, status: str) -> list[str]:
    """Statuses a ticket in `status` may move to next, in workflow order."""
    return [
        r["to_status"]
        for r in source.query(
            "SELECT t.to_status FROM transitions t JOIN statuses s ON s.project_id = t.project_id "
            "AND s.name = t.to_status WHERE t.project_id=? AND t.from_status=? ORDER BY s.position",
            (project_id, status),
        )
    ]


def done_statuses(source: Source, project_id: int) -> set[str]:
    return {
        r["name"]
        for r in source.query(
            "SELECT name FROM statuses WHERE project_id=? AND category='done' ORDER BY position", (project_id,)
        )
    }


def open_blockers(source: Source, ticket_id: int) -> list[dict[str, Any]]:
    """Unfinished tickets that block this one (a ticket with any cannot move to a done status)."""
    return source.query(
        "SELECT b.id, b.key, b.summary, b.status FROM ticket_links l JOIN tickets b ON b.id = l.source_id "
        "JOIN statuses s ON s.project_id = b.project_id AND s.name = b.status "
        "WHERE l.target_id=? AND l.link_type='blocks' AND s.category != 'done' ORDER BY b.id",
        (ticket_id,),
    )


def workflow_path(source: Source, project_id: int, start: str, goal: str, avoid: tuple[str, ...] = ()) -> list[str]:
    """Shortest chain of statuses after `start` that ends in `goal` ([] if unreachable)."""
    edges: dict[str, list[str]] = {}
    for row in source.query(
        "SELECT t.from_status, t.to_status FROM transitions t JOIN statuses s ON s.project_id = t.project_id "
        "AND s.name = t.to_status WHERE t.project_id=? ORDER BY s.position",
        (project_id,),
    ):
        edges.setdefault(row["from_status"], []).append(row["to_status"])
    previous: dict[str, str] = {start: start}
    queue = deque([start])
    while queue:
        status = queue.popleft()
        if status == goal:
            path = [goal]
            while previous[path[-1]] != start:
                path.append(previous[path[-1]])
            return path[::-1]
        for nxt in edges.get(status, []):
            if nxt not in previous and nxt not in avoid:
                previous[nxt] = status
                queue.append(nxt)
    return []


def hours_text(minutes: int) -> str:
    """90 -> '1.5h'; whole hours print without a decimal point."""
    hours = minutes / 60
    return f"{int(hours)}h" if hours == int(hours) else f"{hours:g}h"
