"""Tools of the drive app: the logged-in user's Drive, files shared with them, versions, sharing and trash.

Drive shows the world as of CURRENT_DATE: files, versions, shares, links, comments and activity dated
later have not happened yet. A file's size and modification are those of its newest version. Access
is the best of ownership, a share on the file and a share on any folder above it (viewer < commenter
< editor < owner). New rows are stamped today from 18:00 on, one minute per change, so their order
is deterministic. Every change also writes one activity row.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, tool
from toolgym.envs.apps.drive.content import FILE_TYPES

MAX_LIST = 50
MB = 1024 * 1024
GB = 1024 * MB
RANK = {"viewer": 1, "commenter": 2, "editor": 3, "owner": 4}
ROLE_OF_RANK = {rank: role for role, rank in RANK.items()}
MIME_KIND = {mime: kind for mime, kind, _ in FILE_TYPES.values()}
KIND_MIMES: dict[str, list[str]] = {}
for _mime, _kind, _ in FILE_TYPES.values():
    KIND_MIMES.setdefault(_kind, []).append(_mime)
LINK_BASE = "https://drive.example.com/s/"

Role = Literal["viewer", "commenter", "editor"]
FileKind = Literal["document", "spreadsheet", "presentation", "pdf", "image", "video", "archive"]


# -- small helpers -------------------------------------------------------------------------------------

def human_size(size: int) -> str:
    """Bytes as people read them: '812 KB', '2.4 MB', '1.25 GB'."""
    if size < 1024:
        return f"{size} B"
    if size < MB:
        return f"{size / 1024:.0f} KB"
    if size < GB:
        return f"{size / MB:.1f} MB"
    return f"{size / GB:.2f} GB"


def cutoff(ctx: ToolContext) -> str:
    """Latest timestamp that has happened today; later rows are still in the future."""
    return f"{ctx.env.today.isoformat()}T23:59"


def now(ctx: ToolContext) -> str:
    """Today at 18:00 plus one minute per change already made this evening: a deterministic order."""
    today = ctx.env.today.isoformat()
    row = ctx.one("SELECT COUNT(*) AS n FROM activity WHERE occurred_at >= ? AND occurred_at <= ?",
                  (f"{today}T18:00", f"{today}T18:59"))
    return f"{today}T18:{min(int(row['n']) if row else 0, 59):02d}"


def me(ctx: ToolContext) -> dict[str, Any]:
    """The logged-in user's directory row; the Drive tools need a Drive account."""
    username = ctx.env.require_user()
    row = ctx.one("SELECT username, name, email, plan, quota_bytes, has_drive FROM users WHERE username=?", (username,))
    if row is None:
        raise ToolError(f"the logged-in user {username!r} is not in the directory")
    if not row["has_drive"]:
        raise ToolError(f"user {username!r} has no Drive account in this organisation")
    return row


def find_person(ctx: ToolContext, text: str, argument: str) -> dict[str, Any]:
    """A directory user by username, email address or exact full name ('me' is the logged-in user)."""
    value = " ".join(text.split())
    if not value:
        raise ToolError(f"argument '{argument}' is empty; give a username such as 'karen.thomas'")
    lowered = value.lower()
    if lowered in ("me", "myself"):
        lowered = ctx.env.require_user()
    row = ctx.one("SELECT username, name, email FROM users WHERE lower(username)=? OR lower(email)=?",
                  (lowered, lowered))
    if row is not None:
        return row
    rows = ctx.query("SELECT username, name, email FROM users WHERE lower(name)=? ORDER BY username", (lowered,))
    if len(rows) == 1:
        return rows[0]
    if rows:
        options = ", ".join(r["username"] for r in rows)
        raise ToolError(f"argument '{argument}': several people are named {value!r} ({options}); give the username")
    raise ToolError(f"argument '{argument}': no one in the directory matches {value!r}; "
                    "use search_people to find their username")


def check_name(value: str, argument: str, limit: int = 120) -> str:
    name = " ".join(value.split())
    if not name:
        raise ToolError(f"argument '{argument}' must not be empty")
    if len(name) > limit:
        raise ToolError(f"argument '{argument}' is too long ({len(name)} characters; at most {limit})")
    if "/" in name or "\\" in name:
        raise ToolError(f"argument '{argument}': names cannot contain '/' or '\\'")
    return name


def normalize_path(text: str) -> str:
    """'Finance/Invoices', '/finance/invoices/', 'My Drive/Finance' -> '/Finance/Invoices' style paths."""
    raw = text.strip().replace("\\", "/")
    if raw.lower().startswith("my drive"):
        raw = raw[len("my drive"):]
    parts = [part.strip() for part in raw.split("/") if part.strip()]
    return "/" + "/".join(parts)


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIST:
        raise ToolError(f"argument 'limit' must be between 1 and {MAX_LIST}; got {limit}")


# -- access --------------------------------------------------------------------------------------------

_RANK_SQL = "CASE role WHEN 'viewer' THEN 1 WHEN 'commenter' THEN 2 ELSE 3 END"

_ACCESS_CTE = f"""
WITH RECURSIVE shared(folder_id, rank) AS (
    SELECT folder_id, {_RANK_SQL} FROM permissions WHERE grantee = ? AND folder_id IS NOT NULL AND granted_at <= ?
    UNION
    SELECT f.id, s.rank FROM folders f JOIN shared s ON f.parent_id = s.folder_id
),
access(file_id, rank) AS (
    SELECT id, 4 FROM files WHERE owner = ?
    UNION ALL
    SELECT file_id, {_RANK_SQL} FROM permissions WHERE grantee = ? AND file_id IS NOT NULL AND granted_at <= ?
    UNION ALL
    SELECT f.id, s.rank FROM files f JOIN shared s ON f.folder_id = s.folder_id
),
mine(file_id, rank) AS (SELECT file_id, MAX(rank) FROM access GROUP BY file_id)
"""

_FILE_COLUMNS = """
SELECT f.id, f.name, f.mime_type, f.owner, o.name AS owner_name, f.folder_id, d.path AS folder_path,
       f.created_at, f.trashed_at, v.version_number, v.size_bytes, v.created_at AS modified_at,
       v.author AS modified_by, a.name AS modified_by_name{rank}
FROM {source}
JOIN folders d ON d.id = f.folder_id
JOIN users o ON o.username = f.owner
JOIN file_versions v ON v.id = (SELECT id FROM file_versions WHERE file_id = f.id AND created_at <= ?
                                ORDER BY version_number DESC LIMIT 1)
JOIN users a ON a.username = v.author
WHERE f.created_at <= ?
"""


def accessible_files(ctx: ToolContext, user: str, where: str = "", params: list[Any] | None = None,
                     order: str = "f.id") -> list[dict[str, Any]]:
    """Files `user` can open today (not in the trash), with their current version and `rank`."""
    cut = cutoff(ctx)
    sql = _ACCESS_CTE + _FILE_COLUMNS.format(rank=", m.rank", source="mine m JOIN files f ON f.id = m.file_id")
    sql += " AND (f.trashed_at IS NULL OR f.trashed_at > ?)" + (f" AND {where}" if where else "")
    sql += f" ORDER BY {order}"
    return ctx.query(sql, [user, cut, user, user, cut, cut, cut, cut, *(params or [])])


def folder_chain(ctx: ToolContext, folder_id: int) -> list[dict[str, Any]]:
    """The folder and its ancestors, nearest first."""
    chain = []
    current: int | None = folder_id
    while current is not None:
        row = ctx.one("SELECT id, owner, parent_id, name, path, created_at FROM folders WHERE id=?", (current,))
        if row is None:
            break
        chain.append(row)
        current = row["parent_id"]
    return chain


def inherited_access(ctx: ToolContext, folder_id: int, user: str) -> tuple[int, str | None]:
    """`user`'s best share on the folder or a folder above it today: (rank, path of that folder)."""
    best, via = 0, None
    cut = cutoff(ctx)
    for folder in folder_chain(ctx, folder_id):
        row = ctx.one("SELECT role FROM permissions WHERE folder_id=? AND grantee=? AND granted_at <= ?",
                      (folder["id"], user, cut))
        if row and RANK[row["role"]] > best:
            best, via = RANK[row["role"]], folder["path"]
    return best, via


def direct_share(ctx: ToolContext, column: str, target_id: int, user: str) -> dict[str, Any] | None:
    """A share of a file or folder with `user` that has happened by today."""
    return ctx.one(f"SELECT * FROM permissions WHERE {column}=? AND grantee=? AND granted_at <= ?",
                   (target_id, user, cutoff(ctx)))


def file_rank(ctx: ToolContext, row: dict[str, Any], user: str) -> int:
    if row["owner"] == user:
        return RANK["owner"]
    share = direct_share(ctx, "file_id", row["id"], user)
    return max(RANK[share["role"]] if share else 0, inherited_access(ctx, row["folder_id"], user)[0])


def load_file(ctx: ToolContext, file_id: int, user: str, trashed: bool | None = False,
              argument: str = "file_id") -> dict[str, Any]:
    """A file `user` can access, with its current version and `rank`.

    trashed=False: only files outside the trash; True: only my files in the trash; None: either
    (the trash is visible to the owner only).
    """
    cut = cutoff(ctx)
    sql = _FILE_COLUMNS.format(rank="", source="files f") + " AND f.id = ?"
    row = ctx.one(sql, (cut, cut, file_id))
    in_trash = bool(row and row["trashed_at"] and row["trashed_at"] <= cut)
    rank = file_rank(ctx, row, user) if row else 0
    if row is None or rank == 0 or (in_trash and row["owner"] != user):
        raise ToolError(f"argument '{argument}': there is no file with id {file_id} that you can access; "
                        "use search_files or list_drive_folder to find file ids")
    if trashed is False and in_trash:
        raise ToolError(f"argument '{argument}': '{row['name']}' (id {file_id}) is in your trash; "
                        "restore it with restore_file first")
    if trashed is True and not in_trash:
        raise ToolError(f"argument '{argument}': '{row['name']}' (id {file_id}) is not in the trash")
    row["rank"] = rank
    row["in_trash"] = in_trash
    return row


def require_rank(row: dict[str, Any], needed: int, action: str) -> None:
    if row["rank"] >= needed:
        return
    role = ROLE_OF_RANK[row["rank"]]
    who = "only its owner" if needed == RANK["owner"] else (
        "only its owner or an editor" if needed == RANK["editor"] else "commenters, editors and the owner")
    raise ToolError(f"you have {role} access to '{row['name']}' (owned by {row['owner_name']}); "
                    f"{who} can {action}")


def load_folder(ctx: ToolContext, user: str, folder_id: int | None, folder_path: str | None,
                id_argument: str = "folder_id", path_argument: str = "folder_path",
                default_root: bool = False) -> dict[str, Any]:
    """A folder by id (mine or shared with me) or by path in my Drive, with my `rank` on it."""
    if folder_id is not None and folder_path is not None:
        raise ToolError(f"give either '{id_argument}' or '{path_argument}', not both")
    if folder_id is None and folder_path is None:
        if not default_root:
            raise ToolError(f"give '{id_argument}' (from list_drive_folder) or '{path_argument}' "
                            "(a path in your Drive such as '/Finance/Invoices')")
        folder_path = "/"
    if folder_id is not None:
        row = ctx.one("SELECT id, owner, parent_id, name, path FROM folders WHERE id=? AND created_at <= ?",
                      (folder_id, cutoff(ctx)))
        rank = 0
        if row is not None:
            rank = RANK["owner"] if row["owner"] == user else inherited_access(ctx, row["id"], user)[0]
        if row is None or rank == 0:
            raise ToolError(f"argument '{id_argument}': there is no folder with id {folder_id} that you can access")
    else:
        path = normalize_path(folder_path or "/")
        row = ctx.one("SELECT id, owner, parent_id, name, path FROM folders WHERE owner=? AND path=? "
                      "AND created_at <= ?", (user, path, cutoff(ctx)))
        if row is None:
            tops = ctx.query("SELECT path FROM folders WHERE owner=? AND parent_id IS NOT NULL AND created_at <= ? "
                             "ORDER BY path", (user, cutoff(ctx)))
            listing = ", ".join(r["path"] for r in tops[:40])
            raise ToolError(f"argument '{path_argument}': you have no folder {path!r}; your folders are: {listing}")
        rank = RANK["owner"]
    owner = ctx.one("SELECT name FROM users WHERE username=?", (row["owner"],))
    row["owner_name"] = owner["name"] if owner else row["owner"]
    row["rank"] = rank
    return row


def name_taken(ctx: ToolContext, folder_id: int, name: str, except_id: int | None = None) -> dict[str, Any] | None:
    """A file outside the trash in the folder whose name equals `name` (ignoring case)."""
    cut = cutoff(ctx)
    return ctx.one(
        "SELECT id, name FROM files WHERE folder_id=? AND lower(name)=lower(?) AND id != ? AND created_at <= ? "
        "AND (trashed_at IS NULL OR trashed_at > ?) ORDER BY id LIMIT 1",
        (folder_id, name, except_id if except_id is not None else -1, cut, cut),
    )


def storage_used(ctx: ToolContext, user: str) -> tuple[int, int]:
    """(bytes used by my files, of which in the trash): current versions; the trash counts too."""
    cut = cutoff(ctx)
    row = ctx.one(
        "SELECT COALESCE(SUM(v.size_bytes), 0) AS used, "
        "COALESCE(SUM(CASE WHEN f.trashed_at IS NOT NULL AND f.trashed_at <= ? THEN v.size_bytes END), 0) AS trash "
        "FROM files f JOIN file_versions v ON v.id = (SELECT id FROM file_versions WHERE file_id = f.id "
        "AND created_at <= ? ORDER BY version_number DESC LIMIT 1) WHERE f.owner=? AND f.created_at <= ?",
        (cut, cut, user, cut),
    )
    return (int(row["used"]), int(row["trash"])) if row else (0, 0)


def log(ctx: ToolContext, actor: str, action: str, at: str, file_id: int | None = None,
        folder_id: int | None = None, detail: str = "") -> None:
    ctx.db.execute(
        "INSERT INTO activity (actor, action, file_id, folder_id, detail, occurred_at) VALUES (?, ?, ?, ?, ?, ?)",
        (actor, action, file_id, folder_id, detail, at),
    )


def summary(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"], "name": row["name"], "type": MIME_KIND.get(row["mime_type"], "other"),
        "size": human_size(row["size_bytes"]), "owner": row["owner_name"],
        "folder": row["folder_path"], "modified_at": row["modified_at"], "modified_by": row["modified_by_name"],
        "my_role": ROLE_OF_RANK[row["rank"]],
    }


# -- reading -------------------------------------------------------------------------------------------

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
        _FILE_COLUMNS.format(rank="", source="files f")
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
    _check_limit(limit)
    clauses: list[str] = []
    params: list[Any] = []
    if query is not None:
        words = query.split()
        if not words:
            raise ToolError("argument 'query' is empty; leave it out to match every file")
        for word in words:
            clauses.append("instr(lower(f.name), ?) > 0")
            params.append(word.lower())
    if type is not None:
        mimes = KIND_MIMES[type]
        clauses.append(f"f.mime_type IN ({', '.join('?' for _ in mimes)})")
        params += mimes
    if owner is not None:
        clauses.append("f.owner = ?")
        params.append(find_person(ctx, owner, "owner")["username"])
    if modified_by is not None:
        clauses.append("v.author = ?")
        params.append(find_person(ctx, modified_by, "modified_by")["username"])
    first = ctx.env.date(modified_after) if modified_after is not None else None
    last = ctx.env.date(modified_before) if modified_before is not None else None
    if first and last and last < first:
        raise ToolError(f"argument 'modified_before' ({last}) is before 'modified_after' ({first})")
    if first:
        clauses.append("v.created_at >= ?")
        params.append(f"{first}T00:00")
    if last:
        clauses.append("v.created_at <= ?")
        params.append(f"{last}T23:59")
    where = " AND ".join(clauses)
    order = {"modified": "v.created_at DESC, f.id DESC", "size": "v.size_bytes DESC, f.id",
             "name": "lower(f.name), f.id"}[sort_by]
    rows = accessible_files(ctx, user, where, params, order=order)
    return {"total": len(rows), "files": [summary(r) for r in rows[:limit]]}


def access_list(ctx: ToolContext, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Everyone who can open the file today: owner, direct shares and shares of folders above it."""
    cut = cutoff(ctx)
    best: dict[str, tuple[int, str]] = {row["owner"]: (RANK["owner"], "owner")}
    for share in ctx.query("SELECT grantee, role FROM permissions WHERE file_id=? AND granted_at <= ? ORDER BY id",
                           (row["id"], cut)):
        best[share["grantee"]] = (RANK[share["role"]], "shared on the file")
    for folder in folder_chain(ctx, row["folder_id"]):
        for share in ctx.query("SELECT grantee, role FROM permissions WHERE folder_id=? AND granted_at <= ? "
                               "ORDER BY id", (folder["id"], cut)):
            if RANK[share["role"]] > best.get(share["grantee"], (0, ""))[0]:
                best[share["grantee"]] = (RANK[share["role"]], f"shared folder {folder['path']}")
    names = {r["username"]: r["name"] for r in ctx.query(
        f"SELECT username, name FROM users WHERE username IN ({', '.join('?' for _ in best)})", list(best))}
    people = [{"name": names[u], "username": u, "role": ROLE_OF_RANK[rank], "via": via}
              for u, (rank, via) in best.items()]
    return sorted(people, key=lambda p: (-RANK[p["role"]], p["name"]))


def visible_link(ctx: ToolContext, file_id: int) -> dict[str, Any] | None:
    return ctx.one("SELECT * FROM share_links WHERE file_id=? AND created_at <= ?", (file_id, cutoff(ctx)))


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
def list_shared_with_me(ctx: ToolContext, since: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """Files and folders other people shared with me directly, most recently shared first.

    Args:
        since: Only shares made on or after this day (YYYY-MM-DD, 'yesterday', '7 days ago', 'last Monday').
        limit: How many to return (1-50).
    """
    user = me(ctx)["username"]
    _check_limit(limit)
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
    _check_limit(limit)
    load_file(ctx, file_id, user, trashed=None)
    rows = ctx.query(
        "SELECT a.occurred_at, u.name AS actor, a.action, a.detail FROM activity a JOIN users u ON u.username = a.actor "
        f"WHERE a.file_id=? AND a.occurred_at <= ? ORDER BY a.occurred_at DESC, a.id DESC LIMIT {int(limit)}",
        (file_id, cutoff(ctx)),
    )
    return [{"date": r["occurred_at"], "actor": r["actor"], "action": r["action"],
             **({"detail": r["detail"]} if r["detail"] else {})} for r in rows]


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
        _FILE_COLUMNS.format(rank="", source="files f")
        + " AND f.owner = ? AND f.trashed_at <= ? ORDER BY f.trashed_at DESC, f.id DESC LIMIT ?",
        (cut, cut, user, cut, MAX_LIST),
    )
    return [{"id": r["id"], "name": r["name"], "folder": r["folder_path"], "size": human_size(r["size_bytes"]),
             "trashed_at": r["trashed_at"]} for r in rows]


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
    clauses, params = [], []
    for word in words:
        clauses.append("instr(lower(name || ' ' || username || ' ' || email), ?) > 0")
        params.append(word.lower())
    return ctx.query(
        f"SELECT name, username, email FROM users WHERE {' AND '.join(clauses)} ORDER BY name, username LIMIT 20",
        params,
    )


# -- organising ----------------------------------------------------------------------------------------

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
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user)
    require_rank(row, RANK["editor"], "move it")
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
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user)
    require_rank(row, RANK["editor"], "rename it")
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


# -- sharing -------------------------------------------------------------------------------------------

def _grant(ctx: ToolContext, column: str, target_id: int, grantee: str, role: str, user: str,
           at: str) -> str:
    """Insert or update the share of a file/folder with `grantee`; returns 'added', 'changed' or 'same'."""
    existing = ctx.one(f"SELECT id, role, granted_at FROM permissions WHERE {column}=? AND grantee=?",
                       (target_id, grantee))
    if existing is None:
        ctx.db.execute(
            f"INSERT INTO permissions ({column}, grantee, role, granted_by, granted_at) VALUES (?, ?, ?, ?, ?)",
            (target_id, grantee, role, user, at),
        )
        return "added"
    if existing["granted_at"] <= cutoff(ctx) and existing["role"] == role:
        return "same"
    visible = existing["granted_at"] <= cutoff(ctx)
    ctx.db.execute("UPDATE permissions SET role=?, granted_by=?, granted_at=? WHERE id=?",
                   (role, user, at, existing["id"]))
    return "changed" if visible else "added"


@tool
def share_file(ctx: ToolContext, file_id: int, username: str, role: Role) -> dict[str, Any]:
    """Share a file with a person, or change their role on it. Needs owner or editor access.

    Args:
        file_id: Id of the file.
        username: Who to share with: a username such as 'karen.thomas' (an email address or full name also works).
        role: 'viewer' (read-only), 'commenter' (read and comment) or 'editor' (read and change).
    """
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user)
    require_rank(row, RANK["editor"], "share it")
    person = find_person(ctx, username, "username")
    if person["username"] == row["owner"]:
        raise ToolError(f"argument 'username': {person['name']} owns '{row['name']}' already")
    if person["username"] == user:
        raise ToolError("argument 'username': you cannot share a file with yourself")
    direct = direct_share(ctx, "file_id", file_id, person["username"])
    inherited, via = inherited_access(ctx, row["folder_id"], person["username"])
    if direct is None and inherited >= RANK[role]:
        return {"file_id": file_id, "name": row["name"], "shared_with": person["name"], "changed": False,
                "note": f"{person['name']} already has {ROLE_OF_RANK[inherited]} access through shared folder {via}"}
    at = now(ctx)
    outcome = _grant(ctx, "file_id", file_id, person["username"], role, user, at)
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
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user)
    require_rank(row, RANK["editor"], "change its sharing")
    person = find_person(ctx, username, "username")
    if person["username"] == row["owner"]:
        raise ToolError(f"argument 'username': {person['name']} owns '{row['name']}'; an owner cannot be removed")
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
    outcome = _grant(ctx, "folder_id", folder["id"], person["username"], role, user, at)
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


def link_token(link_id: int, file_id: int) -> str:
    return hashlib.sha256(f"drive-link/{link_id}/{file_id}".encode()).hexdigest()[:12]


@tool
def create_share_link(ctx: ToolContext, file_id: int, role: Role = "viewer") -> dict[str, Any]:
    """Turn on 'anyone with the link' access to a file (or change that link's role). Needs owner or editor access.

    Args:
        file_id: Id of the file.
        role: What anyone with the link may do: 'viewer', 'commenter' or 'editor'.
    """
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user)
    require_rank(row, RANK["editor"], "create a share link for it")
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
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user)
    require_rank(row, RANK["editor"], "change its sharing")
    link = visible_link(ctx, file_id)
    if link is None:
        raise ToolError(f"argument 'file_id': '{row['name']}' has no share link")
    ctx.db.execute("DELETE FROM share_links WHERE id=?", (link["id"],))
    log(ctx, user, "unlink", now(ctx), file_id=file_id)
    return {"file_id": file_id, "name": row["name"], "link": None}


# -- versions, trash, comments -------------------------------------------------------------------------

@tool
def restore_file_version(ctx: ToolContext, file_id: int, version_number: int) -> dict[str, Any]:
    """Make an older version of a file current again; this adds a new version (history is kept).

    Args:
        file_id: Id of the file.
        version_number: The version to bring back (see list_file_versions).
    """
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user)
    require_rank(row, RANK["editor"], "restore its versions")
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
def trash_file(ctx: ToolContext, file_id: int) -> dict[str, Any]:
    """Move one of my files to the trash (it still counts against my storage until the trash is emptied).

    Args:
        file_id: Id of the file.
    """
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user)
    require_rank(row, RANK["owner"], "move it to the trash")
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


@tool
def comment_on_file(ctx: ToolContext, file_id: int, text: str) -> dict[str, Any]:
    """Add a comment to a file. Needs commenter, editor or owner access.

    Args:
        file_id: Id of the file.
        text: The comment.
    """
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user)
    require_rank(row, RANK["commenter"], "comment on it")
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


TOOLS = [
    list_drive_folder, search_files, get_file, list_shared_with_me, list_file_versions, list_file_comments,
    get_file_activity, get_storage_usage, list_trash, search_people, create_drive_folder, move_file, rename_file,
    copy_file, share_file, unshare_file, share_folder, unshare_folder, create_share_link, disable_share_link,
    restore_file_version, trash_file, restore_file, comment_on_file,
]
