"""Mail tools over the calendar: events, invitations and their answers, new meetings and cancellations."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.mail.tool_common import (
    MAX_LIST,
    calendar_between,
    check_text,
    me,
    my_event,
    parse_time,
    resolve_recipients,
)


@tool
def list_events(ctx: ToolContext, date: str, end_date: str | None = None) -> list[dict[str, Any]]:
    """List the meetings on my calendar (ones I organize or accepted) on a day or over a date range.

    Args:
        date: Day to list: YYYY-MM-DD, 'today', 'tomorrow' or a weekday like 'next Friday'.
        end_date: Optional last day of a range (at most 31 days after date).
    """
    user = me(ctx)
    first = ctx.env.date(date)
    last = ctx.env.date(end_date) if end_date else first
    span = (dt.date.fromisoformat(last) - dt.date.fromisoformat(first)).days
    if span < 0:
        raise ToolError(f"argument 'end_date' ({last}) is before 'date' ({first})")
    if span > 31:
        raise ToolError(f"argument 'end_date': the range may cover at most 31 days; got {span}")
    return calendar_between(ctx, user, first, last)


@tool
def get_event(ctx: ToolContext, event_id: int) -> dict[str, Any]:
    """Details of an event I organize or am invited to, with every attendee's response.

    Args:
        event_id: Id of the event.
    """
    user, row = my_event(ctx, event_id)
    attendees = ctx.query(
        "SELECT invitee_name AS name, invitee_email AS email, response FROM event_invites WHERE event_id=? "
        "ORDER BY invitee_name, invitee_email",
        (event_id,),
    )
    return {
        "id": row["id"], "title": row["title"], "description": row["description"], "start": row["start"],
        "end": row["end"], "location": row["location"], "status": row["status"],
        "organizer": {"name": row["organizer_name"], "email": row["organizer_email"]},
        "my_role": "organizer" if row["organizer"] == user["username"] else "attendee",
        "my_response": row["my_response"], "attendees": attendees,
    }


@tool
def list_invites(ctx: ToolContext, status: Literal["pending", "accepted", "declined", "all"] = "pending",
                 date: str | None = None) -> list[dict[str, Any]]:
    """List meeting invitations sent to me: upcoming ones, or those on one day. Cancelled meetings show event_status 'cancelled'.

    Args:
        status: Which of my responses to include: 'pending', 'accepted', 'declined' or 'all'.
        date: Only invitations for meetings on this day (YYYY-MM-DD, 'tomorrow', 'next Monday', ...).
    """
    user = me(ctx)
    where = kit.Where("i.invitee_email = ?", params=[user["email"]])
    if status != "all":
        where.add("i.response = ?", status)
    if date is not None:
        day = ctx.env.date(date)
        where.add("e.start >= ? AND e.start <= ?", f"{day}T00:00", f"{day}T23:59")
    else:
        where.add("e.start >= ?", f"{ctx.env.today.isoformat()}T00:00")
    return [
        {"event_id": r["id"], "title": r["title"], "start": r["start"], "end": r["end"], "location": r["location"],
         "organizer": r["organizer"], "my_response": r["response"], "event_status": r["status"]}
        for r in ctx.query(
            "SELECT e.id, e.title, e.start, e.\"end\", e.location, e.status, u.name AS organizer, i.response "
            "FROM event_invites i JOIN calendar_events e ON e.id = i.event_id JOIN users u ON u.username = e.organizer "
            f"WHERE {where.sql} ORDER BY e.start, e.id LIMIT {MAX_LIST}",
            where.params,
        )
    ]


@tool
def respond_to_invite(ctx: ToolContext, event_id: int, response: Literal["accepted", "declined"]) -> dict[str, Any]:
    """Accept or decline a meeting invitation sent to me.

    Args:
        event_id: Id of the event I was invited to (from list_invites).
        response: 'accepted' or 'declined'.
    """
    user, row = my_event(ctx, event_id)
    if row["my_response"] is None:
        raise ToolError(f"argument 'event_id': you organize event {event_id}; only invitees respond to invitations")
    if row["status"] == "cancelled":
        raise ToolError(f"argument 'event_id': '{row['title']}' ({row['start']}) was cancelled by its organizer; "
                        "its invitation can no longer be answered")
    if row["start"][:10] < ctx.env.today.isoformat():
        raise ToolError(f"argument 'event_id': '{row['title']}' already took place on {row['start'][:10]}")
    if row["my_response"] == response:
        return {"event_id": event_id, "title": row["title"], "start": row["start"], "my_response": response,
                "note": f"you had already {response} this invitation"}
    ctx.db.execute(
        "UPDATE event_invites SET response=?, responded_at=? WHERE event_id=? AND invitee_email=?",
        (response, ctx.env.today.isoformat(), event_id, user["email"]),
    )
    return {"event_id": event_id, "title": row["title"], "start": row["start"], "my_response": response}


@tool
def create_event(ctx: ToolContext, title: str, date: str, start_time: str, end_time: str, location: str = "",
                 invitees: list[str] | None = None, description: str = "") -> dict[str, Any]:
    """Put a meeting on my calendar and invite people from my contacts.

    Args:
        title: Meeting title.
        date: Day of the meeting: YYYY-MM-DD, 'tomorrow', 'next Tuesday', ...
        start_time: Start time, 24-hour HH:MM (e.g. '14:00'); '2pm' also works.
        end_time: End time on the same day, after start_time.
        location: Room or call link, e.g. 'Room 4A' or 'Zoom'.
        invitees: Email addresses or exact contact names from my contacts.
        description: Optional agenda or notes.
    """
    user = me(ctx)
    clean_title = check_text(title, "title", 120)
    day = ctx.env.date(date)
    if day < ctx.env.today.isoformat():
        raise ToolError(f"argument 'date': {day} is in the past (today is {ctx.env.today.isoformat()})")
    start, end = parse_time(start_time, "start_time"), parse_time(end_time, "end_time")
    if end <= start:
        raise ToolError(f"argument 'end_time' ({end}) must be after 'start_time' ({start})")
    guests = resolve_recipients(ctx, user["username"], invitees or [], "invitees")
    if any(g["email"] == user["email"].lower() for g in guests):
        raise ToolError("argument 'invitees': you organize the meeting; do not invite yourself")
    cur = ctx.db.execute(
        "INSERT INTO calendar_events (organizer, title, description, start, \"end\", location, status, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, 'scheduled', ?)",
        (user["username"], clean_title, check_text(description, "description", 2000, required=False),
         f"{day}T{start}", f"{day}T{end}", check_text(location, "location", 120, required=False),
         ctx.env.today.isoformat()),
    )
    event_id = int(cur.lastrowid or 0)
    for guest in guests:
        ctx.db.execute(
            "INSERT INTO event_invites (event_id, invitee_email, invitee_name, response) VALUES (?, ?, ?, 'pending')",
            (event_id, guest["email"], guest["name"]),
        )
    return {"id": event_id, "title": clean_title, "start": f"{day}T{start}", "end": f"{day}T{end}",
            "location": location.strip(), "invited": [g["email"] for g in guests]}


@tool
def cancel_event(ctx: ToolContext, event_id: int) -> dict[str, Any]:
    """Cancel a meeting I organize (attendees see it as cancelled).

    Args:
        event_id: Id of the event.
    """
    user, row = my_event(ctx, event_id)
    if row["organizer"] != user["username"]:
        raise ToolError(f"argument 'event_id': only the organizer ({row['organizer_name']}) can cancel "
                        f"'{row['title']}'; decline the invitation instead")
    if row["status"] == "cancelled":
        raise ToolError(f"argument 'event_id': '{row['title']}' is already cancelled")
    if row["start"][:10] < ctx.env.today.isoformat():
        raise ToolError(f"argument 'event_id': '{row['title']}' already took place on {row['start'][:10]}")
    ctx.db.execute("UPDATE calendar_events SET status='cancelled' WHERE id=?", (event_id,))
    return {"id": event_id, "title": row["title"], "start": row["start"], "status": "cancelled"}
