"""Drive tools that find and change files: browse and search, details, storage, the trash, folders,
moving, renaming, copying, trashing and restoring."""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.drive.tool_common import (
    FILE_COLUMNS,
    KIND_MIMES,
    LINK_BASE,
    MAX_LIST,
    RANK,
    ROLE_OF_RANK,
    FileKind,
    access_list,
    accessible_files,
    check_limit,
    check_name,
    cutoff,
    find_person,
    human_size,
    load_file,
    load_folder,
    log,
    me,
    my_file_to_change,
    name_taken,
    now,
    storage_used,
    summary,
    visible_link,
)


@tool
def list_drive_folder(ctx: ToolContext, path: str | None = None, folder_id: int | None = None) -> dict[str, Any]:
    """List the subfolders and files of a Drive folder: one of mine by path, or any folder I can open by id.

    Args:
        path: Path in my Drive, e.g. '/' (the top of My Drive), '/Finance' or '/Finance/Invoices'.
        folder_id: Id of a folder (also works for folders others shared with me). Give path or folder_id.
    """
    user = me(ctx)["username"]
    folder = load_folder(ctx, user, folder_id, path, "folder_id", "path", default_root=True)
    subfolders = ctx.query(
        "SELECT id, name, path FROM folders WHERE parent_id=? AND created_at <= ? ORDER BY lower(name), id",
        (folder["id"], cutoff(ctx)),
    )
    cut = cutoff(ctx)
    files = ctx.query(
        FILE_COLUMNS.format(rank="", source="files f")
        + " AND f.folder_id = ? AND (f.trashed_at IS NULL OR f.trashed_at > ?) ORDER BY lower(f.name), f.id LIMIT ?",
        (cut, cut, folder["id"], cut, MAX_LIST),
    )
    direct = {r["file_id"]: RANK[r["role"]] for r in ctx.query(
        "SELECT p.file_id, p.role FROM permissions p JOIN files f ON f.id = p.file_id "
        "WHERE f.folder_id = ? AND p.grantee = ? AND p.granted_at <= ?", (folder["id"], user, cut))}
    for row in files:  # everything in a folder shares its owner; a direct share can raise my role on one file
        row["rank"] = max(folder["rank"], direct.get(row["id"], 0))
    return {
        "folder": {"id": folder["id"], "path": folder["path"], "owner": folder["owner_name"],
                   "my_role": ROLE_OF_RANK[folder["rank"]]},
        "folders": subfolders,
        "files": [summary(r) for r in files],
    }


@tool
def search_files(ctx: ToolContext, query: str | None = None, type: FileKind | None = None,
                 owner: str | None = None, modified_by: str | None = None, modified_after: str | None = None,
                 modified_before: str | None = None, sort_by: Literal["modified", "size", "name"] = "modified",
                 limit: int = 20) -> dict[str, Any]:
    """Search every file I can open (mine and shared with me; not the trash). Newest change first by default.

    Args:
        query: Words that must all appear in the file name (case-insensitive), e.g. 'Q2 invoice'.
        type: Kind of file: 'document', 'spreadsheet', 'presentation', 'pdf', 'image', 'video' or 'archive'.
        owner: Only files owned by this person: 'me', a username, an email address or a full name.
        modified_by: Only files whose latest change was made by this person ('me', username, email or name).
        modified_after: Only files last changed on or after this day (YYYY-MM-DD, 'yesterday', 'last Monday', ...).
        modified_before: Only files last changed on or before this day.
        sort_by: 'modified' (newest first), 'size' (largest first) or 'name'.
        limit: How many to return (1-50).
    """
    user = me(ctx)["username"]
    check_limit(limit)
    where = kit.Where()
    if query is not None:
        words = query.split()
        if not words:
            raise ToolError("argument 'query' is empty; leave it out to match every file")
        for word in words:
            where.add("instr(lower(f.name), ?) > 0", word.lower())
    if type is not None:
        mimes = KIND_MIMES[type]
        where.add(f"f.mime_type IN ({', '.join('?' for _ in mimes)})", *mimes)
    if owner is not None:
        where.add("f.owner = ?", find_person(ctx, owner, "owner")["username"])
    if modified_by is not None:
        where.add("v.author = ?", find_person(ctx, modified_by, "modified_by")["username"])
    first = ctx.env.date(modified_after) if modified_after is not None else None
    last = ctx.env.date(modified_before) if modified_before is not None else None
    if first and last and last < first:
        raise ToolError(f"argument 'modified_before' ({last}) is before 'modified_after' ({first})")
    if first:
        where.add("v.created_at >= ?", f"{first}T00:00")
    if last:
        where.add("v.created_at <= ?", f"{last}T23:59")
    order = {"modified": "v.created_at DESC, f.id DESC", "size": "v.size_bytes DESC, f.id",
             "name": "lower(f.name), f.id"}[sort_by]
    rows = accessible_files(ctx, user, where.sql, where.params, order=order)
    return {"total": len(rows), "files": [summary(r) for r in rows[:limit]]}


@tool
def get_file(ctx: ToolContext, file_id: int) -> dict[str, Any]:
    """Details of a file: size, owner, folder, last change and who made it, version, and everyone with access.

    Args:
        file_id: Id of the file (from search_files or list_drive_folder).
    """
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user, trashed=None)
    cut = cutoff(ctx)
    link = visible_link(ctx, file_id)
    comments = ctx.one("SELECT COUNT(*) AS n FROM comments WHERE file_id=? AND created_at <= ?", (file_id, cut))
    return {
        **summary(row), "size_bytes": row["size_bytes"], "mime_type": row["mime_type"],
        "created_at": row["created_at"],
        "current_version": row["version_number"], "in_trash": row["in_trash"],
        "access": access_list(ctx, row),
        "link": {"url": LINK_BASE + link["token"], "role": link["role"]} if link else None,
        "comments": comments["n"] if comments else 0,
    }


@tool
def get_storage_usage(ctx: ToolContext) -> dict[str, Any]:
    """My storage plan, quota, space used (files in the trash count too) and space left."""
    user = me(ctx)
    used, trash = storage_used(ctx, user["username"])
    free = max(user["quota_bytes"] - used, 0)
    return {"plan": user["plan"], "quota": human_size(user["quota_bytes"]), "used": human_size(used),
            "free": human_size(free), "in_trash": human_size(trash), "quota_bytes": user["quota_bytes"],
            "used_bytes": used, "free_bytes": free}


@tool
def list_trash(ctx: ToolContext) -> list[dict[str, Any]]:
    """My files in the trash, most recently trashed first."""
    user = me(ctx)["username"]
    cut = cutoff(ctx)
    rows = ctx.query(
        FILE_COLUMNS.format(rank="", source="files f")
        + " AND f.owner = ? AND f.trashed_at <= ? ORDER BY f.trashed_at DESC, f.id DESC LIMIT ?",
        (cut, cut, user, cut, MAX_LIST),
    )
    return [{"id": r["id"], "name": r["name"], "folder": r["folder_path"], "size": human_size(r["size_bytes"]),
             "trashed_at": r["trashed_at"]} for r in rows]


@tool
def create_drive_folder(ctx: ToolContext, name: str, parent_path: str = "/") -> dict[str, Any]:
    """Create a folder in my Drive.

    Args:
        name: Name of the new folder (no '/'), unique within its parent folder.
        parent_path: Path of the folder to create it in, e.g. '/' (top of My Drive) or '/Finance'.
    """
    user = me(ctx)["username"]
    clean = check_name(name, "name", 80)
    parent = load_folder(ctx, user, None, parent_path, path_argument="parent_path")
    clash = ctx.one("SELECT id, path FROM folders WHERE parent_id=? AND lower(name)=lower(?)", (parent["id"], clean))
    if clash:
        raise ToolError(f"argument 'name': folder {clash['path']!r} already exists (id {clash['id']})")
    path = f"{parent['path'].rstrip('/')}/{clean}"
    at = now(ctx)
    cur = ctx.db.execute(
        "INSERT INTO folders (owner, parent_id, name, path, created_at) VALUES (?, ?, ?, ?, ?)",
        (user, parent["id"], clean, path, at),
    )
    folder_id = int(cur.lastrowid or 0)
    log(ctx, user, "create_folder", at, folder_id=folder_id, detail=path)
    return {"id": folder_id, "name": clean, "path": path}


@tool
def move_file(ctx: ToolContext, file_id: int, folder_id: int | None = None,
              folder_path: str | None = None) -> dict[str, Any]:
    """Move a file to another folder of its owner's Drive. Needs owner or editor access.

    Args:
        file_id: Id of the file to move.
        folder_id: Id of the destination folder.
        folder_path: Or the destination's path in my Drive, e.g. '/Finance/Q2 Invoices'.
    """
    user, row = my_file_to_change(ctx, file_id, "editor", "move it")
    target = load_folder(ctx, user, folder_id, folder_path)
    if target["owner"] != row["owner"]:
        raise ToolError(f"'{row['name']}' belongs to {row['owner_name']} and folder {target['path']!r} to "
                        f"{target['owner_name']}; a file can only move within its owner's Drive")
    if target["rank"] < RANK["editor"]:
        raise ToolError(f"you have {ROLE_OF_RANK[target['rank']]} access to folder {target['path']!r}; "
                        "moving a file there needs editor access")
    if target["id"] == row["folder_id"]:
        return {"file_id": file_id, "name": row["name"], "folder": target["path"], "moved": False,
                "note": "the file is already in that folder"}
    clash = name_taken(ctx, target["id"], row["name"])
    if clash:
        raise ToolError(f"folder {target['path']!r} already has a file named '{clash['name']}' (id {clash['id']}); "
                        "rename one of them first")
    ctx.db.execute("UPDATE files SET folder_id=? WHERE id=?", (target["id"], file_id))
    log(ctx, user, "move", now(ctx), file_id=file_id, detail=f"from {row['folder_path']} to {target['path']}")
    return {"file_id": file_id, "name": row["name"], "from_folder": row["folder_path"], "folder": target["path"],
            "moved": True}


@tool
def rename_file(ctx: ToolContext, file_id: int, new_name: str) -> dict[str, Any]:
    """Rename a file. Needs owner or editor access; names are unique within a folder.

    Args:
        file_id: Id of the file.
        new_name: The new name, with its extension, e.g. 'Q2_budget_final.xlsx'.
    """
    user, row = my_file_to_change(ctx, file_id, "editor", "rename it")
    clean = check_name(new_name, "new_name")
    if clean == row["name"]:
        return {"file_id": file_id, "name": clean, "renamed": False, "note": "the file already has that name"}
    clash = name_taken(ctx, row["folder_id"], clean, except_id=file_id)
    if clash:
        raise ToolError(f"argument 'new_name': folder {row['folder_path']!r} already has a file named "
                        f"'{clash['name']}' (id {clash['id']}); names must be unique within a folder")
    ctx.db.execute("UPDATE files SET name=? WHERE id=?", (clean, file_id))
    log(ctx, user, "rename", now(ctx), file_id=file_id, detail=f"from '{row['name']}' to '{clean}'")
    return {"file_id": file_id, "old_name": row["name"], "name": clean, "renamed": True}


@tool
def copy_file(ctx: ToolContext, file_id: int, new_name: str | None = None, folder_id: int | None = None,
              folder_path: str | None = None) -> dict[str, Any]:
    """Make a copy of a file I can open into my own Drive; the copy is mine and counts against my storage.

    Args:
        file_id: Id of the file to copy.
        new_name: Name of the copy; default 'Copy of <name>'.
        folder_id: Id of one of my folders to put the copy in.
        folder_path: Or its path in my Drive, e.g. '/Documents'. Default: the top of My Drive.
    """
    user = me(ctx)
    username = user["username"]
    row = load_file(ctx, file_id, username)
    target = load_folder(ctx, username, folder_id, folder_path, default_root=True)
    if target["owner"] != username:
        raise ToolError(f"folder {target['path']!r} belongs to {target['owner_name']}; copies go to your own Drive")
    name = check_name(new_name, "new_name") if new_name is not None else f"Copy of {row['name']}"
    clash = name_taken(ctx, target["id"], name)
    if clash:
        raise ToolError(f"folder {target['path']!r} already has a file named '{clash['name']}' (id {clash['id']}); "
                        "give the copy another new_name")
    used, _ = storage_used(ctx, username)
    free = max(user["quota_bytes"] - used, 0)
    if row["size_bytes"] > free:
        raise ToolError(f"not enough storage: the copy needs {human_size(row['size_bytes'])} but you have "
                        f"{human_size(free)} free of your {human_size(user['quota_bytes'])} {user['plan']} plan")
    at = now(ctx)
    cur = ctx.db.execute(
        "INSERT INTO files (owner, folder_id, name, mime_type, created_at, trashed_at, copied_from) "
        "VALUES (?, ?, ?, ?, ?, NULL, ?)",
        (username, target["id"], name, row["mime_type"], at, file_id),
    )
    new_id = int(cur.lastrowid or 0)
    ctx.db.execute(
        "INSERT INTO file_versions (file_id, version_number, size_bytes, author, created_at) VALUES (?, 1, ?, ?, ?)",
        (new_id, row["size_bytes"], username, at),
    )
    log(ctx, username, "copy", at, file_id=new_id, detail=f"copy of '{row['name']}' (id {file_id})")
    return {"id": new_id, "name": name, "folder": target["path"], "size": human_size(row["size_bytes"]),
            "copied_from": file_id}


@tool
def trash_file(ctx: ToolContext, file_id: int) -> dict[str, Any]:
    """Move one of my files to the trash (it still counts against my storage until the trash is emptied).

    Args:
        file_id: Id of the file.
    """
    user, row = my_file_to_change(ctx, file_id, "owner", "move it to the trash")
    at = now(ctx)
    ctx.db.execute("UPDATE files SET trashed_at=? WHERE id=?", (at, file_id))
    log(ctx, user, "trash", at, file_id=file_id)
    return {"file_id": file_id, "name": row["name"], "folder": row["folder_path"], "in_trash": True}


@tool
def restore_file(ctx: ToolContext, file_id: int) -> dict[str, Any]:
    """Take one of my files out of the trash, back into the folder it was in.

    Args:
        file_id: Id of the file (see list_trash).
    """
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user, trashed=True)
    clash = name_taken(ctx, row["folder_id"], row["name"], except_id=file_id)
    if clash:
        raise ToolError(f"folder {row['folder_path']!r} already has a file named '{clash['name']}' (id {clash['id']}); "
                        "rename that file before restoring this one")
    ctx.db.execute("UPDATE files SET trashed_at=NULL WHERE id=?", (file_id,))
    log(ctx, user, "restore", now(ctx), file_id=file_id)
    return {"file_id": file_id, "name": row["name"], "folder": row["folder_path"], "in_trash": False}
