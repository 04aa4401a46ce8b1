"""Lookups and permission rules shared by the forum tools: who is asking, what they may see and do.

Content dated after CURRENT_DATE does not exist yet for the viewer, so every read filters by
`today`; every failure is a ToolError that names the argument and what is allowed.
"""

from __future__ import annotations

from typing import Any

from toolgym.envs import ToolContext, ToolError


def today(ctx: ToolContext) -> str:
    return ctx.env.today.isoformat()


def community_name(text: str) -> str:
    """'r/Sourdough', '/r/sourdough' and 'sourdough' all name the same community."""
    name = text.strip().lower()
    for prefix in ("/r/", "r/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name


def get_community(ctx: ToolContext, name: str, argument: str = "community") -> dict[str, Any]:
    row = ctx.one("SELECT * FROM communities WHERE name=?", (community_name(name),))
    if row is None:
        known = ", ".join(f"r/{r['name']}" for r in ctx.query("SELECT name FROM communities ORDER BY name"))
        raise ToolError(f"argument '{argument}': no community named {name!r}; communities: {known}")
    return row


def viewer(ctx: ToolContext) -> dict[str, Any] | None:
    """The logged-in user's row, or None when nobody is logged in (anonymous reading)."""
    username = ctx.env.user
    if username is None:
        return None
    row = ctx.one("SELECT * FROM users WHERE username=?", (username,))
    if row is None:
        raise ToolError(f"the logged-in user {username!r} has no forum account")
    return row


def me(ctx: ToolContext) -> dict[str, Any]:
    """The logged-in user's row; writes and 'my …' reads need one."""
    ctx.env.require_user()
    user = viewer(ctx)
    assert user is not None
    return user


def get_user(ctx: ToolContext, username: str, argument: str = "username") -> dict[str, Any]:
    name = username.strip().lower()
    for prefix in ("/u/", "u/", "@"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    row = ctx.one("SELECT * FROM users WHERE username=?", (name,))
    if row is None:
        raise ToolError(f"argument '{argument}': no user named {username!r}; usernames look like 'first.last'")
    return row


def role(ctx: ToolContext, community_id: int, user: dict[str, Any] | None) -> str | None:
    """'moderator', 'member' or None."""
    if user is None:
        return None
    row = ctx.one("SELECT role FROM memberships WHERE community_id=? AND user_id=?", (community_id, user["id"]))
    return row["role"] if row else None


def active_ban(ctx: ToolContext, community_id: int, user_id: int) -> dict[str, Any] | None:
    return ctx.one(
        "SELECT * FROM bans WHERE community_id=? AND user_id=? AND created_on <= ? AND (expires_on IS NULL OR expires_on > ?)",
        (community_id, user_id, today(ctx), today(ctx)),
    )


def require_view(ctx: ToolContext, community: dict[str, Any], user: dict[str, Any] | None) -> None:
    """Private communities are readable by members only."""
    if community["visibility"] == "private" and role(ctx, community["id"], user) is None:
        raise ToolError(f"r/{community['name']} is private: only its members can see or interact with its posts")


def require_moderator(ctx: ToolContext, community: dict[str, Any], user: dict[str, Any]) -> None:
    if role(ctx, community["id"], user) != "moderator":
        raise ToolError(
            f"you ({user['username']}) are not a moderator of r/{community['name']}; only its moderators can do this"
        )


def my_community(ctx: ToolContext, community: str, *, moderated: bool = False,
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The logged-in user and a community they act in (one they moderate, with `moderated`)."""
    user = me(ctx)
    row = get_community(ctx, community)
    if moderated:
        require_moderator(ctx, row, user)
    return user, row


def my_membership(ctx: ToolContext, community: str) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    """The logged-in user, a community and their role in it ('moderator', 'member' or None)."""
    user, row = my_community(ctx, community)
    return user, row, role(ctx, row["id"], user)


def require_not_banned(ctx: ToolContext, community: dict[str, Any], user: dict[str, Any]) -> None:
    ban = active_ban(ctx, community["id"], user["id"])
    if ban is not None:
        until = f" until {ban['expires_on']}" if ban["expires_on"] else ""
        raise ToolError(f"you are banned from r/{community['name']}{until} (reason: {ban['reason']})")


def require_id(value: int, argument: str) -> int:
    """Ids are positive integers; a huge one would overflow SQLite, so say so instead."""
    if not 1 <= value <= 2**62:
        raise ToolError(f"argument '{argument}' must be a positive id; got {value}")
    return value


def get_post(ctx: ToolContext, post_id: int, user: dict[str, Any] | None, argument: str = "post_id") -> dict[str, Any]:
    """A post that exists as of today and that the user may see."""
    require_id(post_id, argument)
    row = ctx.one(
        "SELECT p.*, c.name AS community, c.visibility, u.username AS author, f.name AS flair "
        "FROM posts p JOIN communities c ON c.id = p.community_id JOIN users u ON u.id = p.author_id "
        "LEFT JOIN flairs f ON f.id = p.flair_id WHERE p.id=? AND p.created_on <= ?",
        (post_id, today(ctx)),
    )
    if row is None:
        raise ToolError(f"argument '{argument}': no post with id {post_id}; use search_posts to find post ids")
    require_view(ctx, {"id": row["community_id"], "name": row["community"], "visibility": row["visibility"]}, user)
    return row


def get_comment(ctx: ToolContext, comment_id: int, user: dict[str, Any] | None, argument: str = "comment_id") -> dict[str, Any]:
    require_id(comment_id, argument)
    row = ctx.one(
        "SELECT cm.*, u.username AS author FROM comments cm JOIN users u ON u.id = cm.author_id "
        "WHERE cm.id=? AND cm.created_on <= ?",
        (comment_id, today(ctx)),
    )
    if row is None:
        raise ToolError(f"argument '{argument}': no comment with id {comment_id}; use list_comments to find comment ids")
    get_post(ctx, row["post_id"], user)
    return row


def comment_count(ctx: ToolContext, post_id: int) -> int:
    row = ctx.one("SELECT COUNT(*) AS n FROM comments WHERE post_id=? AND created_on <= ?", (post_id, today(ctx)))
    return int(row["n"]) if row else 0


def my_vote(ctx: ToolContext, user: dict[str, Any] | None, post_id: int | None = None,
            comment_id: int | None = None) -> str | None:
    if user is None:
        return None
    column, value = ("post_id", post_id) if post_id is not None else ("comment_id", comment_id)
    row = ctx.one(f"SELECT value FROM votes WHERE user_id=? AND {column}=?", (user["id"], value))
    if row is None:
        return None
    return "up" if row["value"] > 0 else "down"


def require_text(value: str, argument: str, low: int, high: int) -> str:
    text = value.strip()
    if not low <= len(text) <= high:
        raise ToolError(f"argument '{argument}' must be {low}–{high} characters long; got {len(text)}")
    return text


MAX_LIMIT = 25


def check_limit(value: int, high: int = MAX_LIMIT) -> int:
    if not 1 <= value <= high:
        raise ToolError(f"argument 'limit' must be between 1 and {high}; got {value}")
    return value


def post_summary(row: dict[str, Any], comments: int) -> dict[str, Any]:
    """The fields a listing shows; `row` carries community, author and flair names."""
    return {
        "post_id": row["id"],
        "community": f"r/{row['community']}",
        "title": row["title"],
        "author": row["author"],
        "created_on": row["created_on"],
        "score": row["score"],
        "flair": row["flair"],
        "comments": comments,
    }


POST_SELECT = (
    "SELECT p.*, c.name AS community, u.username AS author, f.name AS flair, "
    "(SELECT COUNT(*) FROM comments cm WHERE cm.post_id = p.id AND cm.created_on <= :today) AS n_comments "
    "FROM posts p JOIN communities c ON c.id = p.community_id JOIN users u ON u.id = p.author_id "
    "LEFT JOIN flairs f ON f.id = p.flair_id"
)


POST_ORDER = {
    "new": "p.created_on DESC, p.id DESC",
    "old": "p.created_on ASC, p.id ASC",
    "top": "p.score DESC, p.id ASC",
    "comments": "n_comments DESC, p.id ASC",
}
