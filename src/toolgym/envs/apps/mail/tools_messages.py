"""Mail tools over folders, messages and contacts: list, search, read, send, reply, forward, move, mark
and delete."""

from __future__ import annotations

from typing import Any

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.mail.tool_common import (
    MAX_LIST,
    SUMMARY_SQL,
    check_text,
    cutoff,
    folder_list,
    folder_row,
    insert_message,
    is_no_reply,
    join_header,
    me,
    message_row,
    my_message,
    resolve_recipients,
    split_header,
    summary,
)


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
    rows = ctx.query(f"{SUMMARY_SQL} WHERE {where} ORDER BY m.sent_at DESC, m.id DESC LIMIT ? OFFSET ?",
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
    where = kit.Where("m.owner=?", "m.sent_at <= ?", params=[owner, cutoff(ctx)])
    if query is not None:
        words = query.split()
        if not words:
            raise ToolError("argument 'query' is empty; leave it out to match every message")
        for word in words:
            where.add("(instr(lower(m.subject), ?) > 0 OR instr(lower(m.body), ?) > 0)", word.lower(), word.lower())
    if sender is not None:
        who = sender.strip().lower()
        if not who:
            raise ToolError("argument 'sender' is empty; give part of a name or address")
        where.add("(instr(lower(m.sender_name), ?) > 0 OR instr(lower(m.sender_address), ?) > 0)", who, who)
    if folder is not None:
        where.add("m.folder_id=?", folder_row(ctx, owner, folder)["id"])
    if unread_only:
        where.add("m.is_read=0")
    total = ctx.one(f"SELECT COUNT(*) AS n FROM messages m WHERE {where.sql}", where.params)
    rows = ctx.query(f"{SUMMARY_SQL} WHERE {where.sql} ORDER BY m.sent_at DESC, m.id DESC LIMIT ?",
                     [*where.params, limit])
    return {"total": total["n"] if total else 0, "messages": [summary(r) for r in rows]}


@tool
def read_message(ctx: ToolContext, message_id: int) -> dict[str, Any]:
    """Open one of my messages: full body, recipients and attachments. It does not mark it read.

    Args:
        message_id: Id of the message (from list_messages or search_messages).
    """
    _, row = my_message(ctx, message_id)
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
    owner, row = my_message(ctx, message_id)
    target = folder_row(ctx, owner, folder)
    if row["folder_id"] == target["id"]:
        return {"id": message_id, "folder": target["name"], "moved": False, "note": "already in that folder"}
    ctx.db.execute("UPDATE messages SET folder_id=? WHERE id=?", (target["id"], message_id))
    return {"id": message_id, "from_folder": row["folder"], "folder": target["name"], "moved": True}


def _set_read(ctx: ToolContext, message_id: int, *, read: bool) -> dict[str, Any]:
    message_row(ctx, me(ctx)["username"], message_id)  # mine, or a ToolError
    ctx.db.execute("UPDATE messages SET is_read=? WHERE id=?", (int(read), message_id))
    return {"id": message_id, "read": read}


@tool
def mark_as_read(ctx: ToolContext, message_id: int) -> dict[str, Any]:
    """Mark one of my messages as read.

    Args:
        message_id: Id of the message.
    """
    return _set_read(ctx, message_id, read=True)


@tool
def mark_as_unread(ctx: ToolContext, message_id: int) -> dict[str, Any]:
    """Mark one of my messages as unread.

    Args:
        message_id: Id of the message.
    """
    return _set_read(ctx, message_id, read=False)


@tool
def delete_message(ctx: ToolContext, message_id: int) -> dict[str, Any]:
    """Delete one of my messages: it moves to Deleted Items.

    Args:
        message_id: Id of the message.
    """
    owner, row = my_message(ctx, message_id)
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
    where = kit.Where("owner=?", params=[owner])
    for word in query.split():
        where.add("instr(lower(name || ' ' || email || ' ' || company), ?) > 0", word.lower())
    rows = ctx.query(
        f"SELECT id, name, email, company, phone, is_favorite FROM contacts WHERE {where.sql} "
        f"ORDER BY name, email LIMIT {MAX_LIST}",
        where.params,
    )
    return [{"name": r["name"], "email": r["email"], "company": r["company"], "phone": r["phone"],
             "favorite": bool(r["is_favorite"])} for r in rows]
