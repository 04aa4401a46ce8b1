"""tracker tools over projects and sprints: browse them, start and close sprints (admins only), and move
tickets between sprints."""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.tracker.rules import allowed_moves, done_statuses
from toolgym.envs.apps.tracker.tool_common import (
    MAX_LIMIT,
    find_project,
    find_sprint,
    find_ticket,
    is_done,
    member_role,
    require_member,
    sprint_counts,
    sprint_name_of,
    ticket_summary,
    touch_ticket,
)


@tool
def list_projects(ctx: ToolContext) -> list[dict]:
    """List all projects with their lead, your role in each, the active sprint and linked code repositories."""
    user = ctx.env.user
    rows = ctx.query("SELECT * FROM projects ORDER BY key")
    out = []
    for row in rows:
        active = ctx.one("SELECT name FROM sprints WHERE project_id=? AND state='active'", (row["id"],))
        out.append(
            {
                "key": row["key"],
                "name": row["name"],
                "lead": row["lead"],
                "your_role": member_role(ctx, row["id"], user) or "none",
                "active_sprint": active["name"] if active else None,
                "repos": [
                    r["repo"]
                    for r in ctx.query("SELECT repo FROM project_repos WHERE project_id=? ORDER BY repo", (row["id"],))
                ],
            }
        )
    return out


@tool
def get_project(ctx: ToolContext, project: str) -> dict:
    """A project's workflow (statuses in order and the allowed transitions), members, sprints and repositories.

    Args:
        project: Project key like 'PLAT' or its name.
    """
    row = find_project(ctx, project)
    statuses = ctx.query(
        "SELECT name, category FROM statuses WHERE project_id=? ORDER BY position", (row["id"],)
    )
    return {
        "key": row["key"],
        "name": row["name"],
        "description": row["description"],
        "lead": row["lead"],
        "statuses": statuses,
        "transitions": {s["name"]: allowed_moves(ctx, row["id"], s["name"]) for s in statuses},
        "members": ctx.query(
            "SELECT m.username, u.name, m.role FROM project_members m JOIN users u ON u.username = m.username "
            "WHERE m.project_id=? ORDER BY m.username",
            (row["id"],),
        ),
        "sprints": ctx.query(
            "SELECT name, state, start_date, end_date FROM sprints WHERE project_id=? ORDER BY start_date",
            (row["id"],),
        ),
        "repos": [
            r["repo"] for r in ctx.query("SELECT repo FROM project_repos WHERE project_id=? ORDER BY repo", (row["id"],))
        ],
    }


@tool
def list_sprints(
    ctx: ToolContext, project: str, state: Literal["planned", "active", "closed"] | None = None
) -> list[dict]:
    """List a project's sprints, earliest first, with dates, goal and ticket counts.

    Args:
        project: Project key like 'PLAT' or its name.
        state: Only sprints in this state: 'planned', 'active' or 'closed'.
    """
    row = find_project(ctx, project)
    where = kit.Where("project_id=?", params=[row["id"]]).when(state, "state=?")
    sprints = ctx.query(f"SELECT * FROM sprints WHERE {where.sql} ORDER BY start_date, id", where.params)
    return [
        {
            "name": s["name"],
            "state": s["state"],
            "start_date": s["start_date"],
            "end_date": s["end_date"],
            "goal": s["goal"],
            **sprint_counts(ctx, s["id"], row["id"]),
        }
        for s in sprints
    ]


@tool
def get_sprint(ctx: ToolContext, project: str, sprint: str = "active") -> dict:
    """A sprint with all its tickets and story-point totals (done and remaining).

    Args:
        project: Project key like 'PLAT' or its name.
        sprint: Sprint name like 'PLAT Sprint 16', its number, 'active' (default) or 'next'.
    """
    row = find_project(ctx, project)
    target = find_sprint(ctx, row, sprint)
    tickets = ctx.query(
        "SELECT t.*, ? AS sprint_name FROM tickets t WHERE t.sprint_id=? ORDER BY t.number",
        (target["name"], target["id"]),
    )
    return {
        "name": target["name"],
        "project": row["key"],
        "state": target["state"],
        "start_date": target["start_date"],
        "end_date": target["end_date"],
        "goal": target["goal"],
        **sprint_counts(ctx, target["id"], row["id"]),
        "tickets": [ticket_summary(t) for t in tickets[:MAX_LIMIT]],
    }


def _sprint_to_change(ctx: ToolContext, project: str, sprint: str, state: str,
                      rule: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The project and its sprint an admin starts or closes, which must be in `state` (`rule` says so)."""
    row = find_project(ctx, project)
    target = find_sprint(ctx, row, sprint)
    user = ctx.env.require_user()
    if member_role(ctx, row["id"], user) != "admin":
        raise ToolError(f"you ({user}) are not an admin of project {row['key']}; only admins start or close sprints")
    if target["state"] != state:
        raise ToolError(f"{target['name']} is {target['state']}; {rule}")
    return row, target


@tool
def start_sprint(ctx: ToolContext, project: str, sprint: str) -> dict:
    """Start a planned sprint (project admins only). A project has one active sprint at a time, so close
    the current one first.

    Args:
        project: Project key like 'PLAT' or its name.
        sprint: Name or number of a planned sprint, or 'next'.
    """
    row, target = _sprint_to_change(ctx, project, sprint, "planned", "only a planned sprint can be started")
    active = ctx.one("SELECT name FROM sprints WHERE project_id=? AND state='active'", (row["id"],))
    if active is not None:
        raise ToolError(f"{active['name']} is still active in {row['key']}; close it before starting {target['name']}")
    ctx.db.execute("UPDATE sprints SET state='active' WHERE id=?", (target["id"],))
    return {"name": target["name"], "state": "active", "start_date": target["start_date"], "end_date": target["end_date"]}


@tool
def close_sprint(ctx: ToolContext, project: str, sprint: str = "active") -> dict:
    """Close the active sprint (project admins only). Every ticket in it must be Done: move unfinished
    ones to another sprint or the backlog first (move_to_sprint).

    Args:
        project: Project key like 'PLAT' or its name.
        sprint: Name or number of the active sprint, or 'active' (default).
    """
    row, target = _sprint_to_change(ctx, project, sprint, "active", "only the active sprint can be closed")
    done = done_statuses(ctx, row["id"])
    unfinished = [
        r["key"]
        for r in ctx.query("SELECT key, status FROM tickets WHERE sprint_id=? ORDER BY number", (target["id"],))
        if r["status"] not in done
    ]
    if unfinished:
        raise ToolError(
            f"{target['name']} still has unfinished tickets: {', '.join(unfinished)}; "
            "move them to another sprint or the backlog with move_to_sprint first"
        )
    ctx.db.execute("UPDATE sprints SET state='closed' WHERE id=?", (target["id"],))
    return {"name": target["name"], "state": "closed", **sprint_counts(ctx, target["id"], row["id"])}


@tool
def move_to_sprint(ctx: ToolContext, key: str, sprint: str) -> dict:
    """Move an unfinished ticket into a planned or active sprint of its project, or to the backlog.
    Closed sprints take no tickets, and Done tickets stay where they are.

    Args:
        key: Ticket key like 'PLAT-123'.
        sprint: Sprint name like 'PLAT Sprint 17', its number, 'active', 'next', or 'backlog'.
    """
    row = find_ticket(ctx, key)
    project = find_project(ctx, row["project_key"])
    target = None if sprint.strip().lower() == "backlog" else find_sprint(ctx, project, sprint)
    require_member(ctx, project, "plan its tickets")
    if target is not None and target["state"] == "closed":
        raise ToolError(f"argument 'sprint': {target['name']} is closed; closed sprints take no tickets")
    if is_done(ctx, row):
        raise ToolError(f"{row['key']} is {row['status']}; finished tickets stay in their sprint")
    new_id = target["id"] if target else None
    if new_id == row["sprint_id"]:
        raise ToolError(f"{row['key']} is already in {target['name'] if target else 'the backlog'}")
    touch_ticket(ctx, row["id"], sprint_id=new_id)
    return {
        "key": row["key"],
        "sprint": target["name"] if target else "backlog",
        "previous_sprint": sprint_name_of(ctx, row["sprint_id"]) or "backlog",
    }
