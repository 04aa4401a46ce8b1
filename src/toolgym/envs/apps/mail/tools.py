"""Tools of the mail app: the logged-in user's folders, messages, contacts and calendar.

Mail dated after CURRENT_DATE has not arrived yet, so every mail tool sees only messages sent on or
before today. New messages are stamped today from 19:00 on, one minute apart, so their order is
deterministic. Reading a message never changes its read flag (mark_as_read does).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, tool

SYSTEM_FOLDER_ORDER = ("Inbox", "Sent", "Archive", "Deleted Items", "Junk Email")
MAX_LIST = 50
_EMAIL = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[a-z]{2,}$", re.IGNORECASE)
_TIME = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?$", re.IGNORECASE)


# -- shared lookups --------------------------------------------------------------------------------

def me(ctx: ToolContext) -> dict[str, Any]:
    """The logged-in user's directory row; mail tools need a mailbox."""
    username = ctx.env.require_user()
    row = ctx.one("SELECT username, name, email, has_mailbox FROM users WHERE username=?", (username,))
    if row is None:
        raise ToolError(f"the logged-in user {username!r} is not in the directory")
    if not row["has_mailbox"]:
        raise ToolError(f"user {username!r} has no mailbox in this organisation")
    return row


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


def summary(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"], "folder": row["folder"], "sender": row["sender_name"],
        "sender_address": row["sender_address"], "subject": row["subject"], "date": row["sent_at"],
        "read": bool(row["is_read"]), "attachments": row["attachment_count"],
    }


_SUMMARY_SQL = (
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


# -- folders and messages --------------------------------------------------------------------------

@tool
def list_folders(ctx: ToolContext) -> list[dict[str, Any]]:
    """List my mail folders with how many messages each holds and how many are unread."""
    owner = me(ctx)["username"]
    counts = {
        r["folder_id"]: r
        for r in ctx.query(
            "SELECT folder_id, COUNT(*) AS total, SUM(1 - is_read) AS unread FROM messages "
            "WHERE owner=? AND sent_at <= ? GROUP BY folder_id",
            (owner, cutoff(ctx)),
        )
    }
    return [
        {"name": f["name"], "kind": f["kind"], "total": counts.get(f["id"], {}).get("total", 0),
         "unread": counts.get(f["id"], {}).get("unread", 0)}
        for f in folder_list(ctx, owner)
    ]


@tool
def create_folder(ctx: ToolContext, name: str) -> dict[str, Any]:
    """Create a custom mail folder.

    Args:
        name: Folder name (at most 40 characters, unique among my folders).
    """
    owner = me(ctx)["username"]
    clean = check_text(name, "name", 40)
    if "/" in clean or "\\" in clean:
        raise ToolError("argument 'name': folder names cannot contain '/' or '\\'")
    if ctx.one("SELECT id FROM folders WHERE owner=? AND name=?", (owner, clean)):
        raise ToolError(f"argument 'name': you already have a folder named {clean!r}")
    ctx.db.execute(
        "INSERT INTO folders (owner, name, kind, created_at) VALUES (?, ?, 'custom', ?)",
        (owner, clean, ctx.env.today.isoformat()),
    )
    return {"name": clean, "kind": "custom", "created": True}


@tool
def list_messages(ctx: ToolContext, folder: str = "Inbox", unread_only: bool = False, limit: int = 20,
                  offset: int = 0) -> dict[str, Any]:
    """List messages in one of my folders, newest first.

    Args:
        folder: Folder name, e.g. 'Inbox', 'Sent', 'Archive' or a custom folder.
        unread_only: Only unread messages.
        limit: How many to return (1-50).
        offset: How many of the newest to skip, for paging.
    """
    owner = me(ctx)["username"]
    if not 1 <= limit <= MAX_LIST:
        raise ToolError(f"argument 'limit' must be between 1 and {MAX_LIST}; got {limit}")
    if offset < 0:
        raise ToolError(f"argument 'offset' must be 0 or more; got {offset}")
    target = folder_row(ctx, owner, folder)
    where = "m.owner=? AND m.folder_id=? AND m.sent_at <= ?" + (" AND m.is_read=0" if unread_only else "")
    params: list[Any] = [owner, target["id"], cutoff(ctx)]
    total = ctx.one(f"SELECT COUNT(*) AS n FROM messages m WHERE {where}", params)
    rows = ctx.query(f"{_SUMMARY_SQL} WHERE {where} ORDER BY m.sent_at DESC, m.id DESC LIMIT ? OFFSET ?",
                     [*params, limit, offset])
    return {"folder": target["name"], "total": total["n"] if total else 0, "messages": [summary(r) for r in rows]}


@tool
def search_messages(ctx: ToolContext, query: str | None = None, sender: str | None = None,
                    folder: str | None = None, unread_only: bool = False, limit: int = 20) -> dict[str, Any]:
    """Search all my folders (or one) for messages, newest first.

    Args:
        query: Words that must all appear in the subject or body (case-insensitive).
        sender: Part of the sender's name or email address.
        folder: Only search this folder.
        unread_only: Only unread messages.
        limit: How many to return (1-50).
    """
    owner = me(ctx)["username"]
    if not 1 <= limit <= MAX_LIST:
        raise ToolError(f"argument 'limit' must be between 1 and {MAX_LIST}; got {limit}")
    clauses = ["m.owner=?", "m.sent_at <= ?"]
    params: list[Any] = [owner, cutoff(ctx)]
    if query is not None:
        words = query.split()
        if not words:
            raise ToolError("argument 'query' is empty; leave it out to match every message")
        for word in words:
            clauses.append("(instr(lower(m.subject), ?) > 0 OR instr(lower(m.body), ?) > 0)")
            params += [word.lower(), word.lower()]
    if sender is not None:
        who = sender.strip().lower()
        if not who:
            raise ToolError("argument 'sender' is empty; give part of a name or address")
        clauses.append("(instr(lower(m.sender_name), ?) > 0 OR instr(lower(m.sender_address), ?) > 0)")
        params += [who, who]
    if folder is not None:
        clauses.append("m.folder_id=?")
        params.append(folder_row(ctx, owner, folder)["id"])
    if unread_only:
        clauses.append("m.is_read=0")
    where = " AND ".join(clauses)
    total = ctx.one(f"SELECT COUNT(*) AS n FROM messages m WHERE {where}", params)
    rows = ctx.query(f"{_SUMMARY_SQL} WHERE {where} ORDER BY m.sent_at DESC, m.id DESC LIMIT ?", [*params, limit])
    return {"total": total["n"] if total else 0, "messages": [summary(r) for r in rows]}


@tool
def read_message(ctx: ToolContext, message_id: int) -> dict[str, Any]:
    """Open one of my messages: full body, recipients and attachments. It does not mark it read.

    Args:
        message_id: Id of the message (from list_messages or search_messages).
    """
    owner = me(ctx)["username"]
    row = message_row(ctx, owner, message_id)
    files = ctx.query(
        "SELECT file_name, size_bytes FROM attachments WHERE message_id=? ORDER BY id", (message_id,)
    )
    return {
        "id": row["id"], "folder": row["folder"], "thread_id": row["thread_id"], "sender": row["sender_name"],
        "sender_address": row["sender_address"], "to": split_header(row["to_addresses"]),
        "cc": split_header(row["cc_addresses"]), "subject": row["subject"], "date": row["sent_at"],
        "read": bool(row["is_read"]), "importance": row["importance"], "body": row["body"],
        "in_reply_to": row["in_reply_to"],
        "attachments": [{"file_name": f["file_name"], "size_kb": round(f["size_bytes"] / 1024)} for f in files],
    }


@tool
def send_message(ctx: ToolContext, to: list[str], subject: str, body: str, cc: list[str] | None = None) -> dict[str, Any]:
    """Send a new email. Recipients must be in my contacts (email address or exact contact name).

    Args:
        to: Recipients: email addresses or exact contact names.
        subject: Subject line.
        body: Message text.
        cc: Optional copy recipients, also from my contacts.
    """
    owner = me(ctx)
    if not to:
        raise ToolError("argument 'to' needs at least one recipient")
    if len(to) + len(cc or []) > 20:
        raise ToolError("arguments 'to' and 'cc' together may name at most 20 recipients")
    recipients = resolve_recipients(ctx, owner["username"], to, "to")
    copies = resolve_recipients(ctx, owner["username"], cc or [], "cc")
    clean_subject = check_text(subject, "subject", 200)
    clean_body = check_text(body, "body", 10000)
    message_id = insert_message(ctx, owner, {
        "thread_id": "", "to_addresses": join_header([r["email"] for r in recipients]),
        "cc_addresses": join_header([c["email"] for c in copies]), "subject": clean_subject, "body": clean_body,
    })
    ctx.db.execute("UPDATE messages SET thread_id=? WHERE id=?", (f"th-m{message_id}", message_id))
    return {"id": message_id, "status": "sent", "to": [r["email"] for r in recipients],
            "cc": [c["email"] for c in copies], "subject": clean_subject}


@tool
def reply_to_message(ctx: ToolContext, message_id: int, body: str, reply_all: bool = False) -> dict[str, Any]:
    """Reply to one of my messages; the reply goes to its sender (and, with reply_all, everyone on it).

    Args:
        message_id: Id of the message to answer.
        body: Reply text.
        reply_all: Also copy the other recipients of the original.
    """
    owner = me(ctx)
    original = message_row(ctx, owner["username"], message_id)
    mine = original["sender_address"].lower() == owner["email"].lower()
    to = split_header(original["to_addresses"]) if mine else [original["sender_address"].lower()]
    if not mine and is_no_reply(original["sender_address"]):
        raise ToolError(
            f"argument 'message_id': message {message_id} is from {original['sender_address']}, "
            "an automated address that does not accept replies"
        )
    cc: list[str] = []
    if reply_all:
        everyone = split_header(original["to_addresses"]) + split_header(original["cc_addresses"])
        cc = [a for a in everyone if a not in to and a != owner["email"].lower()]
    subject = original["subject"]
    if not subject.lower().startswith("re:"):
        subject = f"Re: {subject}"
    new_id = insert_message(ctx, owner, {
        "thread_id": original["thread_id"], "to_addresses": join_header(to), "cc_addresses": join_header(cc),
        "subject": subject, "body": check_text(body, "body", 10000), "in_reply_to": message_id,
    })
    return {"id": new_id, "status": "sent", "to": sorted(set(to)), "cc": sorted(set(cc)), "subject": subject}


@tool
def forward_message(ctx: ToolContext, message_id: int, to: list[str], comment: str = "") -> dict[str, Any]:
    """Forward one of my messages, with its attachments, to people in my contacts.

    Args:
        message_id: Id of the message to forward.
        to: Recipients: email addresses or exact contact names from my contacts.
        comment: Optional note above the forwarded text.
    """
    owner = me(ctx)
    original = message_row(ctx, owner["username"], message_id)
    if not to:
        raise ToolError("argument 'to' needs at least one recipient")
    recipients = resolve_recipients(ctx, owner["username"], to, "to")
    note = check_text(comment, "comment", 10000, required=False)
    subject = original["subject"]
    if not subject.lower().startswith(("fw:", "fwd:")):
        subject = f"Fw: {subject}"
    quoted = (
        f"---------- Forwarded message ----------\nFrom: {original['sender_name']} <{original['sender_address']}>\n"
        f"Date: {original['sent_at']}\nSubject: {original['subject']}\n\n{original['body']}"
    )
    new_id = insert_message(ctx, owner, {
        "thread_id": original["thread_id"], "to_addresses": join_header([r["email"] for r in recipients]),
        "subject": subject, "body": f"{note}\n\n{quoted}" if note else quoted, "forwarded_from": message_id,
    })
    ctx.db.execute(
        "INSERT INTO attachments (message_id, file_name, size_bytes, content_type) "
        "SELECT ?, file_name, size_bytes, content_type FROM attachments WHERE message_id=? ORDER BY id",
        (new_id, message_id),
    )
    count = ctx.one("SELECT COUNT(*) AS n FROM attachments WHERE message_id=?", (new_id,))
    return {"id": new_id, "status": "sent", "to": [r["email"] for r in recipients], "subject": subject,
            "attachments": count["n"] if count else 0}


@tool
def move_message(ctx: ToolContext, message_id: int, folder: str) -> dict[str, Any]:
    """Move one of my messages to another folder.

    Args:
        message_id: Id of the message.
        folder: Name of the destination folder, e.g. 'Archive' or a custom folder.
    """
    owner = me(ctx)["username"]
    row = message_row(ctx, owner, message_id)
    target = folder_row(ctx, owner, folder)
    if row["folder_id"] == target["id"]:
        return {"id": message_id, "folder": target["name"], "moved": False, "note": "already in that folder"}
    ctx.db.execute("UPDATE messages SET folder_id=? WHERE id=?", (target["id"], message_id))
    return {"id": message_id, "from_folder": row["folder"], "folder": target["name"], "moved": True}


@tool
def mark_as_read(ctx: ToolContext, message_id: int) -> dict[str, Any]:
    """Mark one of my messages as read.

    Args:
        message_id: Id of the message.
    """
    owner = me(ctx)["username"]
    message_row(ctx, owner, message_id)
    ctx.db.execute("UPDATE messages SET is_read=1 WHERE id=?", (message_id,))
    return {"id": message_id, "read": True}


@tool
def mark_as_unread(ctx: ToolContext, message_id: int) -> dict[str, Any]:
    """Mark one of my messages as unread.

    Args:
        message_id: Id of the message.
    """
    owner = me(ctx)["username"]
    message_row(ctx, owner, message_id)
    ctx.db.execute("UPDATE messages SET is_read=0 WHERE id=?", (message_id,))
    return {"id": message_id, "read": False}


@tool
def delete_message(ctx: ToolContext, message_id: int) -> dict[str, Any]:
    """Delete one of my messages: it moves to Deleted Items.

    Args:
        message_id: Id of the message.
    """
    owner = me(ctx)["username"]
    row = message_row(ctx, owner, message_id)
    trash = folder_row(ctx, owner, "Deleted Items")
    if row["folder_id"] == trash["id"]:
        raise ToolError(f"argument 'message_id': message {message_id} is already in Deleted Items; "
                        "permanent deletion is not supported")
    ctx.db.execute("UPDATE messages SET folder_id=? WHERE id=?", (trash["id"], message_id))
    return {"id": message_id, "folder": "Deleted Items"}


@tool
def search_contacts(ctx: ToolContext, query: str = "") -> list[dict[str, Any]]:
    """Find people in my contacts by name, email or company; an empty query lists them all.

    Args:
        query: Words that must all appear in the contact's name, email or company.
    """
    owner = me(ctx)["username"]
    clauses, params = ["owner=?"], [owner]
    for word in query.split():
        clauses.append("instr(lower(name || ' ' || email || ' ' || company), ?) > 0")
        params.append(word.lower())
    rows = ctx.query(
        f"SELECT id, name, email, company, phone, is_favorite FROM contacts WHERE {' AND '.join(clauses)} "
        f"ORDER BY name, email LIMIT {MAX_LIST}",
        params,
    )
    return [{"name": r["name"], "email": r["email"], "company": r["company"], "phone": r["phone"],
             "favorite": bool(r["is_favorite"])} for r in rows]


# -- calendar --------------------------------------------------------------------------------------

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


def event_row(ctx: ToolContext, event_id: int, user: dict[str, Any]) -> dict[str, Any]:
    """An event I organize or am invited to."""
    row = ctx.one(
        "SELECT e.*, u.name AS organizer_name, u.email AS organizer_email, "
        "(SELECT response FROM event_invites i WHERE i.event_id = e.id AND i.invitee_email = ?) AS my_response "
        "FROM calendar_events e JOIN users u ON u.username = e.organizer WHERE e.id=?",
        (user["email"], event_id),
    )
    if row is None or (row["organizer"] != user["username"] and row["my_response"] is None):
        raise ToolError(f"argument 'event_id': there is no event {event_id} on your calendar or in your invitations")
    return row


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
    user = me(ctx)
    row = event_row(ctx, event_id, user)
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
    clauses = ["i.invitee_email = ?"]
    params: list[Any] = [user["email"]]
    if status != "all":
        clauses.append("i.response = ?")
        params.append(status)
    if date is not None:
        day = ctx.env.date(date)
        clauses.append("e.start >= ? AND e.start <= ?")
        params += [f"{day}T00:00", f"{day}T23:59"]
    else:
        clauses.append("e.start >= ?")
        params.append(f"{ctx.env.today.isoformat()}T00:00")
    return [
        {"event_id": r["id"], "title": r["title"], "start": r["start"], "end": r["end"], "location": r["location"],
         "organizer": r["organizer"], "my_response": r["response"], "event_status": r["status"]}
        for r in ctx.query(
            "SELECT e.id, e.title, e.start, e.\"end\", e.location, e.status, u.name AS organizer, i.response "
            "FROM event_invites i JOIN calendar_events e ON e.id = i.event_id JOIN users u ON u.username = e.organizer "
            f"WHERE {' AND '.join(clauses)} ORDER BY e.start, e.id LIMIT {MAX_LIST}",
            params,
        )
    ]


@tool
def respond_to_invite(ctx: ToolContext, event_id: int, response: Literal["accepted", "declined"]) -> dict[str, Any]:
    """Accept or decline a meeting invitation sent to me.

    Args:
        event_id: Id of the event I was invited to (from list_invites).
        response: 'accepted' or 'declined'.
    """
    user = me(ctx)
    row = event_row(ctx, event_id, user)
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
    user = me(ctx)
    row = event_row(ctx, event_id, user)
    if row["organizer"] != user["username"]:
        raise ToolError(f"argument 'event_id': only the organizer ({row['organizer_name']}) can cancel "
                        f"'{row['title']}'; decline the invitation instead")
    if row["status"] == "cancelled":
        raise ToolError(f"argument 'event_id': '{row['title']}' is already cancelled")
    if row["start"][:10] < ctx.env.today.isoformat():
        raise ToolError(f"argument 'event_id': '{row['title']}' already took place on {row['start'][:10]}")
    ctx.db.execute("UPDATE calendar_events SET status='cancelled' WHERE id=?", (event_id,))
    return {"id": event_id, "title": row["title"], "start": row["start"], "status": "cancelled"}


TOOLS = [
    list_folders, create_folder, list_messages, search_messages, read_message, send_message, reply_to_message,
    forward_message, move_message, mark_as_read, mark_as_unread, delete_message, search_contacts,
    list_events, get_event, list_invites, respond_to_invite, create_event, cancel_event,
]
