"""What the drive tools share: sizes and stamps, the logged-in user, who can open a file (ownership,
shares on the file or on a folder above it), lookups that name the argument on failure, the activity log.
Drive shows the world as of CURRENT_DATE."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit
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
    return kit.directory_member(ctx, "username, name, email, plan, quota_bytes", "has_drive", "Drive account")


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


def check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIST:
        raise ToolError(f"argument 'limit' must be between 1 and {MAX_LIST}; got {limit}")


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


FILE_COLUMNS = """
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
    sql = _ACCESS_CTE + FILE_COLUMNS.format(rank=", m.rank", source="mine m JOIN files f ON f.id = m.file_id")
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
    sql = FILE_COLUMNS.format(rank="", source="files f") + " AND f.id = ?"
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


def my_file_to_change(ctx: ToolContext, file_id: int, needed: str, action: str) -> tuple[str, dict[str, Any]]:
    """Me and a file outside the trash that I hold at least the `needed` role on ('commenter', 'editor',
    'owner'), for a tool that changes it; `action` ends the error when I hold less ('rename it')."""
    user = me(ctx)["username"]
    row = load_file(ctx, file_id, user)
    require_rank(row, RANK[needed], action)
    return user, row


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


def grant(ctx: ToolContext, column: str, target_id: int, grantee: str, role: str, user: str,
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


def link_token(link_id: int, file_id: int) -> str:
    return hashlib.sha256(f"drive-link/{link_id}/{file_id}".encode()).hexdigest()[:12]
