"""Forum task families that write: posting with a flair, commenting, reporting, voting, replying,
moderating reports and joining a community to post."""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.forum.content import REASONS_BY_RULE, SPAM_REPORT_REASONS, CommunitySpec
from toolgym.envs.apps.forum.task_common import (
    LATE_LAST,
    comment_count,
    comment_text,
    communities,
    flair_id,
    flairs,
    late_today,
    members,
    new_body,
    new_title,
    spec_of,
    viewers,
    visible_posts,
)
from toolgym.schema import Check, DiffOnly, ExpectedChange, FieldEquals, RowExists, ToolCall

TEXTS = kit.module_texts(__file__)


def _has_commented(world: World, post_id: int, user_id: int) -> bool:
    return world.one("SELECT id FROM comments WHERE post_id=? AND author_id=?", (post_id, user_id)) is not None


def _post_checks(community_id: int, author_id: int, title: str, body: str, flair: int) -> tuple[list[Check], ExpectedChange]:
    where: dict[str, Any] = {"community_id": community_id, "author_id": author_id, "title": title}
    checks: list[Check] = [
        RowExists(table="posts", where=where, weight=2, label="post created"),
        FieldEquals(table="posts", where=where, field="flair_id", value=flair, weight=1, label="flair set"),
        FieldEquals(table="posts", where=where, field="body", value=body, weight=1, label="body as given"),
    ]
    return checks, ExpectedChange(table="posts", op="insert", where={**where, "flair_id": flair})


def _new_post(rng: random.Random, world: World, community: dict[str, Any],
              spec: CommunitySpec) -> tuple[str, str, str, int] | None:
    """A post to write in `community`: an unused title, a body, a flair and that flair's id; None when no
    unused title was found."""
    title = new_title(rng, world, spec)
    if title is None:
        return None
    body = new_body(rng, spec)
    flair = rng.choice(flairs(world, community["id"]))
    return title, body, flair, flair_id(world, community["id"], flair)


def create_post_with_flair(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    spec = spec_of(community["name"])
    author = rng.choice(members(world, community["id"]))
    post = _new_post(rng, world, community, spec)
    if post is None:
        return None
    title, body, flair, fid = post
    today = late_today(rng)
    index, prompt = kit.phrase(rng, TEXTS["CREATE_POST"], c=community["name"], title=title, body=body, flair=flair)
    checks, insert = _post_checks(community["id"], author["id"], title, body, fid)
    name = f"r/{community['name']}"
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(author, today, "display_name"),
        reference_solution=[
            kit.call("get_community", community=name),
            kit.call("create_post", community=name, title=title, body=body, flair=flair),
        ],
        expected_answer=f'I posted "{title}" in {name} with the {flair} flair.',
        checks=[*checks, DiffOnly(expected=[insert], weight=1, label="only the new post")],
        difficulty=1,
        metadata={"phrasing": index},
    )


def _comment_task(phrased: tuple[int, str], commenter: dict[str, Any], today: str, post: dict[str, Any],
                  text: str, find: ToolCall, answer: str, difficulty: int) -> TaskDraft:
    """A task whose one change is `commenter`'s top-level comment `text` on `post`, which the `find` call
    turns up; `phrased` is the prompt's phrasing index and text."""
    index, prompt = phrased
    where: dict[str, Any] = {"post_id": post["id"], "author_id": commenter["id"], "parent_id": None}
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(commenter, today, "display_name"),
        reference_solution=[find, kit.call("add_comment", post_id=post["id"], body=text)],
        expected_answer=answer,
        checks=[
            RowExists(table="comments", where=where, weight=2, label="comment added"),
            FieldEquals(table="comments", where=where, field="body", value=text, weight=1,
                        label="comment text as given"),
            DiffOnly(expected=[ExpectedChange(table="comments", op="insert", where=where)], weight=1,
                     label="only the comment"),
        ],
        difficulty=difficulty,
        metadata={"phrasing": index},
    )


def comment_on_post(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    today = late_today(rng)
    commenter = rng.choice(viewers(world, community))
    posts = [p for p in visible_posts(world, community["id"], today)
             if p["author_id"] != commenter["id"] and not _has_commented(world, p["id"], commenter["id"])]
    if not posts:
        return None
    post = rng.choice(posts)
    text = comment_text(rng, spec_of(community["name"]))
    phrased = kit.phrase(rng, TEXTS["COMMENT"], c=community["name"], title=post["title"], text=text)
    find = kit.call("search_posts", community=f"r/{community['name']}", query=post["title"], limit=5)
    answer = f'I commented "{text}" on "{post["title"]}".'
    return _comment_task(phrased, commenter, today, post, text, find, answer, difficulty=1)


def report_post_for_rule(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    spec = spec_of(community["name"])
    today = late_today(rng)
    reporter = rng.choice(viewers(world, community))
    posts = [p for p in visible_posts(world, community["id"], today) if p["author_id"] != reporter["id"]
             and world.one("SELECT id FROM reports WHERE post_id=? AND reporter_id=?", (p["id"], reporter["id"])) is None]
    if not posts:
        return None
    post = rng.choice(posts)
    rules = world.query("SELECT * FROM community_rules WHERE community_id=? ORDER BY number", (community["id"],))
    spam = community["visibility"] == "public" and world.one(
        "SELECT r.id FROM reports r JOIN community_rules cr ON cr.id = r.rule_id WHERE r.post_id=? AND cr.number=?",
        (post["id"], spec.spam_rule)) is not None
    rule = rules[spec.spam_rule - 1] if spam else rng.choice([r for r in rules if r["number"] != spec.spam_rule])
    reasons = SPAM_REPORT_REASONS if spam else REASONS_BY_RULE.get(rule["title"], (f"Breaks the '{rule['title']}' rule",))
    reason = rng.choice(reasons)
    index, prompt = kit.phrase(rng, TEXTS["REPORT"], c=community["name"], title=post["title"], n=rule["number"],
                               rule=rule["title"], reason=reason)
    where: dict[str, Any] = {"post_id": post["id"], "reporter_id": reporter["id"], "rule_id": rule["id"]}
    checks: list[Check] = [
        RowExists(table="reports", where={**where, "status": "open"}, weight=2, label="report filed under the rule"),
        DiffOnly(expected=[ExpectedChange(table="reports", op="insert", where=where)], weight=1, label="only the report"),
    ]
    if index == 2:
        checks.append(FieldEquals(table="reports", where=where, field="reason", value=reason, weight=1,
                                  label="reason as given"))
    name = f"r/{community['name']}"
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(reporter, today, "display_name"),
        reference_solution=[
            kit.call("search_posts", community=name, query=post["title"], limit=5),
            kit.call("get_community", community=name),
            kit.call("report_post", post_id=post["id"], reason=reason, rule_number=rule["number"]),
        ],
        expected_answer=f'I reported "{post["title"]}" to the moderators of {name} under rule {rule["number"]} '
                        f'({rule["title"]}).',
        checks=checks,
        difficulty=2 if index == 1 else 1,
        metadata={"phrasing": index},
    )


def upvote_top_comment(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    today = late_today(rng)
    voter = rng.choice(viewers(world, community))
    posts = [p for p in visible_posts(world, community["id"], today) if comment_count(world, p["id"], today) >= 3]
    if not posts:
        return None
    post = rng.choice(posts)
    comments = world.query("SELECT * FROM comments WHERE post_id=? AND created_on <= ? ORDER BY id", (post["id"], today))
    top = kit.unique_best(comments, "score", largest=True)
    if top is None or top["author_id"] == voter["id"]:
        return None
    if world.one("SELECT id FROM votes WHERE user_id=? AND comment_id=?", (voter["id"], top["id"])) is not None:
        return None
    index, prompt = kit.phrase(rng, TEXTS["UPVOTE_TOP_COMMENT"], c=community["name"], title=post["title"])
    vote_where: dict[str, Any] = {"user_id": voter["id"], "comment_id": top["id"], "value": 1}
    author = kit.user_by_id(world, top["author_id"], "*")
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(voter, today, "display_name"),
        reference_solution=[
            kit.call("search_posts", community=f"r/{community['name']}", query=post["title"], limit=5),
            kit.call("list_comments", post_id=post["id"], sort="top", limit=5),
            kit.call("vote", direction="up", comment_id=top["id"]),
        ],
        expected_answer=f'I upvoted the top comment on "{post["title"]}", by {author["username"]} '
                        f'(score {top["score"]} before my vote).',
        checks=[
            RowExists(table="votes", where=vote_where, weight=2, label="upvote on the top comment"),
            FieldEquals(table="comments", where={"id": top["id"]}, field="score", value=top["score"] + 1, weight=1,
                        label="comment score went up by one"),
            DiffOnly(expected=[
                ExpectedChange(table="votes", op="insert", where=vote_where),
                ExpectedChange(table="comments", op="update", where={"id": top["id"]}, fields=["score"]),
                ExpectedChange(table="users", op="update", where={"id": author["id"]}, fields=["karma"]),
            ], weight=1, label="only that vote"),
        ],
        difficulty=2,
        metadata={"phrasing": index},
    )


def reply_to_newest_flaired(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    flair = rng.choice(flairs(world, community["id"]))
    today = kit.random_day(rng, dt.date(2026, 4, 15), LATE_LAST).isoformat()
    posts = [p for p in visible_posts(world, community["id"], today) if p["flair"] == flair]
    posts.sort(key=lambda p: (p["created_on"], p["id"]), reverse=True)
    if not posts or (len(posts) > 1 and posts[1]["created_on"] == posts[0]["created_on"]):
        return None
    newest = posts[0]
    commenters = [u for u in viewers(world, community)
                  if u["id"] != newest["author_id"] and not _has_commented(world, newest["id"], u["id"])]
    commenter = rng.choice(commenters)
    text = comment_text(rng, spec_of(community["name"]))
    phrased = kit.phrase(rng, TEXTS["REPLY_NEWEST"], c=community["name"], flair=flair, text=text)
    find = kit.call("search_posts", community=f"r/{community['name']}", flair=flair, sort="new", limit=3)
    answer = f'The newest {flair} post in r/{community["name"]} is "{newest["title"]}"; I commented on it.'
    return _comment_task(phrased, commenter, today, newest, text, find, answer, difficulty=2)


def moderate_reports(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice([c for c in communities(world) if c["visibility"] == "public"])
    spec = spec_of(community["name"])
    rule = world.one("SELECT * FROM community_rules WHERE community_id=? AND number=?", (community["id"], spec.spam_rule))
    assert rule is not None
    reported = world.query(
        "SELECT DISTINCT p.id, p.author_id FROM reports r JOIN posts p ON p.id = r.post_id "
        "WHERE p.community_id=? AND r.rule_id=? AND r.status='open' AND p.removed=0 ORDER BY p.id",
        (community["id"], rule["id"]),
    )
    per_author = Counter(r["author_id"] for r in reported)
    repeaters = sorted(a for a, n in per_author.items() if n >= 2)
    if len(repeaters) != 1:
        return None
    offender = kit.user_by_id(world, repeaters[0], "*")
    moderator = rng.choice(members(world, community["id"], "moderator"))
    today = late_today(rng)
    days = rng.choice([None, 7, 14, 30, 90])
    duration = "permanently" if days is None else f"for {days} days"
    expires = None if days is None else (dt.date.fromisoformat(today) + dt.timedelta(days=days)).isoformat()
    index, prompt = kit.phrase(
        rng, TEXTS["MODERATE"], c=community["name"], n=rule["number"], rule=rule["title"], duration=duration)
    name = f"r/{community['name']}"
    reason = f"Rule {rule['number']}: {rule['title']}"
    post_ids = [r["id"] for r in reported]
    ban_args: dict[str, Any] = {"community": name, "username": offender["username"],
                                "reason": f"Repeated breaking of rule {rule['number']}"}
    if days is not None:
        ban_args["duration_days"] = days
    ban_where: dict[str, Any] = {"community_id": community["id"], "user_id": offender["id"]}
    expected = []
    for post_id in post_ids:
        expected += [
            ExpectedChange(table="posts", op="update", where={"id": post_id}, fields=["removed", "removed_reason"]),
            ExpectedChange(table="reports", op="update", where={"post_id": post_id}, fields=["status"]),
            ExpectedChange(table="moderation_actions", op="insert", where={"action": "remove_post", "post_id": post_id}),
        ]
    expected += [
        ExpectedChange(table="bans", op="insert", where=ban_where),
        ExpectedChange(table="moderation_actions", op="insert",
                       where={"action": "ban_user", "target_user_id": offender["id"]}),
    ]
    checks: list[Check] = [
        FieldEquals(table="posts", where={"id": p}, field="removed", value=1, weight=1, label=f"post {p} removed")
        for p in post_ids
    ]
    checks += [
        RowExists(table="bans", where={**ban_where, "expires_on": expires}, weight=2, label="repeat offender banned"),
        DiffOnly(expected=expected, weight=2, label="only those removals and that ban"),
    ]
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(moderator, today, "display_name"),
        reference_solution=[
            kit.call("list_reports", community=name),
            *[kit.call("remove_post", post_id=p, reason=reason) for p in post_ids],
            kit.call("ban_user", **ban_args),
        ],
        expected_answer=f"I removed {len(post_ids)} posts reported under rule {rule['number']} in {name} "
                        f"and banned {offender['username']} {duration}.",
        checks=checks,
        difficulty=3,
        metadata={"phrasing": index, "removed_posts": post_ids},
    )


def join_and_post(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice([c for c in communities(world) if c["visibility"] == "public"])
    spec = spec_of(community["name"])
    outsiders = world.query(
        "SELECT u.* FROM users u WHERE NOT EXISTS (SELECT 1 FROM memberships m WHERE m.community_id=? AND m.user_id=u.id) "
        "AND NOT EXISTS (SELECT 1 FROM bans b WHERE b.community_id=? AND b.user_id=u.id) ORDER BY u.id",
        (community["id"], community["id"]),
    )
    author = rng.choice(outsiders)
    post = _new_post(rng, world, community, spec)
    if post is None:
        return None
    title, body, flair, fid = post
    index, prompt = kit.phrase(rng, TEXTS["JOIN_AND_POST"], c=community["name"], title=title, body=body, flair=flair)
    membership: dict[str, Any] = {"community_id": community["id"], "user_id": author["id"], "role": "member"}
    checks, insert = _post_checks(community["id"], author["id"], title, body, fid)
    name = f"r/{community['name']}"
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(author, late_today(rng), "display_name"),
        reference_solution=[
            kit.call("join_community", community=name),
            kit.call("create_post", community=name, title=title, body=body, flair=flair),
        ],
        expected_answer=f'I joined {name} and posted "{title}" with the {flair} flair.',
        checks=[
            RowExists(table="memberships", where=membership, weight=1, label="joined the community"),
            *checks,
            DiffOnly(expected=[ExpectedChange(table="memberships", op="insert", where=membership), insert],
                     weight=1, label="only the membership and the post"),
        ],
        difficulty=2,
        metadata={"phrasing": index},
    )
