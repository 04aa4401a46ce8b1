"""tracker tools over tickets: search and read them, file, update, transition, assign, comment, link,
log work and watch."""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.tracker.rules import (
    allowed_moves,
    done_statuses,
    hours_text,
    open_blockers,
    ticket_key,
)
from toolgym.envs.apps.tracker.tool_common import (
    PRIORITY_ORDER_SQL,
    TicketType,
    check_limit,
    find_project,
    find_sprint,
    find_status,
    find_ticket,
    find_user,
    is_done,
    links_of,
    parse_points,
    parse_priority,
    require_assignable,
    require_member,
    sprint_name_of,
    ticket_summary,
    today_iso,
    touch_ticket,
)


@tool
def search_tickets(
    ctx: ToolContext,
    project: str | None = None,
    status: str | None = None,
    assignee: str | None = None,
    reporter: str | None = None,
    sprint: str | None = None,
    type: TicketType | None = None,
    priority: str | None = None,
    due: str | None = None,
    due_before: str | None = None,
    text: str | None = None,
    sort: Literal["created", "newest", "priority", "due", "key"] = "created",
    limit: int = 20,
) -> dict:
    """Search tickets in one project or all projects; filters combine with AND.

    Args:
        project: Project key like 'PLAT' or its name; leave out to search every project.
        status: A status name like 'In Progress', or 'open' (anything not Done) or 'done'.
        assignee: Username, 'me' for yourself, or 'none' for unassigned tickets.
        reporter: Username of who reported the ticket, or 'me'.
        sprint: Sprint name or number (needs project), or 'active' for active sprints, 'backlog' for no sprint.
        type: 'bug', 'story', 'task' or 'epic'.
        priority: 'Highest', 'High', 'Medium', 'Low' or 'Lowest'.
        due: Only tickets due on this date: YYYY-MM-DD, 'today', 'tomorrow', 'next Friday'.
        due_before: Only tickets due on or before this date (same formats).
        text: Words that must appear in the summary.
        sort: 'created' (oldest first, default), 'newest', 'priority' (most urgent first), 'due' (soonest first) or 'key'.
        limit: Most tickets to return (1-50, default 20); total_count counts all matches.
    """
    check_limit(limit)
    where = kit.Where()
    target = find_project(ctx, project) if project is not None else None
    if target is not None:
        where.add("t.project_id=?", target["id"])
    if status is not None:
        word = status.strip().lower()
        if word in ("open", "unfinished", "not done"):
            where.add("st.category != 'done'")
        elif word in ("done", "closed", "finished", "resolved"):
            where.add("st.category = 'done'")
        elif target is not None:
            where.add("t.status=?", find_status(ctx, target["id"], status))
        else:
            row = ctx.one("SELECT name FROM statuses WHERE lower(name)=lower(?) ORDER BY id", (status.strip(),))
            if row is None:
                names = ", ".join(r["name"] for r in ctx.query("SELECT DISTINCT name FROM statuses ORDER BY name"))
                raise ToolError(f"argument 'status': no status {status!r}; statuses are: {names}, or 'open'/'done'")
            where.add("t.status=?", row["name"])
    if assignee is not None:
        if assignee.strip().lower() in ("none", "unassigned", "nobody"):
            where.add("t.assignee IS NULL")
        else:
            where.add("t.assignee=?", find_user(ctx, assignee, "assignee"))
    if reporter is not None:
        where.add("t.reporter=?", find_user(ctx, reporter, "reporter"))
    if sprint is not None:
        word = sprint.strip().lower()
        if word == "backlog":
            where.add("t.sprint_id IS NULL")
        elif word in ("active", "current") and target is None:
            where.add("sp.state = 'active'")
        elif target is None:
            raise ToolError("argument 'sprint' needs 'project' (sprint names are per project), unless it is 'active' or 'backlog'")
        else:
            where.add("t.sprint_id=?", find_sprint(ctx, target, sprint)["id"])
    where.when(type, "t.type=?")
    if priority is not None:
        where.add("t.priority=?", parse_priority(priority))
    if due is not None:
        where.add("t.due_date=?", ctx.env.date(due))
    if due_before is not None:
        where.add("t.due_date IS NOT NULL AND t.due_date<=?", ctx.env.date(due_before))
    if text is not None:
        for word in text.split():
            where.add("lower(t.summary) LIKE ?", f"%{word.lower()}%")
    order = {
        "created": "t.created_at, t.id",
        "newest": "t.created_at DESC, t.id DESC",
        "priority": f"{PRIORITY_ORDER_SQL}, t.created_at, t.id",
        "due": f"t.due_date IS NULL, t.due_date, {PRIORITY_ORDER_SQL}, t.id",
        "key": "p.key, t.number",
    }[sort]
    source = (
        "FROM tickets t JOIN projects p ON p.id = t.project_id "
        "JOIN statuses st ON st.project_id = t.project_id AND st.name = t.status "
        "LEFT JOIN sprints sp ON sp.id = t.sprint_id "
        f"WHERE {where.sql}"
    )
    total = ctx.one(f"SELECT COUNT(*) AS n {source}", where.params)
    rows = ctx.query(f"SELECT t.*, sp.name AS sprint_name {source} ORDER BY {order} LIMIT ?", [*where.params, limit])
    return {"total_count": total["n"] if total else 0, "tickets": [ticket_summary(r) for r in rows]}


@tool
def get_ticket(ctx: ToolContext, key: str) -> dict:
    """One ticket in full: description, links, open blockers, watchers, time logged, the statuses it may
    move to next, its linked pull request and the latest comments.

    Args:
        key: Ticket key like 'PLAT-123'.
    """
    row = find_ticket(ctx, key)
    minutes = ctx.one("SELECT COALESCE(SUM(minutes), 0) AS m FROM worklogs WHERE ticket_id=?", (row["id"],))
    comments = ctx.query(
        "SELECT author, body, created_at FROM comments WHERE ticket_id=? ORDER BY id DESC LIMIT 10", (row["id"],)
    )
    return {
        **ticket_summary({**row, "sprint_name": sprint_name_of(ctx, row["sprint_id"])}),
        "project": row["project_key"],
        "description": row["description"],
        "reporter": row["reporter"],
        "updated_at": row["updated_at"],
        "resolved_at": row["resolved_at"],
        "pull_request": row["code_ref"],
        "allowed_transitions": allowed_moves(ctx, row["project_id"], row["status"]),
        "open_blockers": [b["key"] for b in open_blockers(ctx, row["id"])],
        "links": links_of(ctx, row["id"]),
        "watchers": [
            r["username"]
            for r in ctx.query("SELECT username FROM watchers WHERE ticket_id=? ORDER BY username", (row["id"],))
        ],
        "time_logged": hours_text(minutes["m"] if minutes else 0),
        "comments": comments[::-1],
    }


@tool
def create_ticket(
    ctx: ToolContext,
    project: str,
    summary: str,
    type: TicketType = "task",
    description: str = "",
    priority: str = "Medium",
    assignee: str | None = None,
    story_points: int | None = None,
    sprint: str | None = None,
    due_date: str | None = None,
) -> dict:
    """Create a ticket in a project as yourself (you must be a member); it starts in the first status
    of the workflow ('To Do').

    Args:
        project: Project key like 'PLAT' or its name.
        summary: One-line title of the ticket.
        type: 'bug', 'story', 'task' (default) or 'epic'.
        description: Longer description.
        priority: 'Highest', 'High', 'Medium' (default), 'Low' or 'Lowest'.
        assignee: Username of a project member, or 'me'; leave out for unassigned.
        story_points: Estimate on the Fibonacci scale: 1, 2, 3, 5, 8, 13 or 21 (not for epics).
        sprint: Sprint name or number, or 'active'/'next'; leave out for the backlog. Closed sprints take no tickets.
        due_date: Due date: YYYY-MM-DD, 'tomorrow', 'next Friday'.
    """
    target = find_project(ctx, project)
    if not summary.strip():
        raise ToolError("argument 'summary' must not be empty")
    level = parse_priority(priority)
    points = parse_points(story_points, type) if story_points is not None else None
    assignee_name = find_user(ctx, assignee, "assignee") if assignee else None
    sprint_row = find_sprint(ctx, target, sprint) if sprint else None
    due = ctx.env.date(due_date) if due_date else None
    user = require_member(ctx, target, "create tickets in it")
    if assignee_name:
        require_assignable(ctx, target, assignee_name, "assignee")
    if sprint_row and sprint_row["state"] == "closed":
        raise ToolError(f"argument 'sprint': {sprint_row['name']} is closed; closed sprints take no tickets")
    first = ctx.one("SELECT name FROM statuses WHERE project_id=? ORDER BY position LIMIT 1", (target["id"],))
    assert first is not None
    top = ctx.one("SELECT COALESCE(MAX(number), 0) AS n FROM tickets WHERE project_id=?", (target["id"],))
    number = int(top["n"] if top else 0) + 1
    key = ticket_key(target["key"], number)
    today = today_iso(ctx)
    ctx.db.execute(
        "INSERT INTO tickets(project_id, number, key, type, summary, description, status, priority, assignee, "
        "reporter, story_points, sprint_id, due_date, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            target["id"], number, key, type, summary.strip(), description, first["name"], level, assignee_name,
            user, points, sprint_row["id"] if sprint_row else None, due, today, today,
        ),
    )
    return {
        "key": key,
        "type": type,
        "summary": summary.strip(),
        "status": first["name"],
        "priority": level,
        "assignee": assignee_name,
        "story_points": points,
        "sprint": sprint_row["name"] if sprint_row else None,
        "due_date": due,
    }


@tool
def update_ticket(
    ctx: ToolContext,
    key: str,
    summary: str | None = None,
    description: str | None = None,
    priority: str | None = None,
    story_points: int | None = None,
    due_date: str | None = None,
) -> dict:
    """Change a ticket's summary, description, priority, story points or due date (members only).
    Status, assignee and sprint have their own tools.

    Args:
        key: Ticket key like 'PLAT-123'.
        summary: New one-line title.
        description: New description.
        priority: 'Highest', 'High', 'Medium', 'Low' or 'Lowest'.
        story_points: Estimate on the Fibonacci scale: 1, 2, 3, 5, 8, 13 or 21 (not for epics).
        due_date: New due date (YYYY-MM-DD, 'next Friday'), or 'none' to clear it.
    """
    row = find_ticket(ctx, key)
    changes: dict[str, Any] = {}
    if summary is not None:
        if not summary.strip():
            raise ToolError("argument 'summary' must not be empty")
        changes["summary"] = summary.strip()
    if description is not None:
        changes["description"] = description
    if priority is not None:
        changes["priority"] = parse_priority(priority)
    if story_points is not None:
        changes["story_points"] = parse_points(story_points, row["type"])
    if due_date is not None:
        changes["due_date"] = None if due_date.strip().lower() in ("none", "") else ctx.env.date(due_date)
    if not changes:
        raise ToolError("give at least one of 'summary', 'description', 'priority', 'story_points', 'due_date'")
    project = find_project(ctx, row["project_key"])
    require_member(ctx, project, "edit its tickets")
    touch_ticket(ctx, row["id"], **changes)
    return {"key": row["key"], **changes}


@tool
def transition_ticket(ctx: ToolContext, key: str, status: str) -> dict:
    """Move a ticket to another status. Only the transitions of the project's workflow are allowed
    (get_ticket shows allowed_transitions); Done is final, and a ticket with unfinished blockers
    cannot move to Done.

    Args:
        key: Ticket key like 'PLAT-123'.
        status: Target status, e.g. 'In Progress', 'In Review', 'Blocked' or 'Done'.
    """
    row = find_ticket(ctx, key)
    target = find_status(ctx, row["project_id"], status)
    project = find_project(ctx, row["project_key"])
    require_member(ctx, project, "change its tickets")
    if target == row["status"]:
        raise ToolError(f"{row['key']} is already in '{target}'")
    moves = allowed_moves(ctx, row["project_id"], row["status"])
    if target not in moves:
        if not moves:
            raise ToolError(f"{row['key']} is '{row['status']}', which is final: it cannot move to '{target}'")
        raise ToolError(
            f"{row['key']} cannot move from '{row['status']}' to '{target}'; "
            f"from '{row['status']}' it can move to: {', '.join(moves)}"
        )
    done = done_statuses(ctx, row["project_id"])
    if target in done:
        blockers = open_blockers(ctx, row["id"])
        if blockers:
            listed = ", ".join(f"{b['key']} ({b['status']})" for b in blockers)
            raise ToolError(f"{row['key']} cannot move to '{target}': it is blocked by unfinished {listed}")
    touch_ticket(ctx, row["id"], status=target, resolved_at=today_iso(ctx) if target in done else None)
    return {
        "key": row["key"],
        "from": row["status"],
        "status": target,
        "allowed_transitions": allowed_moves(ctx, row["project_id"], target),
    }


@tool
def assign_ticket(ctx: ToolContext, key: str, assignee: str) -> dict:
    """Assign a ticket to a project member, replacing any assignee (members only).

    Args:
        key: Ticket key like 'PLAT-123'.
        assignee: Username of a project member, 'me' for yourself, or 'none' to unassign.
    """
    row = find_ticket(ctx, key)
    project = find_project(ctx, row["project_key"])
    name = None if assignee.strip().lower() in ("none", "unassigned", "nobody") else find_user(ctx, assignee, "assignee")
    require_member(ctx, project, "assign its tickets")
    if name is not None:
        require_assignable(ctx, project, name, "assignee")
    if name == row["assignee"]:
        raise ToolError(f"{row['key']} is already assigned to {name or 'nobody'}")
    touch_ticket(ctx, row["id"], assignee=name)
    return {"key": row["key"], "summary": row["summary"], "assignee": name, "previous_assignee": row["assignee"]}


@tool
def add_comment_to_ticket(ctx: ToolContext, key: str, body: str) -> dict:
    """Comment on a ticket as yourself (members only).

    Args:
        key: Ticket key like 'PLAT-123'.
        body: Text of the comment.
    """
    row = find_ticket(ctx, key)
    if not body.strip():
        raise ToolError("argument 'body' must not be empty")
    user = require_member(ctx, find_project(ctx, row["project_key"]), "comment on its tickets")
    ctx.db.execute(
        "INSERT INTO comments(ticket_id, author, body, created_at) VALUES (?, ?, ?, ?)",
        (row["id"], user, body, today_iso(ctx)),
    )
    ctx.db.execute("UPDATE tickets SET updated_at=? WHERE id=?", (today_iso(ctx), row["id"]))
    return {"key": row["key"], "author": user, "body": body, "created_at": today_iso(ctx)}


@tool
def link_tickets(
    ctx: ToolContext,
    key: str,
    link_type: Literal["blocks", "is blocked by", "relates to", "duplicates"],
    other_key: str,
) -> dict:
    """Link two tickets: `key` blocks / is blocked by / relates to / duplicates `other_key` (members only).

    Args:
        key: Ticket key like 'PLAT-123'.
        link_type: 'blocks', 'is blocked by', 'relates to' or 'duplicates'.
        other_key: Key of the other ticket, e.g. 'PLAT-130'.
    """
    row = find_ticket(ctx, key)
    other = find_ticket(ctx, other_key, "other_key")
    if row["id"] == other["id"]:
        raise ToolError("argument 'other_key': a ticket cannot be linked to itself")
    require_member(ctx, find_project(ctx, row["project_key"]), "link its tickets")
    stored = {"blocks": "blocks", "is blocked by": "blocks", "relates to": "relates", "duplicates": "duplicates"}[link_type]
    source, target = (other, row) if link_type == "is blocked by" else (row, other)
    existing = ctx.one(
        "SELECT link_type FROM ticket_links WHERE (source_id=? AND target_id=?) OR (source_id=? AND target_id=?)",
        (source["id"], target["id"], target["id"], source["id"]),
    )
    if existing is not None:
        raise ToolError(f"{row['key']} and {other['key']} are already linked ({existing['link_type']})")
    if stored == "blocks" and is_done(ctx, target) and not is_done(ctx, source):
        raise ToolError(f"{target['key']} is already Done, so the unfinished {source['key']} cannot block it")
    ctx.db.execute(
        "INSERT INTO ticket_links(source_id, target_id, link_type, created_at) VALUES (?, ?, ?, ?)",
        (source["id"], target["id"], stored, today_iso(ctx)),
    )
    return {"key": row["key"], "link": link_type, "other_key": other["key"]}


@tool
def log_work(ctx: ToolContext, key: str, hours: float, date: str = "today", note: str = "") -> dict:
    """Log time you spent on a ticket (members only), in quarter hours, on a day up to today.

    Args:
        key: Ticket key like 'PLAT-123'.
        hours: Time spent in hours, e.g. 1.5 for an hour and a half (0.25 to 24, in steps of 0.25).
        date: Day the work was done: YYYY-MM-DD, 'today' (default), 'yesterday', 'last Friday'.
        note: Short note on what you did.
    """
    row = find_ticket(ctx, key)
    if not 0 < hours <= 24 or round(hours * 4) != hours * 4:
        raise ToolError(f"argument 'hours' must be between 0.25 and 24 in steps of 0.25; got {hours}")
    day = ctx.env.date(date)
    if day > today_iso(ctx):
        raise ToolError(f"argument 'date': {day} is in the future; work can be logged up to today ({today_iso(ctx)})")
    user = require_member(ctx, find_project(ctx, row["project_key"]), "log work on its tickets")
    minutes = round(hours * 60)
    ctx.db.execute(
        "INSERT INTO worklogs(ticket_id, author, minutes, work_date, note, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        (row["id"], user, minutes, day, note, today_iso(ctx)),
    )
    total = ctx.one("SELECT SUM(minutes) AS m FROM worklogs WHERE ticket_id=?", (row["id"],))
    return {
        "key": row["key"],
        "logged": hours_text(minutes),
        "date": day,
        "author": user,
        "time_logged_total": hours_text(total["m"] if total else minutes),
    }


@tool
def watch_ticket(ctx: ToolContext, key: str) -> dict:
    """Start watching a ticket to get notified of its changes.

    Args:
        key: Ticket key like 'PLAT-123'.
    """
    row = find_ticket(ctx, key)
    user = ctx.env.require_user()
    if ctx.one("SELECT 1 FROM watchers WHERE ticket_id=? AND username=?", (row["id"], user)):
        raise ToolError(f"you ({user}) already watch {row['key']}")
    ctx.db.execute("INSERT INTO watchers(ticket_id, username) VALUES (?, ?)", (row["id"], user))
    return {"key": row["key"], "watching": True}
