"""Lookups and argument checks the tracker tools share: find a project, ticket, user, sprint or
status from what a model typed, and raise a ToolError that names the argument and what is allowed.
"""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError
from toolgym.envs.apps.tracker.rules import (
    PRIORITIES,
    STORY_POINTS,
    done_statuses,
    normalize_priority,
    parse_key,
    ticket_key,
)

MAX_LIMIT = 50
TicketType = Literal["bug", "story", "task", "epic"]
PRIORITY_ORDER_SQL = "CASE t.priority " + " ".join(f"WHEN '{p}' THEN {i}" for i, p in enumerate(PRIORITIES)) + " END"


def find_project(ctx: ToolContext, ref: str, arg: str = "project") -> dict[str, Any]:
    """A project by key ('PLAT') or name ('Platform'), case-insensitive."""
    text = ref.strip()
    row = ctx.one("SELECT * FROM projects WHERE lower(key)=lower(?) OR lower(name)=lower(?)", (text, text))
    if row is None:
        known = ", ".join(f"{r['key']} ({r['name']})" for r in ctx.query("SELECT key, name FROM projects ORDER BY key"))
        raise ToolError(f"argument '{arg}': no project {ref!r}; projects are: {known}")
    return row


def find_ticket(ctx: ToolContext, ref: str, arg: str = "key") -> dict[str, Any]:
    """A ticket (with its project key) from a key like 'PLAT-123'; case and a space for the dash are fine."""
    parsed = parse_key(ref)
    if parsed is None:
        raise ToolError(f"argument '{arg}' must be a ticket key like 'PLAT-123'; got {ref!r}")
    row = ctx.one(
        "SELECT t.*, p.key AS project_key, p.name AS project_name FROM tickets t JOIN projects p "
        "ON p.id = t.project_id WHERE p.key=? AND t.number=?",
        parsed,
    )
    if row is None:
        raise ToolError(f"argument '{arg}': no ticket {ticket_key(*parsed)}; find keys with search_tickets")
    return row


def find_user(ctx: ToolContext, name: str, arg: str) -> str:
    """A username from 'me', a username or a full name ('Dana Williams')."""
    text = name.strip().lstrip("@")
    if text.lower() in ("me", "myself"):
        return ctx.env.require_user()
    row = ctx.one("SELECT username FROM users WHERE lower(username)=lower(?)", (text,))
    if row is None:
        matches = ctx.query("SELECT username FROM users WHERE lower(name)=lower(?) ORDER BY id", (text,))
        if len(matches) == 1:
            return matches[0]["username"]
        raise ToolError(f"argument '{arg}': no user named {name!r}; use a username like 'jane.doe' or 'me'")
    return row["username"]


def member_role(ctx: ToolContext, project_id: int, username: str | None) -> str | None:
    """'admin' or 'member', or None for someone outside the project."""
    if username is None:
        return None
    row = ctx.one("SELECT role FROM project_members WHERE project_id=? AND username=?", (project_id, username))
    return row["role"] if row else None


def require_member(ctx: ToolContext, project: dict[str, Any], action: str) -> str:
    """The logged-in user, who must be a member of the project to change anything in it."""
    user = ctx.env.require_user()
    if member_role(ctx, project["id"], user) is None:
        raise ToolError(
            f"you ({user}) are not a member of project {project['key']}, so you cannot {action}; "
            "get_project lists its members"
        )
    return user


def require_assignable(ctx: ToolContext, project: dict[str, Any], username: str, arg: str) -> None:
    if member_role(ctx, project["id"], username) is None:
        raise ToolError(
            f"argument '{arg}': {username} is not a member of project {project['key']}; "
            "tickets can only be assigned to members (see get_project)"
        )


def find_sprint(ctx: ToolContext, project: dict[str, Any], ref: str, arg: str = "sprint") -> dict[str, Any]:
    """A sprint of the project: its name ('PLAT Sprint 16'), its number ('16'), 'active' or 'next'."""
    text = " ".join(ref.strip().split())
    lowered = text.lower()
    if lowered in ("active", "current", "the current sprint", "current sprint", "active sprint"):
        row = ctx.one("SELECT * FROM sprints WHERE project_id=? AND state='active' ORDER BY id", (project["id"],))
        if row is None:
            raise ToolError(f"argument '{arg}': project {project['key']} has no active sprint")
        return row
    if lowered in ("next", "next sprint", "the next sprint"):
        row = ctx.one(
            "SELECT * FROM sprints WHERE project_id=? AND state='planned' ORDER BY start_date, id", (project["id"],)
        )
        if row is None:
            raise ToolError(f"argument '{arg}': project {project['key']} has no planned sprint")
        return row
    number = lowered.removeprefix("sprint").strip()
    candidates = [text, f"{project['key']} Sprint {number}"] if number.isdigit() else [text]
    for candidate in candidates:
        row = ctx.one(
            "SELECT * FROM sprints WHERE project_id=? AND lower(name)=lower(?)", (project["id"], candidate)
        )
        if row is not None:
            return row
    known = ", ".join(
        f"{r['name']} ({r['state']})"
        for r in ctx.query("SELECT name, state FROM sprints WHERE project_id=? ORDER BY start_date", (project["id"],))
    )
    raise ToolError(f"argument '{arg}': project {project['key']} has no sprint {ref!r}; its sprints are: {known}")


def find_status(ctx: ToolContext, project_id: int, text: str, arg: str = "status") -> str:
    row = ctx.one(
        "SELECT name FROM statuses WHERE project_id=? AND lower(name)=lower(?)", (project_id, text.strip())
    )
    if row is None:
        names = ", ".join(
            r["name"] for r in ctx.query("SELECT name FROM statuses WHERE project_id=? ORDER BY position", (project_id,))
        )
        raise ToolError(f"argument '{arg}': this project has no status {text!r}; its statuses are: {names}")
    return row["name"]


def parse_priority(text: str, arg: str = "priority") -> str:
    name = normalize_priority(text)
    if name is None:
        raise ToolError(f"argument '{arg}' must be one of {', '.join(PRIORITIES)}; got {text!r}")
    return name


def parse_points(value: int, ticket_type: str, arg: str = "story_points") -> int:
    """Story points must be on the Fibonacci scale, and epics are never estimated."""
    if ticket_type == "epic":
        raise ToolError(f"argument '{arg}': epics are not estimated; story points go on their stories and tasks")
    if value not in STORY_POINTS:
        allowed = ", ".join(str(p) for p in STORY_POINTS)
        raise ToolError(f"argument '{arg}' must be on the Fibonacci scale ({allowed}); got {value}")
    return value


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolError(f"argument 'limit' must be between 1 and {MAX_LIMIT}; got {limit}")
    return limit


def today_iso(ctx: ToolContext) -> str:
    return ctx.env.today.isoformat()


def ticket_summary(row: dict[str, Any]) -> dict[str, Any]:
    """The fields of a ticket a list shows; `row` carries `sprint_name` from a join."""
    return {
        "key": row["key"],
        "type": row["type"],
        "summary": row["summary"],
        "status": row["status"],
        "priority": row["priority"],
        "assignee": row["assignee"],
        "story_points": row["story_points"],
        "sprint": row.get("sprint_name"),
        "due_date": row["due_date"],
        "created_at": row["created_at"],
    }


def sprint_name_of(ctx: ToolContext, sprint_id: int | None) -> str | None:
    if sprint_id is None:
        return None
    row = ctx.one("SELECT name FROM sprints WHERE id=?", (sprint_id,))
    return row["name"] if row else None


def touch_ticket(ctx: ToolContext, ticket_id: int, **fields: Any) -> None:
    """Update a ticket's fields and stamp it updated today."""
    sets = ", ".join(f"{name}=?" for name in fields)
    ctx.db.execute(
        f"UPDATE tickets SET {sets}, updated_at=? WHERE id=?", (*fields.values(), today_iso(ctx), ticket_id)
    )


def is_done(ctx: ToolContext, ticket: dict[str, Any]) -> bool:
    return ticket["status"] in done_statuses(ctx, ticket["project_id"])


def sprint_counts(ctx: ToolContext, sprint_id: int, project_id: int) -> dict[str, int]:
    done = done_statuses(ctx, project_id)
    rows = ctx.query("SELECT status, story_points FROM tickets WHERE sprint_id=? ORDER BY id", (sprint_id,))
    finished = [r for r in rows if r["status"] in done]
    return {
        "ticket_count": len(rows),
        "done_count": len(finished),
        "points_total": sum(r["story_points"] or 0 for r in rows),
        "points_done": sum(r["story_points"] or 0 for r in finished),
        "points_remaining": sum(r["story_points"] or 0 for r in rows if r["status"] not in done),
    }


def links_of(ctx: ToolContext, ticket_id: int) -> list[dict[str, Any]]:
    outward = {"blocks": "blocks", "relates": "relates to", "duplicates": "duplicates"}
    inward = {"blocks": "is blocked by", "relates": "relates to", "duplicates": "is duplicated by"}
    rows = ctx.query(
        "SELECT l.link_type, 'out' AS side, o.key, o.summary, o.status FROM ticket_links l "
        "JOIN tickets o ON o.id = l.target_id WHERE l.source_id=? "
        "UNION ALL SELECT l.link_type, 'in', o.key, o.summary, o.status FROM ticket_links l "
        "JOIN tickets o ON o.id = l.source_id WHERE l.target_id=? ORDER BY 3",
        (ticket_id, ticket_id),
    )
    return [
        {
            "type": (outward if r["side"] == "out" else inward)[r["link_type"]],
            "key": r["key"],
            "summary": r["summary"],
            "status": r["status"],
        }
        for r in rows
    ]
