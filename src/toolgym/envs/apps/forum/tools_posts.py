"""Forum tools over posts: search, read, list comments and my posts, post, comment, vote and report."""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.forum import tool_common as access
from toolgym.envs.apps.forum.tool_common import POST_ORDER, POST_SELECT, check_limit, post_summary, today


@tool
def search_posts(
    ctx: ToolContext,
    community: str | None = None,
    query: str | None = None,
    flair: str | None = None,
    author: str | None = None,
    since: str | None = None,
    until: str | None = None,
    sort: Literal["new", "old", "top", "comments"] = "new",
    limit: int = 10,
) -> dict[str, Any]:
    """Search posts (removed posts are hidden). Returns the total number of matches and the first `limit`.

    Args:
        community: Only posts of this community (name with or without 'r/'); omit to search every community you can see.
        query: Words that must all appear in the title or body (case-insensitive).
        flair: Only posts with this flair (e.g. 'Question').
        author: Only posts by this username.
        since: Earliest posting date, inclusive: YYYY-MM-DD or a phrase like 'yesterday' or '7 days ago'.
        until: Latest posting date, inclusive: YYYY-MM-DD or a phrase like 'today' or 'yesterday'.
        sort: 'new' (newest first), 'old' (oldest first), 'top' (highest score first) or 'comments' (most comments first).
        limit: How many posts to return, 1-25.
    """
    check_limit(limit)
    user = access.viewer(ctx)
    where = ["p.removed = 0", "p.created_on <= :today"]
    params: dict[str, Any] = {"today": today(ctx), "me": user["id"] if user else -1}
    if community is not None:
        row = access.get_community(ctx, community)
        access.require_view(ctx, row, user)
        where.append("p.community_id = :community")
        params["community"] = row["id"]
    else:
        where.append(
            "(c.visibility = 'public' OR EXISTS (SELECT 1 FROM memberships m WHERE m.community_id = c.id AND m.user_id = :me))"
        )
    for index, word in enumerate((query or "").lower().split()):
        where.append(f"instr(lower(p.title || ' ' || p.body), :w{index}) > 0")
        params[f"w{index}"] = word
    if flair is not None:
        where.append("lower(f.name) = :flair")
        params["flair"] = flair.strip().lower()
        if "community" in params:
            names = [r["name"] for r in ctx.query("SELECT name FROM flairs WHERE community_id=? ORDER BY id",
                                                  (params["community"],))]
            if params["flair"] not in (n.lower() for n in names):
                raise ToolError(f"argument 'flair': this community has no flair {flair!r}; its flairs are: {', '.join(names)}")
    if author is not None:
        where.append("p.author_id = :author")
        params["author"] = access.get_user(ctx, author, "author")["id"]
    if since is not None:
        where.append("p.created_on >= :since")
        params["since"] = kit.date_arg(ctx, "since", since)
    if until is not None:
        where.append("p.created_on <= :until")
        params["until"] = kit.date_arg(ctx, "until", until)
    rows = ctx.query(f"{POST_SELECT} WHERE {' AND '.join(where)} ORDER BY {POST_ORDER[sort]}", params)
    return {
        "total": len(rows),
        "posts": [post_summary(r, r["n_comments"]) for r in rows[:limit]],
    }


@tool
def get_post(ctx: ToolContext, post_id: int) -> dict[str, Any]:
    """Read one post in full: body, score, flair, comment count and how you voted on it.

    Args:
        post_id: Id of the post (from search_posts).
    """
    user = access.viewer(ctx)
    row = access.get_post(ctx, post_id, user)
    result = post_summary(row, access.comment_count(ctx, post_id))
    visible = not row["removed"] or (user is not None and (
        user["id"] == row["author_id"] or access.role(ctx, row["community_id"], user) == "moderator"))
    result["body"] = row["body"] if visible else "[removed by the moderators]"
    result["removed"] = bool(row["removed"])
    if row["removed"]:
        result["removed_reason"] = row["removed_reason"]
    result["my_vote"] = access.my_vote(ctx, user, post_id=post_id)
    return result


@tool
def list_comments(ctx: ToolContext, post_id: int, sort: Literal["top", "new", "old"] = "top", limit: int = 20) -> dict[str, Any]:
    """List the comments of a post (replies carry the id of the comment they answer in parent_id).

    Args:
        post_id: Id of the post.
        sort: 'top' (highest score first), 'new' (newest first) or 'old' (oldest first).
        limit: How many comments to return, 1-50.
    """
    check_limit(limit, 50)
    user = access.viewer(ctx)
    post = access.get_post(ctx, post_id, user)
    order = {"top": "cm.score DESC, cm.id ASC", "new": "cm.created_on DESC, cm.id DESC", "old": "cm.created_on ASC, cm.id ASC"}
    rows = ctx.query(
        "SELECT cm.id, cm.parent_id, u.username AS author, cm.body, cm.score, cm.created_on FROM comments cm "
        f"JOIN users u ON u.id = cm.author_id WHERE cm.post_id=? AND cm.created_on <= ? ORDER BY {order[sort]}",
        (post_id, today(ctx)),
    )
    return {
        "post_id": post_id,
        "title": post["title"],
        "total": len(rows),
        "comments": [
            {"comment_id": r["id"], "parent_id": r["parent_id"], "author": r["author"], "body": r["body"],
             "score": r["score"], "created_on": r["created_on"], "my_vote": access.my_vote(ctx, user, comment_id=r["id"])}
            for r in rows[:limit]
        ],
    }


@tool
def list_my_posts(ctx: ToolContext, community: str | None = None, limit: int = 10) -> dict[str, Any]:
    """List your own posts, newest first (including any the moderators removed).

    Args:
        community: Only your posts in this community; omit for all of them.
        limit: How many posts to return, 1-25.
    """
    check_limit(limit)
    user = access.me(ctx)
    where, params = "p.author_id = :me AND p.created_on <= :today", {"me": user["id"], "today": today(ctx)}
    if community is not None:
        where += " AND p.community_id = :community"
        params["community"] = access.get_community(ctx, community)["id"]
    rows = ctx.query(f"{POST_SELECT} WHERE {where} ORDER BY {POST_ORDER['new']}", params)
    return {
        "total": len(rows),
        "posts": [{**post_summary(r, r["n_comments"]), "removed": bool(r["removed"])} for r in rows[:limit]],
    }


@tool
def create_post(ctx: ToolContext, community: str, title: str, body: str, flair: str | None = None) -> dict[str, Any]:
    """Publish a new post in a community you are a member of.

    Args:
        community: Community name, with or without the 'r/' prefix.
        title: Post title, 3-200 characters.
        body: Post text, up to 5000 characters.
        flair: One of the community's flairs (see get_community); required where the community says so.
    """
    user, row, role = access.my_membership(ctx, community)
    access.require_not_banned(ctx, row, user)
    if role is None:
        hint = "it is private (invitation-only)" if row["visibility"] == "private" else "join it first with join_community"
        raise ToolError(f"you are not a member of r/{row['name']}; only members can post there ({hint})")
    clean_title = access.require_text(title, "title", 3, 200)
    clean_body = access.require_text(body, "body", 0, 5000)
    flairs = ctx.query("SELECT id, name FROM flairs WHERE community_id=? ORDER BY id", (row["id"],))
    flair_id = None
    if flair is not None:
        match = [f for f in flairs if f["name"].lower() == flair.strip().lower()]
        if not match:
            raise ToolError(f"argument 'flair': r/{row['name']} has no flair {flair!r}; its flairs are: "
                            + ", ".join(f["name"] for f in flairs))
        flair_id = match[0]["id"]
    elif row["flair_required"]:
        raise ToolError(f"argument 'flair': r/{row['name']} requires a flair on every post; choose one of: "
                        + ", ".join(f["name"] for f in flairs))
    duplicate = ctx.one("SELECT id FROM posts WHERE community_id=? AND lower(title)=? AND removed=0",
                        (row["id"], clean_title.lower()))
    if duplicate is not None:
        raise ToolError(f"argument 'title': r/{row['name']} already has a post with this title (post {duplicate['id']})")
    cur = ctx.db.execute(
        "INSERT INTO posts(community_id, author_id, title, body, created_on, score, flair_id) VALUES (?, ?, ?, ?, ?, 0, ?)",
        (row["id"], user["id"], clean_title, clean_body, today(ctx), flair_id),
    )
    flair_name = next((f["name"] for f in flairs if f["id"] == flair_id), None)
    return {"post_id": cur.lastrowid, "community": f"r/{row['name']}", "title": clean_title, "flair": flair_name,
            "created_on": today(ctx)}


@tool
def add_comment(ctx: ToolContext, post_id: int, body: str, parent_comment_id: int | None = None) -> dict[str, Any]:
    """Comment on a post, or reply to one of its comments.

    Args:
        post_id: Id of the post.
        body: Comment text, 1-5000 characters.
        parent_comment_id: Id of the comment you are replying to; omit for a top-level comment.
    """
    user = access.me(ctx)
    post = access.get_post(ctx, post_id, user)
    if post["removed"]:
        raise ToolError(f"post {post_id} was removed by the moderators and is closed for comments")
    access.require_not_banned(ctx, {"id": post["community_id"], "name": post["community"]}, user)
    text = access.require_text(body, "body", 1, 5000)
    if parent_comment_id is not None:
        parent = access.get_comment(ctx, parent_comment_id, user, "parent_comment_id")
        if parent["post_id"] != post_id:
            raise ToolError(f"argument 'parent_comment_id': comment {parent_comment_id} belongs to post "
                            f"{parent['post_id']}, not to post {post_id}")
    cur = ctx.db.execute(
        "INSERT INTO comments(post_id, parent_id, author_id, body, created_on, score) VALUES (?, ?, ?, ?, ?, 0)",
        (post_id, parent_comment_id, user["id"], text, today(ctx)),
    )
    return {"comment_id": cur.lastrowid, "post_id": post_id, "parent_id": parent_comment_id, "created_on": today(ctx)}


@tool
def vote(ctx: ToolContext, direction: Literal["up", "down"], post_id: int | None = None,
         comment_id: int | None = None) -> dict[str, Any]:
    """Upvote or downvote one post or comment (one vote per item; an existing vote can only be flipped).

    Args:
        direction: 'up' or 'down'.
        post_id: Id of the post to vote on (give either post_id or comment_id).
        comment_id: Id of the comment to vote on (give either post_id or comment_id).
    """
    user = access.me(ctx)
    if (post_id is None) == (comment_id is None):
        raise ToolError("give exactly one of the arguments 'post_id' or 'comment_id'")
    if post_id is not None:
        item = access.get_post(ctx, post_id, user)
        post, table, column, item_id, noun = item, "posts", "post_id", post_id, "post"
    else:
        assert comment_id is not None
        item = access.get_comment(ctx, comment_id, user)
        post, table, column, item_id, noun = access.get_post(ctx, item["post_id"], user), "comments", "comment_id", comment_id, "comment"
    if post["removed"]:
        raise ToolError(f"post {post['id']} was removed by the moderators; it cannot be voted on")
    if item["author_id"] == user["id"]:
        raise ToolError(f"you cannot vote on your own {noun}")
    access.require_not_banned(ctx, {"id": post["community_id"], "name": post["community"]}, user)
    value = 1 if direction == "up" else -1
    existing = ctx.one(f"SELECT id, value FROM votes WHERE user_id=? AND {column}=?", (user["id"], item_id))
    if existing is not None and existing["value"] == value:
        raise ToolError(f"you already {direction}voted {noun} {item_id}; each user votes once per {noun}")
    if existing is None:
        ctx.db.execute(f"INSERT INTO votes(user_id, {column}, value, created_on) VALUES (?, ?, ?, ?)",
                       (user["id"], item_id, value, today(ctx)))
        delta = value
    else:
        ctx.db.execute("UPDATE votes SET value=?, created_on=? WHERE id=?", (value, today(ctx), existing["id"]))
        delta = 2 * value
    ctx.db.execute(f"UPDATE {table} SET score = score + ? WHERE id=?", (delta, item_id))
    ctx.db.execute("UPDATE users SET karma = karma + ? WHERE id=?", (delta, item["author_id"]))
    score = ctx.one(f"SELECT score FROM {table} WHERE id=?", (item_id,))
    return {column: item_id, "vote": direction, "score": score["score"] if score else None}


@tool
def report_post(ctx: ToolContext, post_id: int, reason: str, rule_number: int | None = None) -> dict[str, Any]:
    """Report a post to the community's moderators, optionally citing the rule it breaks.

    Args:
        post_id: Id of the post.
        reason: Short explanation for the moderators, 3-300 characters.
        rule_number: Number of the community rule the post breaks (see get_community).
    """
    user = access.me(ctx)
    post = access.get_post(ctx, post_id, user)
    if post["author_id"] == user["id"]:
        raise ToolError("you cannot report your own post")
    if post["removed"]:
        raise ToolError(f"post {post_id} was already removed by the moderators")
    text = access.require_text(reason, "reason", 3, 300)
    rule_id = None
    if rule_number is not None:
        rules = ctx.query("SELECT id, number, title FROM community_rules WHERE community_id=? ORDER BY number",
                          (post["community_id"],))
        match = [r for r in rules if r["number"] == rule_number]
        if not match:
            listed = "; ".join(f"{r['number']}. {r['title']}" for r in rules)
            raise ToolError(f"argument 'rule_number': r/{post['community']} has no rule {rule_number}; its rules: {listed}")
        rule_id = match[0]["id"]
    if ctx.one("SELECT id FROM reports WHERE post_id=? AND reporter_id=?", (post_id, user["id"])) is not None:
        raise ToolError(f"you already reported post {post_id}; each user reports a post once")
    cur = ctx.db.execute(
        "INSERT INTO reports(post_id, reporter_id, rule_id, reason, created_on, status) VALUES (?, ?, ?, ?, ?, 'open')",
        (post_id, user["id"], rule_id, text, today(ctx)),
    )
    return {"report_id": cur.lastrowid, "post_id": post_id, "rule_number": rule_number, "status": "open"}
