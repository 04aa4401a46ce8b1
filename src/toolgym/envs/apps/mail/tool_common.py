"""What the mail tools share: the logged-in mailbox, folders and messages visible today, recipients
resolved from names or addresses, new-message stamps, and calendar lookups."""

from __future__ import annotations

import re
from typing import Any

from toolgym.envs import ToolContext, ToolError, kit

SYSTEM_FOLDER_ORDER = ("Inbox", "Sent", "Archive", "Deleted Items", "Junk Email")
MAX_LIST = 50
_EMAIL = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[a-z]{2,}$", re.IGNORECASE)
_TIME = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?$", re.IGNORECASE)


def me(ctx: ToolContext) -> dict[str, Any]:
    """The logged-in user's directory row; mail tools need a mailbox."""
    return kit.directory_member(ctx, "username, name, email", "has_mailbox", "mailbox")


def cutoff(ctx: ToolContext) -> str:
    """Latest timestamp visible today: mail dated later has not arrived yet."""
    return f"{ctx.env.today.isoformat()}T23:59"


def folder_row(ctx: ToolContext, owner: str, name: str, argument: str = "folder") -> dict[str, Any]:
    row = ctx.one("SELECT id, name, kind FROM folders WHERE owner=? AND name=?", (owner, name.strip()))
    if row is None:
        names = ", ".join(f["name"] for f in folder_list(ctx, owner))
        raise ToolError(f"argument '{argument}': you have no folder named {name!r}; your folders are: {names}")
    return row


def folder_list(ctx: ToolContext, owner: str) -> list[dict[str, Any]]:
    rows = ctx.query("SELECT id, name, kind FROM folders WHERE owner=? ORDER BY name", (owner,))
    order = {name.lower(): i for i, name in enumerate(SYSTEM_FOLDER_ORDER)}
    return sorted(rows, key=lambda r: (order.get(r["name"].lower(), len(order)), r["name"].lower()))


def message_row(ctx: ToolContext, owner: str, message_id: int) -> dict[str, Any]:
    row = ctx.one(
        "SELECT m.*, f.name AS folder FROM messages m JOIN folders f ON f.id = m.folder_id "
        "WHERE m.id=? AND m.owner=? AND m.sent_at <= ?",
        (message_id, owner, cutoff(ctx)),
    )
    if row is None:
        raise ToolError(f"argument 'message_id': there is no message with id {message_id} in your mailbox")
    return row


def my_message(ctx: ToolContext, message_id: int) -> tuple[str, dict[str, Any]]:
    """The logged-in user's username and one message of their mailbox."""
    owner = me(ctx)["username"]
    return owner, message_row(ctx, owner, message_id)


def summary(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"], "folder": row["folder"], "sender": row["sender_name"],
        "sender_address": row["sender_address"], "subject": row["subject"], "date": row["sent_at"],
        "read": bool(row["is_read"]), "attachments": row["attachment_count"],
    }


SUMMARY_SQL = (
    "SELECT m.id, f.name AS folder, m.sender_name, m.sender_address, m.subject, m.sent_at, m.is_read, "
    "(SELECT COUNT(*) FROM attachments a WHERE a.message_id = m.id) AS attachment_count "
    "FROM messages m JOIN folders f ON f.id = m.folder_id "
)


def split_header(header: str) -> list[str]:
    return [a for a in (part.strip() for part in header.split(",")) if a]


def join_header(addresses: list[str]) -> str:
    return ", ".join(sorted({a.lower() for a in addresses}))


def resolve_recipients(ctx: ToolContext, owner: str, values: list[str], argument: str) -> list[dict[str, str]]:
    """Contacts for addresses or exact contact names; anyone else is refused (contacts-only policy)."""
    resolved: dict[str, dict[str, str]] = {}
    for raw in values:
        value = raw.strip()
        if not value:
            raise ToolError(f"argument '{argument}': empty recipient; give an email address or a contact name")
        if "@" in value:
            if not _EMAIL.match(value):
                raise ToolError(f"argument '{argument}': {value!r} is not a valid email address")
            row = ctx.one("SELECT name, email FROM contacts WHERE owner=? AND lower(email)=lower(?)", (owner, value))
            if row is None:
                raise ToolError(
                    f"argument '{argument}': {value} is not in your contacts; new messages and invitations may "
                    "only be addressed to your contacts (search_contacts lists them)"
                )
        else:
            rows = ctx.query(
                "SELECT name, email FROM contacts WHERE owner=? AND lower(name)=lower(?) ORDER BY email", (owner, value)
            )
            if not rows:
                raise ToolError(
                    f"argument '{argument}': no contact is named {value!r}; use search_contacts to find the address"
                )
            if len(rows) > 1:
                options = ", ".join(r["email"] for r in rows)
                raise ToolError(f"argument '{argument}': several contacts are named {value!r}: {options}; give the address")
            row = rows[0]
        resolved[row["email"].lower()] = {"name": row["name"], "email": row["email"].lower()}
    return [resolved[k] for k in sorted(resolved)]


def new_stamp(ctx: ToolContext, owner: str) -> str:
    """Today at 19:00 plus one minute per message already sent this evening: deterministic order."""
    today = ctx.env.today.isoformat()
    count = ctx.one(
        "SELECT COUNT(*) AS n FROM messages WHERE owner=? AND sent_at >= ? AND sent_at <= ?",
        (owner, f"{today}T19:00", f"{today}T23:59"),
    )
    minutes = min(int(count["n"]) if count else 0, 59)
    return f"{today}T19:{minutes:02d}"


def check_text(value: str, argument: str, limit: int, required: bool = True) -> str:
    text = value.strip()
    if required and not text:
        raise ToolError(f"argument '{argument}' must not be empty")
    if len(text) > limit:
        raise ToolError(f"argument '{argument}' is too long ({len(text)} characters; at most {limit})")
    return text


def is_no_reply(address: str) -> bool:
    local = address.split("@", 1)[0].lower()
    return "noreply" in local or "no-reply" in local


def insert_message(ctx: ToolContext, owner: dict[str, Any], fields: dict[str, Any]) -> int:
    sent = folder_row(ctx, owner["username"], "Sent")
    row = {
        "owner": owner["username"], "folder_id": sent["id"], "sender_name": owner["name"],
        "sender_address": owner["email"], "sent_at": new_stamp(ctx, owner["username"]), "is_read": 1,
        "importance": "normal", "cc_addresses": "", "in_reply_to": None, "forwarded_from": None, **fields,
    }
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    cur = ctx.db.execute(f"INSERT INTO messages ({columns}) VALUES ({marks})", tuple(row.values()))
    return int(cur.lastrowid or 0)


def parse_time(text: str, argument: str) -> str:
    """'14:00', '9:30', '2pm', '2:30 pm' → 'HH:MM'."""
    match = _TIME.match(text.strip())
    if match:
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        suffix = (match.group(3) or "").lower().replace(".", "")
        if suffix == "pm" and hour < 12:
            hour += 12
        elif suffix == "am" and hour == 12:
            hour = 0
        if (suffix or match.group(2)) and hour < 24 and minute < 60:
            return f"{hour:02d}:{minute:02d}"
    raise ToolError(f"argument '{argument}': cannot read time {text!r}; use 24-hour HH:MM such as '14:30'")


def my_event(ctx: ToolContext, event_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The logged-in user and an event they organize or are invited to."""
    user = me(ctx)
    row = ctx.one(
        "SELECT e.*, u.name AS organizer_name, u.email AS organizer_email, "
        "(SELECT response FROM event_invites i WHERE i.event_id = e.id AND i.invitee_email = ?) AS my_response "
        "FROM calendar_events e JOIN users u ON u.username = e.organizer WHERE e.id=?",
        (user["email"], event_id),
    )
    if row is None or (row["organizer"] != user["username"] and row["my_response"] is None):
        raise ToolError(f"argument 'event_id': there is no event {event_id} on your calendar or in your invitations")
    return user, row


def calendar_between(ctx: ToolContext, user: dict[str, Any], first: str, last: str) -> list[dict[str, Any]]:
    """Meetings I organize or accepted that start between two ISO dates (inclusive), scheduled only."""
    return ctx.query(
        "SELECT e.id, e.title, e.start, e.\"end\", e.location, u.name AS organizer, "
        "CASE WHEN e.organizer = ? THEN 'organizer' ELSE 'attendee' END AS my_role "
        "FROM calendar_events e JOIN users u ON u.username = e.organizer "
        "WHERE e.status = 'scheduled' AND e.start >= ? AND e.start <= ? AND (e.organizer = ? OR EXISTS ("
        "  SELECT 1 FROM event_invites i WHERE i.event_id = e.id AND i.invitee_email = ? AND i.response = 'accepted')) "
        f"ORDER BY e.start, e.id LIMIT {MAX_LIST}",
        (user["username"], f"{first}T00:00", f"{last}T23:59", user["username"], user["email"]),
    )
