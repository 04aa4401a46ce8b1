"""Forum tools over communities and people: browse and join communities, profiles, and moderation
(reports, removals and bans, moderators only)."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, tool
from toolgym.envs.apps.forum import tool_common as access
from toolgym.envs.apps.forum.tool_common import POST_ORDER, POST_SELECT, post_summary, today


@tool
def list_communities(ctx: ToolContext, query: str | None = None) -> list[dict[str, Any]]:
    """List the forum's communities, optionally only those whose name or description mentions a word.

    Args:
        query: Word to look for in the name or description (case-insensitive); omit to list all.
    """
    like = f"%{(query or '').strip().lower()}%"
    rows = ctx.query(
        "SELECT c.name, c.description, c.visibility, "
        "(SELECT COUNT(*) FROM memberships m WHERE m.community_id = c.id) AS members "
        "FROM communities c WHERE lower(c.name) LIKE ? OR lower(c.description) LIKE ? ORDER BY c.name",
        (like, like),
    )
    return [{"community": f"r/{r['name']}", "description": r["description"], "visibility": r["visibility"],
             "members": r["members"]} for r in rows]


@tool
def get_community(ctx: ToolContext, community: str) -> dict[str, Any]:
    """Show a community: description, visibility, rules, flairs, moderators and your own role there.

    Args:
        community: Community name, with or without the 'r/' prefix (e.g. 'r/sourdough').
    """
    row = access.get_community(ctx, community)
    user = access.viewer(ctx)
    rules = ctx.query(
        "SELECT number, title, description FROM community_rules WHERE community_id=? ORDER BY number", (row["id"],)
    )
    flairs = [r["name"] for r in ctx.query("SELECT name FROM flairs WHERE community_id=? ORDER BY id", (row["id"],))]
    moderators = [r["username"] for r in ctx.query(
        "SELECT u.username FROM memberships m JOIN users u ON u.id = m.user_id "
        "WHERE m.community_id=? AND m.role='moderator' ORDER BY u.username", (row["id"],))]
    members = ctx.one("SELECT COUNT(*) AS n FROM memberships WHERE community_id=?", (row["id"],))
    return {
        "community": f"r/{row['name']}",
        "description": row["description"],
        "visibility": row["visibility"],
        "flair_required": bool(row["flair_required"]),
        "flairs": flairs,
        "rules": rules,
        "members": members["n"] if members else 0,
        "moderators": moderators,
        "my_role": access.role(ctx, row["id"], user),
        "i_am_banned": bool(user and access.active_ban(ctx, row["id"], user["id"])),
    }


@tool
def list_my_communities(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the communities you belong to, with your role in each (member or moderator)."""
    user = access.me(ctx)
    rows = ctx.query(
        "SELECT c.name, c.visibility, m.role, m.joined_on FROM memberships m JOIN communities c ON c.id = m.community_id "
        "WHERE m.user_id=? ORDER BY c.name",
        (user["id"],),
    )
    return [{"community": f"r/{r['name']}", "role": r["role"], "visibility": r["visibility"],
             "joined_on": r["joined_on"]} for r in rows]


@tool
def join_community(ctx: ToolContext, community: str) -> dict[str, Any]:
    """Join a public community as a member (private communities are invitation-only).

    Args:
        community: Community name, with or without the 'r/' prefix.
    """
    user, row, current = access.my_membership(ctx, community)
    if current is not None:
        raise ToolError(f"you are already a {current} of r/{row['name']}")
    access.require_not_banned(ctx, row, user)
    if row["visibility"] == "private":
        raise ToolError(f"r/{row['name']} is private: members are invited by its moderators, you cannot join it yourself")
    ctx.db.execute(
        "INSERT INTO memberships(community_id, user_id, role, joined_on) VALUES (?, ?, 'member', ?)",
        (row["id"], user["id"], today(ctx)),
    )
    return {"community": f"r/{row['name']}", "role": "member", "joined_on": today(ctx)}


@tool
def leave_community(ctx: ToolContext, community: str) -> dict[str, Any]:
    """Leave a community you are a member of (moderators must step down elsewhere first).

    Args:
        community: Community name, with or without the 'r/' prefix.
    """
    user, row, current = access.my_membership(ctx, community)
    if current is None:
        raise ToolError(f"you are not a member of r/{row['name']}")
    if current == "moderator":
        raise ToolError(f"you moderate r/{row['name']}; moderators cannot leave with this tool")
    ctx.db.execute("DELETE FROM memberships WHERE community_id=? AND user_id=?", (row["id"], user["id"]))
    return {"community": f"r/{row['name']}", "left": True}


@tool
def get_user_profile(ctx: ToolContext, username: str) -> dict[str, Any]:
    """Show a user's public profile: karma, join date and their latest posts you can see.

    Args:
        username: The user's username (e.g. 'jane.doe').
    """
    viewer = access.viewer(ctx)
    user = access.get_user(ctx, username)
    rows = ctx.query(
        f"{POST_SELECT} WHERE p.author_id = :author AND p.removed = 0 AND p.created_on <= :today AND "
        "(c.visibility = 'public' OR EXISTS (SELECT 1 FROM memberships m WHERE m.community_id = c.id AND m.user_id = :me)) "
        f"ORDER BY {POST_ORDER['new']}",
        {"author": user["id"], "today": today(ctx), "me": viewer["id"] if viewer else -1},
    )
    return {
        "username": user["username"],
        "display_name": user["display_name"],
        "karma": user["karma"],
        "joined_on": user["joined_on"],
        "posts": len(rows),
        "latest_posts": [post_summary(r, r["n_comments"]) for r in rows[:5]],
    }


@tool
def list_reports(ctx: ToolContext, community: str, status: Literal["open", "all"] = "open") -> dict[str, Any]:
    """Moderators only: the reports filed against posts of a community, oldest first.

    Args:
        community: Community name, with or without the 'r/' prefix.
        status: 'open' (waiting for a decision) or 'all' (also actioned and dismissed ones).
    """
    _, row = access.my_community(ctx, community, moderated=True)
    status_clause = "AND r.status = 'open'" if status == "open" else ""
    rows = ctx.query(
        "SELECT r.id, r.post_id, p.title, u.username AS author, cr.number, cr.title AS rule, r.reason, r.created_on, "
        "r.status, p.removed FROM reports r JOIN posts p ON p.id = r.post_id JOIN users u ON u.id = p.author_id "
        "LEFT JOIN community_rules cr ON cr.id = r.rule_id "
        f"WHERE p.community_id=? AND r.created_on <= ? {status_clause} ORDER BY r.created_on, r.id",
        (row["id"], today(ctx)),
    )
    return {
        "community": f"r/{row['name']}",
        "total": len(rows),
        "reports": [
            {"report_id": r["id"], "post_id": r["post_id"], "post_title": r["title"], "post_author": r["author"],
             "rule_number": r["number"], "rule": r["rule"], "reason": r["reason"], "created_on": r["created_on"],
             "status": r["status"], "post_removed": bool(r["removed"])}
            for r in rows[:50]
        ],
    }


@tool
def remove_post(ctx: ToolContext, post_id: int, reason: str) -> dict[str, Any]:
    """Moderators only: remove a post from its community; its open reports are closed as actioned.

    Args:
        post_id: Id of the post.
        reason: Why it is removed (e.g. 'Rule 2: no self-promotion'), 3-300 characters.
    """
    user = access.me(ctx)
    post = access.get_post(ctx, post_id, user)
    access.require_moderator(ctx, {"id": post["community_id"], "name": post["community"]}, user)
    if post["removed"]:
        raise ToolError(f"post {post_id} is already removed")
    text = access.require_text(reason, "reason", 3, 300)
    ctx.db.execute("UPDATE posts SET removed=1, removed_reason=? WHERE id=?", (text, post_id))
    closed = ctx.db.execute("UPDATE reports SET status='actioned' WHERE post_id=? AND status='open'", (post_id,)).rowcount
    ctx.db.execute(
        "INSERT INTO moderation_actions(community_id, moderator_id, action, post_id, target_user_id, reason, created_on) "
        "VALUES (?, ?, 'remove_post', ?, ?, ?, ?)",
        (post["community_id"], user["id"], post_id, post["author_id"], text, today(ctx)),
    )
    return {"post_id": post_id, "removed": True, "reports_closed": closed}


@tool
def ban_user(ctx: ToolContext, community: str, username: str, reason: str, duration_days: int | None = None) -> dict[str, Any]:
    """Moderators only: ban a user from posting, commenting and voting in a community.

    Args:
        community: Community name, with or without the 'r/' prefix.
        username: The user to ban.
        reason: Why, 3-300 characters.
        duration_days: Length of the ban in days (1-3650); omit for a permanent ban.
    """
    user, row = access.my_community(ctx, community, moderated=True)
    target = access.get_user(ctx, username)
    if target["id"] == user["id"]:
        raise ToolError("argument 'username': you cannot ban yourself")
    if access.role(ctx, row["id"], target) == "moderator":
        raise ToolError(f"argument 'username': {target['username']} is a moderator of r/{row['name']} and cannot be banned")
    if access.active_ban(ctx, row["id"], target["id"]) is not None:
        raise ToolError(f"{target['username']} is already banned from r/{row['name']}")
    if duration_days is not None and not 1 <= duration_days <= 3650:
        raise ToolError(f"argument 'duration_days' must be between 1 and 3650, or omitted for a permanent ban; got {duration_days}")
    text = access.require_text(reason, "reason", 3, 300)
    expires = (ctx.env.today + dt.timedelta(days=duration_days)).isoformat() if duration_days is not None else None
    ctx.db.execute("DELETE FROM bans WHERE community_id=? AND user_id=?", (row["id"], target["id"]))  # an expired ban
    ctx.db.execute(
        "INSERT INTO bans(community_id, user_id, moderator_id, reason, created_on, expires_on) VALUES (?, ?, ?, ?, ?, ?)",
        (row["id"], target["id"], user["id"], text, today(ctx), expires),
    )
    ctx.db.execute(
        "INSERT INTO moderation_actions(community_id, moderator_id, action, post_id, target_user_id, reason, created_on) "
        "VALUES (?, ?, 'ban_user', NULL, ?, ?, ?)",
        (row["id"], user["id"], target["id"], text, today(ctx)),
    )
    return {"community": f"r/{row['name']}", "username": target["username"], "banned": True, "expires_on": expires}
