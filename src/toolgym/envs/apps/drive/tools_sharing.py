"""Drive tools over sharing: files shared with me, people to share with, shares on files and folders,
and share links."""

from __future__ import annotations

from typing import Any

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.drive.tool_common import (
    LINK_BASE,
    RANK,
    ROLE_OF_RANK,
    Role,
    check_limit,
    cutoff,
    direct_share,
    find_person,
    grant,
    inherited_access,
    link_token,
    load_folder,
    log,
    me,
    my_file_to_change,
    now,
    visible_link,
)


@tool
def list_shared_with_me(ctx: ToolContext, since: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """Files and folders other people shared with me directly, most recently shared first.

    Args:
        since: Only shares made on or after this day (YYYY-MM-DD, 'yesterday', '7 days ago', 'last Monday').
        limit: How many to return (1-50).
    """
    user = me(ctx)["username"]
    check_limit(limit)
    cut = cutoff(ctx)
    first = f"{ctx.env.date(since)}T00:00" if since is not None else ""
    rows = ctx.query(
        "SELECT p.id, p.file_id, p.folder_id, p.role, p.granted_at, s.name AS shared_by, "
        "COALESCE(f.name, d.name) AS name, COALESCE(file_owner.name, folder_owner.name) AS owner, d.path AS folder_path "
        "FROM permissions p JOIN users s ON s.username = p.granted_by "
        "LEFT JOIN files f ON f.id = p.file_id LEFT JOIN users file_owner ON file_owner.username = f.owner "
        "LEFT JOIN folders d ON d.id = p.folder_id LEFT JOIN users folder_owner ON folder_owner.username = d.owner "
        "WHERE p.grantee = ? AND p.granted_at <= ? AND p.granted_at >= ? "
        "AND (p.file_id IS NULL OR (f.created_at <= ? AND (f.trashed_at IS NULL OR f.trashed_at > ?))) "
        f"ORDER BY p.granted_at DESC, p.id DESC LIMIT {int(limit)}",
        (user, cut, first, cut, cut),
    )
    return [
        {"type": "file" if r["file_id"] else "folder", "id": r["file_id"] or r["folder_id"], "name": r["name"],
         **({"path": r["folder_path"]} if r["folder_id"] else {}), "owner": r["owner"], "my_role": r["role"],
         "shared_by": r["shared_by"], "shared_at": r["granted_at"]}
        for r in rows
    ]


@tool
def search_people(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find people in the company directory by name, username or email, to share with them.

    Args:
        query: Words that must all appear in the person's name, username or email.
    """
    me(ctx)
    words = query.split()
    if not words:
        raise ToolError("argument 'query' is empty; give part of a name, e.g. 'Karen'")
    where = kit.Where()
    for word in words:
        where.add("instr(lower(name || ' ' || username || ' ' || email), ?) > 0", word.lower())
    return ctx.query(
        f"SELECT name, username, email FROM users WHERE {where.sql} ORDER BY name, username LIMIT 20",
        where.params,
    )


def _file_and_person(ctx: ToolContext, file_id: int, username: str, action: str,
                     owner_says: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Me, a file I may share (as its owner or an editor) and the person to share it with or unshare, who
    must not be its owner (`owner_says` ends the error that says they are: ' already')."""
    user, row = my_file_to_change(ctx, file_id, "editor", action)
    person = find_person(ctx, username, "username")
    if person["username"] == row["owner"]:
        raise ToolError(f"argument 'username': {person['name']} owns '{row['name']}'{owner_says}")
    return user, row, person


@tool
def share_file(ctx: ToolContext, file_id: int, username: str, role: Role) -> dict[str, Any]:
    """Share a file with a person, or change their role on it. Needs owner or editor access.

    Args:
        file_id: Id of the file.
        username: Who to share with: a username such as 'karen.thomas' (an email address or full name also works).
        role: 'viewer' (read-only), 'commenter' (read and comment) or 'editor' (read and change).
    """
    user, row, person = _file_and_person(ctx, file_id, username, "share it", " already")
    if person["username"] == user:
        raise ToolError("argument 'username': you cannot share a file with yourself")
    direct = direct_share(ctx, "file_id", file_id, person["username"])
    inherited, via = inherited_access(ctx, row["folder_id"], person["username"])
    if direct is None and inherited >= RANK[role]:
        return {"file_id": file_id, "name": row["name"], "shared_with": person["name"], "changed": False,
                "note": f"{person['name']} already has {ROLE_OF_RANK[inherited]} access through shared folder {via}"}
    at = now(ctx)
    outcome = grant(ctx, "file_id", file_id, person["username"], role, user, at)
    if outcome == "same":
        return {"file_id": file_id, "name": row["name"], "shared_with": person["name"], "role": role,
                "changed": False, "note": f"{person['name']} already is a {role}"}
    log(ctx, user, "share", at, file_id=file_id, detail=f"{person['name']} as {role}")
    return {"file_id": file_id, "name": row["name"], "shared_with": person["name"],
            "username": person["username"], "role": role, "changed": True}


@tool
def unshare_file(ctx: ToolContext, file_id: int, username: str) -> dict[str, Any]:
    """Remove a person's access to a file that was shared with them directly. Needs owner or editor access.

    Args:
        file_id: Id of the file.
        username: Whose access to remove: username (an email address or full name also works).
    """
    user, row, person = _file_and_person(ctx, file_id, username, "change its sharing", "; an owner cannot be removed")
    direct = direct_share(ctx, "file_id", file_id, person["username"])
    if direct is None:
        inherited, via = inherited_access(ctx, row["folder_id"], person["username"])
        if inherited:
            raise ToolError(f"{person['name']} gets access to '{row['name']}' from shared folder {via}; "
                            "unshare that folder instead")
        raise ToolError(f"argument 'username': '{row['name']}' is not shared with {person['name']}")
    ctx.db.execute("DELETE FROM permissions WHERE id=?", (direct["id"],))
    log(ctx, user, "unshare", now(ctx), file_id=file_id, detail=f"{person['name']} (was {direct['role']})")
    return {"file_id": file_id, "name": row["name"], "removed": person["name"], "was": direct["role"]}


@tool
def share_folder(ctx: ToolContext, username: str, role: Role, folder_id: int | None = None,
                 folder_path: str | None = None) -> dict[str, Any]:
    """Share a folder, and so everything in it, with a person. Needs owner or editor access to the folder.

    Args:
        username: Who to share with: a username such as 'karen.thomas' (an email address or full name also works).
        role: 'viewer' (read-only), 'commenter' (read and comment) or 'editor' (read and change).
        folder_id: Id of the folder.
        folder_path: Or its path in my Drive, e.g. '/Finance/Q2 Invoices'.
    """
    user = me(ctx)["username"]
    folder = load_folder(ctx, user, folder_id, folder_path)
    if folder["parent_id"] is None:
        raise ToolError("you cannot share your whole Drive; share a folder or a file in it")
    if folder["rank"] < RANK["editor"]:
        raise ToolError(f"you have {ROLE_OF_RANK[folder['rank']]} access to folder {folder['path']!r}; "
                        "only its owner or an editor can share it")
    person = find_person(ctx, username, "username")
    if person["username"] == user:
        raise ToolError("argument 'username': you cannot share a folder with yourself")
    if person["username"] == folder["owner"]:
        raise ToolError(f"argument 'username': {person['name']} owns folder {folder['path']!r} already")
    inherited, via = (0, None)
    if folder["parent_id"] is not None:
        inherited, via = inherited_access(ctx, folder["parent_id"], person["username"])
    direct = direct_share(ctx, "folder_id", folder["id"], person["username"])
    if direct is None and inherited >= RANK[role]:
        return {"folder_id": folder["id"], "path": folder["path"], "shared_with": person["name"], "changed": False,
                "note": f"{person['name']} already has {ROLE_OF_RANK[inherited]} access through folder {via}"}
    at = now(ctx)
    outcome = grant(ctx, "folder_id", folder["id"], person["username"], role, user, at)
    if outcome == "same":
        return {"folder_id": folder["id"], "path": folder["path"], "shared_with": person["name"], "role": role,
                "changed": False, "note": f"{person['name']} already is a {role}"}
    log(ctx, user, "share", at, folder_id=folder["id"], detail=f"{person['name']} as {role}")
    return {"folder_id": folder["id"], "path": folder["path"], "shared_with": person["name"],
            "username": person["username"], "role": role, "changed": True}


@tool
def unshare_folder(ctx: ToolContext, username: str, folder_id: int | None = None,
                   folder_path: str | None = None) -> dict[str, Any]:
    """Remove a person's access to a folder that was shared with them. Needs owner or editor access.

    Args:
        username: Whose access to remove: username (an email address or full name also works).
        folder_id: Id of the folder.
        folder_path: Or its path in my Drive.
    """
    user = me(ctx)["username"]
    folder = load_folder(ctx, user, folder_id, folder_path)
    if folder["rank"] < RANK["editor"]:
        raise ToolError(f"you have {ROLE_OF_RANK[folder['rank']]} access to folder {folder['path']!r}; "
                        "only its owner or an editor can change its sharing")
    person = find_person(ctx, username, "username")
    direct = direct_share(ctx, "folder_id", folder["id"], person["username"])
    if direct is None:
        raise ToolError(f"argument 'username': folder {folder['path']!r} is not shared with {person['name']}")
    ctx.db.execute("DELETE FROM permissions WHERE id=?", (direct["id"],))
    log(ctx, user, "unshare", now(ctx), folder_id=folder["id"], detail=f"{person['name']} (was {direct['role']})")
    return {"folder_id": folder["id"], "path": folder["path"], "removed": person["name"], "was": direct["role"]}


@tool
def create_share_link(ctx: ToolContext, file_id: int, role: Role = "viewer") -> dict[str, Any]:
    """Turn on 'anyone with the link' access to a file (or change that link's role). Needs owner or editor access.

    Args:
        file_id: Id of the file.
        role: What anyone with the link may do: 'viewer', 'commenter' or 'editor'.
    """
    user, row = my_file_to_change(ctx, file_id, "editor", "create a share link for it")
    existing = ctx.one("SELECT * FROM share_links WHERE file_id=?", (file_id,))
    at = now(ctx)
    if existing is None:
        link_id = int(ctx.one("SELECT COALESCE(MAX(id), 0) + 1 AS n FROM share_links")["n"])  # type: ignore[index]
        token = link_token(link_id, file_id)
        ctx.db.execute("INSERT INTO share_links (id, file_id, token, role, created_by, created_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (link_id, file_id, token, role, user, at))
    else:
        token = existing["token"]
        if existing["created_at"] <= cutoff(ctx) and existing["role"] == role:
            return {"file_id": file_id, "url": LINK_BASE + token, "role": role, "changed": False,
                    "note": "the file already has a link with this role"}
        ctx.db.execute("UPDATE share_links SET role=?, created_by=?, created_at=? WHERE id=?",
                       (role, user, at, existing["id"]))
    log(ctx, user, "link", at, file_id=file_id, detail=f"anyone with the link as {role}")
    return {"file_id": file_id, "name": row["name"], "url": LINK_BASE + token, "role": role, "changed": True}


@tool
def disable_share_link(ctx: ToolContext, file_id: int) -> dict[str, Any]:
    """Turn off 'anyone with the link' access to a file. Needs owner or editor access.

    Args:
        file_id: Id of the file.
    """
    user, row = my_file_to_change(ctx, file_id, "editor", "change its sharing")
    link = visible_link(ctx, file_id)
    if link is None:
        raise ToolError(f"argument 'file_id': '{row['name']}' has no share link")
    ctx.db.execute("DELETE FROM share_links WHERE id=?", (link["id"],))
    log(ctx, user, "unlink", now(ctx), file_id=file_id)
    return {"file_id": file_id, "name": row["name"], "link": None}
