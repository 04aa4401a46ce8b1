"""Drive tools over a file's history: versions, comments and activity, restoring a version, commenting."""

from __future__ import annotations

from typing import Any

from toolgym.envs import ToolContext, ToolError, tool
from toolgym.envs.apps.drive.tool_common import (
    check_limit,
    cutoff,
    human_size,
    load_file,
    log,
    me,
    my_file_to_change,
    now,
    storage_used,
)


@tool
def list_file_versions(ctx: ToolContext, file_id: int) -> dict[str, Any]:
    """The version history of a file, newest first: number, size, author and date of each version.

    Args:
        file_id: Id of the file.
    """
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user, trashed=None)
    versions = ctx.query(
        "SELECT v.version_number, v.size_bytes, u.name AS author, v.created_at, v.restored_from "
        "FROM file_versions v JOIN users u ON u.username = v.author WHERE v.file_id=? AND v.created_at <= ? "
        "ORDER BY v.version_number DESC",
        (file_id, cutoff(ctx)),
    )
    return {
        "file_id": file_id, "name": row["name"], "current_version": row["version_number"],
        "versions": [{"version": v["version_number"], "size": human_size(v["size_bytes"]), "author": v["author"],
                      "date": v["created_at"],
                      **({"restored_from": v["restored_from"]} if v["restored_from"] else {})} for v in versions],
    }


@tool
def list_file_comments(ctx: ToolContext, file_id: int) -> list[dict[str, Any]]:
    """Comments on a file, oldest first.

    Args:
        file_id: Id of the file.
    """
    user = me(ctx)["username"]
    load_file(ctx, file_id, user, trashed=None)
    rows = ctx.query(
        "SELECT c.id, u.name AS author, c.body, c.created_at, c.resolved FROM comments c "
        "JOIN users u ON u.username = c.author WHERE c.file_id=? AND c.created_at <= ? ORDER BY c.created_at, c.id",
        (file_id, cutoff(ctx)),
    )
    return [{"id": r["id"], "author": r["author"], "date": r["created_at"], "text": r["body"],
             "resolved": bool(r["resolved"])} for r in rows]


@tool
def get_file_activity(ctx: ToolContext, file_id: int, limit: int = 20) -> list[dict[str, Any]]:
    """What happened to a file (uploads, edits, shares, comments, moves...), newest first.

    Args:
        file_id: Id of the file.
        limit: How many events to return (1-50).
    """
    user = me(ctx)["username"]
    check_limit(limit)
    load_file(ctx, file_id, user, trashed=None)
    rows = ctx.query(
        "SELECT a.occurred_at, u.name AS actor, a.action, a.detail FROM activity a JOIN users u ON u.username = a.actor "
        f"WHERE a.file_id=? AND a.occurred_at <= ? ORDER BY a.occurred_at DESC, a.id DESC LIMIT {int(limit)}",
        (file_id, cutoff(ctx)),
    )
    return [{"date": r["occurred_at"], "actor": r["actor"], "action": r["action"],
             **({"detail": r["detail"]} if r["detail"] else {})} for r in rows]


@tool
def restore_file_version(ctx: ToolContext, file_id: int, version_number: int) -> dict[str, Any]:
    """Make an older version of a file current again; this adds a new version (history is kept).

    Args:
        file_id: Id of the file.
        version_number: The version to bring back (see list_file_versions).
    """
    user, row = my_file_to_change(ctx, file_id, "editor", "restore its versions")
    cut = cutoff(ctx)
    versions = ctx.query("SELECT version_number, size_bytes FROM file_versions WHERE file_id=? AND created_at <= ? "
                         "ORDER BY version_number", (file_id, cut))
    chosen = next((v for v in versions if v["version_number"] == version_number), None)
    if chosen is None:
        numbers = ", ".join(str(v["version_number"]) for v in versions)
        raise ToolError(f"argument 'version_number': '{row['name']}' has no version {version_number}; "
                        f"its versions are {numbers}")
    if version_number == row["version_number"]:
        raise ToolError(f"argument 'version_number': version {version_number} already is the current version "
                        f"of '{row['name']}'")
    owner = ctx.one("SELECT quota_bytes FROM users WHERE username=?", (row["owner"],))
    used, _ = storage_used(ctx, row["owner"])
    if owner and used - row["size_bytes"] + chosen["size_bytes"] > owner["quota_bytes"]:
        raise ToolError(f"not enough storage in {row['owner_name']}'s Drive to restore version {version_number} "
                        f"({human_size(chosen['size_bytes'])})")
    top = ctx.one("SELECT MAX(version_number) AS n FROM file_versions WHERE file_id=?", (file_id,))
    new_number = int(top["n"] if top else 0) + 1
    at = now(ctx)
    ctx.db.execute(
        "INSERT INTO file_versions (file_id, version_number, size_bytes, author, created_at, restored_from) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (file_id, new_number, chosen["size_bytes"], user, at, version_number),
    )
    log(ctx, user, "restore_version", at, file_id=file_id,
        detail=f"version {version_number} restored as version {new_number}")
    return {"file_id": file_id, "name": row["name"], "restored_version": version_number,
            "new_version": new_number, "size": human_size(chosen["size_bytes"])}


@tool
def comment_on_file(ctx: ToolContext, file_id: int, text: str) -> dict[str, Any]:
    """Add a comment to a file. Needs commenter, editor or owner access.

    Args:
        file_id: Id of the file.
        text: The comment.
    """
    user, row = my_file_to_change(ctx, file_id, "commenter", "comment on it")
    body = " ".join(text.split())
    if not body:
        raise ToolError("argument 'text' must not be empty")
    if len(body) > 2000:
        raise ToolError(f"argument 'text' is too long ({len(body)} characters; at most 2000)")
    at = now(ctx)
    cur = ctx.db.execute("INSERT INTO comments (file_id, author, body, created_at, resolved) VALUES (?, ?, ?, ?, 0)",
                         (file_id, user, body, at))
    log(ctx, user, "comment", at, file_id=file_id)
    return {"id": int(cur.lastrowid or 0), "file_id": file_id, "name": row["name"], "text": body}
