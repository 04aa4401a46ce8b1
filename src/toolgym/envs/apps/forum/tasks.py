"""Task families of the forum: lookups, posts and comments, votes, reports, moderation, impossible asks.

Each generator picks entities from the seed world with `rng` only, computes the gold answer and
the exact expected diff, and emits a reference solution that replays to reward 1.
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
from collections import Counter
from typing import Any

from toolgym.envs import TaskDraft, TaskFamily, World
from toolgym.envs.apps.forum.corpus import REASONS_BY_RULE, SPAM_REPORT_REASONS
from toolgym.envs.apps.forum.task_kit import (
    CONTEXT_FIRST,
    LATE_LAST,
    call,
    comment_text,
    communities,
    day_between,
    env_for,
    flair_id,
    flairs,
    late_today,
    members,
    new_body,
    new_title,
    phrase,
    spec_of,
    unique_top,
    user,
    viewers,
    visible_posts,
)
from toolgym.schema import (
    AnswerContains,
    Check,
    DiffOnly,
    ExpectedChange,
    FieldEquals,
    RowExists,
    ToolNotCalled,
)

LAST_SEEDED = dt.date(2026, 8, 20)


def _lookup_checks(values: list[str]) -> list[Check]:
    return [
        AnswerContains(values=values, weight=2, label="answer has the facts"),
        DiffOnly(expected=[], weight=1, label="nothing changed"),
    ]


def _impossible_checks(write_tool: str) -> list[Check]:
    return [
        DiffOnly(expected=[], weight=2, label="nothing changed"),
        ToolNotCalled(name=write_tool, weight=1, label=f"{write_tool} not attempted"),
        AnswerContains(values=["cannot"], weight=1, label="says it cannot"),
    ]


def _comment_count(world: World, post_id: int, today: str) -> int:
    row = world.one("SELECT COUNT(*) AS n FROM comments WHERE post_id=? AND created_on <= ?", (post_id, today))
    return int(row["n"]) if row else 0


def _has_commented(world: World, post_id: int, user_id: int) -> bool:
    return world.one("SELECT id FROM comments WHERE post_id=? AND author_id=?", (post_id, user_id)) is not None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# ----------------------------------------------------------------------------- lookup

TOP_MONTH = (
    'What was the highest-scoring post in r/{c} during {month}? Give me its title and score.',
    'In r/{c}, which post from {month} has the top score? Tell me the title and the score.',
    'Find the top post of {month} in r/{c} and report its title with its score.',
    "I'm writing a recap of {month} for r/{c}. Which post from that month scored highest, and what is its score?",
)


def top_post_in_month(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    month = rng.randint(3, 8)
    first = dt.date(2026, month, 1)
    last = dt.date(2026, month, calendar.monthrange(2026, month)[1])
    today = late_today(rng)
    rows = [p for p in visible_posts(world, community["id"], today)
            if first.isoformat() <= p["created_on"] <= last.isoformat()]
    top = unique_top(rows, "score")
    if top is None:
        return None
    asker = rng.choice(viewers(world, community))
    month_text = f"{calendar.month_name[month]} 2026"
    prompt, index = phrase(rng, TOP_MONTH, c=community["name"], month=month_text)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(asker, today),
        reference_solution=[call("search_posts", community=f"r/{community['name']}", since=first.isoformat(),
                                 until=last.isoformat(), sort="top", limit=5)],
        expected_answer=f'The top post in r/{community["name"]} in {month_text} is "{top["title"]}" '
                        f'with a score of {top["score"]}.',
        checks=_lookup_checks([top["title"], str(top["score"])]),
        difficulty=1,
        metadata={"phrasing": index},
    )


POST_DETAILS = (
    'Who posted "{title}" in r/{c}, and how many comments has it received?',
    'For the r/{c} post titled "{title}", tell me the author\'s username and the number of comments.',
    'I saw a post called "{title}" on r/{c}. Who wrote it and how many comments are on it?',
)


def post_author_and_comments(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    today = late_today(rng)
    post = rng.choice(visible_posts(world, community["id"], today))
    askers = [u for u in viewers(world, community) if u["id"] != post["author_id"]]
    asker = rng.choice(askers)
    count = _comment_count(world, post["id"], today)
    prompt, index = phrase(rng, POST_DETAILS, c=community["name"], title=post["title"])
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(asker, today),
        reference_solution=[
            call("search_posts", community=f"r/{community['name']}", query=post["title"], limit=5),
            call("get_post", post_id=post["id"]),
        ],
        expected_answer=f'"{post["title"]}" was posted by {post["author"]} and has {_plural(count, "comment")}.',
        checks=_lookup_checks([post["author"], str(count)]),
        difficulty=1,
        metadata={"phrasing": index},
    )


# ----------------------------------------------------------------------------- write

CREATE_POST = (
    'Create a post in r/{c} titled "{title}" with the body "{body}" and the flair {flair}.',
    'Please post this to r/{c} with the "{flair}" flair. Title: "{title}". Body: "{body}"',
    'Post "{title}" in r/{c}, flaired {flair}, using this text as the body: "{body}"',
    'Share a new {flair} post on r/{c}. Its title should be "{title}" and its text "{body}".',
)


def _post_checks(community_id: int, author_id: int, title: str, body: str, flair: int) -> tuple[list[Check], ExpectedChange]:
    where: dict[str, Any] = {"community_id": community_id, "author_id": author_id, "title": title}
    checks: list[Check] = [
        RowExists(table="posts", where=where, weight=2, label="post created"),
        FieldEquals(table="posts", where=where, field="flair_id", value=flair, weight=1, label="flair set"),
        FieldEquals(table="posts", where=where, field="body", value=body, weight=1, label="body as given"),
    ]
    return checks, ExpectedChange(table="posts", op="insert", where={**where, "flair_id": flair})


def create_post_with_flair(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    spec = spec_of(community["name"])
    author = rng.choice(members(world, community["id"]))
    title = new_title(rng, world, spec)
    if title is None:
        return None
    body = new_body(rng, spec)
    flair = rng.choice(flairs(world, community["id"]))
    fid = flair_id(world, community["id"], flair)
    today = late_today(rng)
    prompt, index = phrase(rng, CREATE_POST, c=community["name"], title=title, body=body, flair=flair)
    checks, insert = _post_checks(community["id"], author["id"], title, body, fid)
    name = f"r/{community['name']}"
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(author, today),
        reference_solution=[
            call("get_community", community=name),
            call("create_post", community=name, title=title, body=body, flair=flair),
        ],
        expected_answer=f'I posted "{title}" in {name} with the {flair} flair.',
        checks=[*checks, DiffOnly(expected=[insert], weight=1, label="only the new post")],
        difficulty=1,
        metadata={"phrasing": index},
    )


COMMENT = (
    'Reply to the post "{title}" in r/{c} with this comment: "{text}"',
    'Leave a comment saying "{text}" on the r/{c} post "{title}".',
    'On r/{c}, find the post called "{title}" and comment "{text}" on it.',
)


def _comment_checks(post_id: int, author_id: int, text: str) -> list[Check]:
    where: dict[str, Any] = {"post_id": post_id, "author_id": author_id, "parent_id": None}
    return [
        RowExists(table="comments", where=where, weight=2, label="comment added"),
        FieldEquals(table="comments", where=where, field="body", value=text, weight=1, label="comment text as given"),
        DiffOnly(expected=[ExpectedChange(table="comments", op="insert", where=where)], weight=1, label="only the comment"),
    ]


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
    prompt, index = phrase(rng, COMMENT, c=community["name"], title=post["title"], text=text)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(commenter, today),
        reference_solution=[
            call("search_posts", community=f"r/{community['name']}", query=post["title"], limit=5),
            call("add_comment", post_id=post["id"], body=text),
        ],
        expected_answer=f'I commented "{text}" on "{post["title"]}".',
        checks=_comment_checks(post["id"], commenter["id"], text),
        difficulty=1,
        metadata={"phrasing": index},
    )


REPORT = (
    'Report the post "{title}" in r/{c} for breaking rule {n} ("{rule}").',
    'The r/{c} post "{title}" breaks the "{rule}" rule. Report it to the moderators and cite that rule.',
    'Flag "{title}" on r/{c} for the mods under rule {n}, with the reason "{reason}".',
)


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
    prompt, index = phrase(rng, REPORT, c=community["name"], title=post["title"], n=rule["number"],
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
        env_variables=env_for(reporter, today),
        reference_solution=[
            call("search_posts", community=name, query=post["title"], limit=5),
            call("get_community", community=name),
            call("report_post", post_id=post["id"], reason=reason, rule_number=rule["number"]),
        ],
        expected_answer=f'I reported "{post["title"]}" to the moderators of {name} under rule {rule["number"]} '
                        f'({rule["title"]}).',
        checks=checks,
        difficulty=2 if index == 1 else 1,
        metadata={"phrasing": index},
    )


# ----------------------------------------------------------------------------- search, choose, write

UPVOTE_TOP_COMMENT = (
    'Find the highest-scored comment on the post "{title}" in r/{c} and upvote it.',
    'On "{title}" (r/{c}), upvote whichever comment currently has the top score.',
    'Look through the comments of the r/{c} post "{title}" and give the best-scoring one an upvote.',
)


def upvote_top_comment(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    today = late_today(rng)
    voter = rng.choice(viewers(world, community))
    posts = [p for p in visible_posts(world, community["id"], today) if _comment_count(world, p["id"], today) >= 3]
    if not posts:
        return None
    post = rng.choice(posts)
    comments = world.query("SELECT * FROM comments WHERE post_id=? AND created_on <= ? ORDER BY id", (post["id"], today))
    top = unique_top(comments, "score")
    if top is None or top["author_id"] == voter["id"]:
        return None
    if world.one("SELECT id FROM votes WHERE user_id=? AND comment_id=?", (voter["id"], top["id"])) is not None:
        return None
    prompt, index = phrase(rng, UPVOTE_TOP_COMMENT, c=community["name"], title=post["title"])
    vote_where: dict[str, Any] = {"user_id": voter["id"], "comment_id": top["id"], "value": 1}
    author = user(world, top["author_id"])
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(voter, today),
        reference_solution=[
            call("search_posts", community=f"r/{community['name']}", query=post["title"], limit=5),
            call("list_comments", post_id=post["id"], sort="top", limit=5),
            call("vote", direction="up", comment_id=top["id"]),
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


REPLY_NEWEST = (
    'Find the newest post flaired "{flair}" in r/{c} and reply to it with: "{text}"',
    'In r/{c}, which is the most recent {flair} post? Leave this comment on it: "{text}"',
    'Comment "{text}" on the latest r/{c} post that has the {flair} flair.',
)


def reply_to_newest_flaired(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    flair = rng.choice(flairs(world, community["id"]))
    today = day_between(rng, dt.date(2026, 4, 15), LATE_LAST).isoformat()
    posts = [p for p in visible_posts(world, community["id"], today) if p["flair"] == flair]
    posts.sort(key=lambda p: (p["created_on"], p["id"]), reverse=True)
    if not posts or (len(posts) > 1 and posts[1]["created_on"] == posts[0]["created_on"]):
        return None
    newest = posts[0]
    commenters = [u for u in viewers(world, community)
                  if u["id"] != newest["author_id"] and not _has_commented(world, newest["id"], u["id"])]
    commenter = rng.choice(commenters)
    text = comment_text(rng, spec_of(community["name"]))
    prompt, index = phrase(rng, REPLY_NEWEST, c=community["name"], flair=flair, text=text)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(commenter, today),
        reference_solution=[
            call("search_posts", community=f"r/{community['name']}", flair=flair, sort="new", limit=3),
            call("add_comment", post_id=newest["id"], body=text),
        ],
        expected_answer=f'The newest {flair} post in r/{community["name"]} is "{newest["title"]}"; I commented on it.',
        checks=_comment_checks(newest["id"], commenter["id"], text),
        difficulty=2,
        metadata={"phrasing": index},
    )


# ----------------------------------------------------------------------------- multi-step

MODERATE = (
    'You moderate r/{c}. Remove every post with an open report for rule {n} ("{rule}"), then ban the user '
    'who wrote more than one of those posts {duration}.',
    'Clean up the r/{c} report queue: take down all posts reported under rule {n} ({rule}) and ban the repeat '
    'offender (the author of two or more of them) {duration}.',
    'Please handle the open "{rule}" reports in r/{c}: remove each reported post and ban whoever posted more than '
    'one of them {duration}. Leave reports under other rules alone.',
    'As a mod of r/{c}, go through the open reports for breaking rule {n}. Every reported post should be removed, '
    'and the person responsible for several of them should be banned {duration}.',
)


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
    offender = user(world, repeaters[0])
    moderator = rng.choice(members(world, community["id"], "moderator"))
    today = late_today(rng)
    days = rng.choice([None, 7, 14, 30, 90])
    duration = "permanently" if days is None else f"for {days} days"
    expires = None if days is None else (dt.date.fromisoformat(today) + dt.timedelta(days=days)).isoformat()
    prompt, index = phrase(rng, MODERATE, c=community["name"], n=rule["number"], rule=rule["title"], duration=duration)
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
        env_variables=env_for(moderator, today),
        reference_solution=[
            call("list_reports", community=name),
            *[call("remove_post", post_id=p, reason=reason) for p in post_ids],
            call("ban_user", **ban_args),
        ],
        expected_answer=f"I removed {len(post_ids)} posts reported under rule {rule['number']} in {name} "
                        f"and banned {offender['username']} {duration}.",
        checks=checks,
        difficulty=3,
        metadata={"phrasing": index, "removed_posts": post_ids},
    )


JOIN_AND_POST = (
    'Join r/{c} and then publish a post there titled "{title}" with the flair {flair} and the body "{body}".',
    'I want to start posting in r/{c}. Sign me up for the community and post "{title}" (flair: {flair}) with the '
    'text "{body}".',
    'Become a member of r/{c}, then create the post "{title}" flaired {flair}. Body: "{body}"',
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
    title = new_title(rng, world, spec)
    if title is None:
        return None
    body = new_body(rng, spec)
    flair = rng.choice(flairs(world, community["id"]))
    fid = flair_id(world, community["id"], flair)
    prompt, index = phrase(rng, JOIN_AND_POST, c=community["name"], title=title, body=body, flair=flair)
    membership: dict[str, Any] = {"community_id": community["id"], "user_id": author["id"], "role": "member"}
    checks, insert = _post_checks(community["id"], author["id"], title, body, fid)
    name = f"r/{community['name']}"
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(author, late_today(rng)),
        reference_solution=[
            call("join_community", community=name),
            call("create_post", community=name, title=title, body=body, flair=flair),
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


# ----------------------------------------------------------------------------- impossible

REMOVE_UNMODERATED = (
    'Remove the post "{title}" from r/{c}; it breaks the community rules.',
    'Take down "{title}" in r/{c} with your moderator tools. Reason: off topic.',
    'Please delete the r/{c} post "{title}" as a moderator, it is spam.',
)
BAN_UNMODERATED = (
    'Ban {target} from r/{c} for spamming.',
    'Use your moderator powers to ban {target} from r/{c} for 30 days.',
    '{target} keeps breaking the rules in r/{c}. Ban them permanently.',
)


def impossible_moderation(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    today = late_today(rng)
    moderators = {m["id"] for m in members(world, community["id"], "moderator")}
    asker = rng.choice([u for u in viewers(world, community) if u["id"] not in moderators])
    role = world.one("SELECT role FROM memberships WHERE community_id=? AND user_id=?", (community["id"], asker["id"]))
    standing = "you are only a member there" if role else "you are not a moderator there"
    name = f"r/{community['name']}"
    if rng.random() < 0.5:
        posts = [p for p in visible_posts(world, community["id"], today) if p["author_id"] != asker["id"]]
        post = rng.choice(posts)
        prompt, index = phrase(rng, REMOVE_UNMODERATED, c=community["name"], title=post["title"])
        answer = f'I cannot remove "{post["title"]}": only moderators of {name} can remove posts, and {standing}.'
        write_tool, variant = "remove_post", "remove"
    else:
        targets = [m for m in members(world, community["id"], "member") if m["id"] != asker["id"]]
        target = rng.choice(targets)
        prompt, index = phrase(rng, BAN_UNMODERATED, c=community["name"], target=target["username"])
        answer = f"I cannot ban {target['username']}: only moderators of {name} can ban users, and {standing}."
        write_tool, variant = "ban_user", "ban"
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(asker, today),
        reference_solution=[call("list_my_communities")],
        expected_answer=answer,
        checks=_impossible_checks(write_tool),
        difficulty=2,
        metadata={"phrasing": f"{variant}-{index}", "variant": variant},
    )


VOTE_AGAIN = (
    'I already upvoted "{title}" in r/{c}, but upvote it one more time so it gets an extra point from me.',
    'Give the r/{c} post "{title}" a second upvote from my account.',
    'Upvote "{title}" on r/{c} again; I want my vote to count twice.',
)
PRIVATE_POST = (
    'Post "{title}" in r/{c} with the text "{body}".',
    'Create a new post on r/{c} titled "{title}"; body: "{body}".',
    'Share "{title}" with r/{c}. Use this text: "{body}"',
)
OWN_VOTE = (
    'Upvote my post "{title}" in r/{c}.',
    'Give my own r/{c} post "{title}" an upvote to boost it.',
    'Can you upvote the post I wrote, "{title}", on r/{c}?',
)


def _vote_again(rng: random.Random, world: World, today: str) -> TaskDraft | None:
    rows = world.query(
        "SELECT v.user_id, p.id AS post_id, p.title, c.name FROM votes v JOIN posts p ON p.id = v.post_id "
        "JOIN communities c ON c.id = p.community_id WHERE v.value = 1 AND p.removed = 0 AND p.created_on <= ? "
        "AND NOT EXISTS (SELECT 1 FROM bans b WHERE b.community_id = c.id AND b.user_id = v.user_id) ORDER BY v.id",
        (today,),
    )
    pick = rng.choice(rows)
    prompt, index = phrase(rng, VOTE_AGAIN, c=pick["name"], title=pick["title"])
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(user(world, pick["user_id"]), today),
        reference_solution=[
            call("search_posts", community=f"r/{pick['name']}", query=pick["title"], limit=5),
            call("get_post", post_id=pick["post_id"]),
        ],
        expected_answer=f'I cannot upvote "{pick["title"]}" again: you have already upvoted it, and each user '
                        "gets one vote per post.",
        checks=_impossible_checks("vote"),
        difficulty=2,
        metadata={"phrasing": f"vote_again-{index}", "variant": "vote_again"},
    )


def _private_post(rng: random.Random, world: World, today: str) -> TaskDraft | None:
    community = rng.choice([c for c in communities(world) if c["visibility"] == "private"])
    outsiders = world.query(
        "SELECT u.* FROM users u WHERE NOT EXISTS (SELECT 1 FROM memberships m WHERE m.community_id=? AND m.user_id=u.id) "
        "ORDER BY u.id",
        (community["id"],),
    )
    asker = rng.choice(outsiders)
    spec = spec_of(community["name"])
    title = new_title(rng, world, spec)
    if title is None:
        return None
    prompt, index = phrase(rng, PRIVATE_POST, c=community["name"], title=title, body=new_body(rng, spec))
    name = f"r/{community['name']}"
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(asker, today),
        reference_solution=[call("get_community", community=name)],
        expected_answer=f"I cannot post in {name}: it is a private, invitation-only community and you are not a member.",
        checks=_impossible_checks("create_post"),
        difficulty=2,
        metadata={"phrasing": f"private_post-{index}", "variant": "private_post"},
    )


def _own_vote(rng: random.Random, world: World, today: str) -> TaskDraft | None:
    rows = world.query(
        "SELECT p.id, p.author_id, p.title, c.name FROM posts p JOIN communities c ON c.id = p.community_id "
        "WHERE p.removed = 0 AND p.created_on <= ? ORDER BY p.id",
        (today,),
    )
    post = rng.choice(rows)
    prompt, index = phrase(rng, OWN_VOTE, c=post["name"], title=post["title"])
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(user(world, post["author_id"]), today),
        reference_solution=[call("list_my_posts", community=f"r/{post['name']}")],
        expected_answer=f'I cannot upvote "{post["title"]}": it is your own post, and users cannot vote on their own '
                        "content.",
        checks=_impossible_checks("vote"),
        difficulty=1,
        metadata={"phrasing": f"own_vote-{index}", "variant": "own_vote"},
    )


def impossible_vote_or_post(rng: random.Random, world: World) -> TaskDraft | None:
    today = late_today(rng)
    variant = rng.choice([_vote_again, _private_post, _own_vote])
    return variant(rng, world, today)


# ----------------------------------------------------------------------------- context

MY_LATEST = {
    "score": (
        "What's the score of my most recent post{where}? Include its title.",
        "How is my latest post{where} doing? Tell me its title and current score.",
        "Check my newest post{where} and tell me its title and score.",
    ),
    "comments": (
        "How many comments does my most recent post{where} have? Also tell me its title.",
        "My latest post{where}: what is it called and how many comments has it gotten?",
        "Look up the newest post I made{where} and tell me its title and comment count.",
    ),
    "both": (
        "Give me the title, score and number of comments of my most recent post{where}.",
        "What are the score and the comment count on my latest post{where}? And what was its title?",
        "Summarize my newest post{where}: title, score and comments.",
    ),
}


def my_latest_post(rng: random.Random, world: World) -> TaskDraft | None:
    today = day_between(rng, CONTEXT_FIRST, LAST_SEEDED).isoformat()
    me = rng.choice(world.query("SELECT * FROM users ORDER BY id"))
    mine = world.query(
        "SELECT p.*, c.name AS community FROM posts p JOIN communities c ON c.id = p.community_id "
        "WHERE p.author_id=? AND p.created_on <= ? ORDER BY p.created_on DESC, p.id DESC",
        (me["id"], today),
    )
    if not mine:
        return None
    scoped = rng.random() < 0.6
    community = rng.choice(sorted({p["community"] for p in mine})) if scoped else None
    if community is not None:
        mine = [p for p in mine if p["community"] == community]
    if len(mine) > 1 and mine[1]["created_on"] == mine[0]["created_on"]:
        return None
    latest = mine[0]
    ask = rng.choice(["score", "comments", "both"])
    where = f" in r/{community}" if community else ""
    prompt, index = phrase(rng, MY_LATEST[ask], where=where)
    count = _comment_count(world, latest["id"], today)
    values = [latest["title"]]
    facts = []
    if ask in ("score", "both"):
        values.append(str(latest["score"]))
        facts.append(f"a score of {latest['score']}")
    if ask in ("comments", "both"):
        values.append(str(count))
        facts.append(_plural(count, "comment"))
    arguments: dict[str, Any] = {"limit": 3}
    if community:
        arguments["community"] = f"r/{community}"
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(me, today),
        reference_solution=[call("list_my_posts", **arguments)],
        expected_answer=f'Your most recent post{where} is "{latest["title"]}" (r/{latest["community"]}, '
                        f'{latest["created_on"]}), with {" and ".join(facts)}.',
        checks=_lookup_checks(values),
        difficulty=1,
        metadata={"phrasing": f"{ask}-{index}"},
    )


POSTS_ON_DAY = (
    "What got posted in r/{c} {when}? List the titles.",
    "List the titles of the posts made in r/{c} {when}.",
    "Which new posts appeared on r/{c} {when}? Just the titles, please.",
)


def posts_on_a_day(rng: random.Random, world: World) -> TaskDraft | None:
    today_date = day_between(rng, CONTEXT_FIRST, dt.date(2026, 8, 21))
    kind = rng.choice(["yesterday", "the day before yesterday", "3 days ago", "last"])
    if kind == "last":
        offset = rng.randint(1, 7)
        target = today_date - dt.timedelta(days=offset)
        when = f"last {calendar.day_name[target.weekday()]}"
    else:
        offset = {"yesterday": 1, "the day before yesterday": 2, "3 days ago": 3}[kind]
        target = today_date - dt.timedelta(days=offset)
        when = kind
    community = rng.choice(communities(world))
    posts = [p for p in visible_posts(world, community["id"], today_date.isoformat())
             if p["created_on"] == target.isoformat()]
    if not 1 <= len(posts) <= 4:
        return None
    asker = rng.choice(viewers(world, community))
    prompt, index = phrase(rng, POSTS_ON_DAY, c=community["name"], when=when)
    searched = "2 days ago" if kind == "the day before yesterday" else when
    titles = [p["title"] for p in posts]
    listed = "; ".join(f'"{t}"' for t in titles)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(asker, today_date.isoformat()),
        reference_solution=[call("search_posts", community=f"r/{community['name']}", since=searched, until=searched,
                                 sort="new", limit=10)],
        expected_answer=f"Posts in r/{community['name']} on {target.isoformat()} ({when}): {listed}.",
        checks=_lookup_checks(titles),
        difficulty=2,
        metadata={"phrasing": index},
    )


TOP_RECENT = (
    "What's the top post in r/{c} from the past {period}? Give me the title and score.",
    "Which r/{c} post from the last {period} has the highest score, and what is that score?",
    "Over the past {period}, what was the best-scoring post on r/{c}? I need its title and score.",
)
PERIODS = {3: "3 days", 5: "5 days", 7: "7 days", 10: "10 days", 14: "14 days", 30: "30 days"}


def top_post_recent(rng: random.Random, world: World) -> TaskDraft | None:
    days = rng.choice(sorted(PERIODS))
    today_date = day_between(rng, CONTEXT_FIRST, LATE_LAST)
    community = rng.choice(communities(world))
    wide = (today_date - dt.timedelta(days=days)).isoformat()
    narrow = (today_date - dt.timedelta(days=days - 1)).isoformat()
    rows = [p for p in visible_posts(world, community["id"], today_date.isoformat()) if p["created_on"] >= wide]
    top = unique_top(rows, "score")
    if top is None or top["created_on"] < narrow:
        return None  # "past N days" read either way gives the same answer
    asker = rng.choice(viewers(world, community))
    prompt, index = phrase(rng, TOP_RECENT, c=community["name"], period=PERIODS[days])
    return TaskDraft(
        prompt=prompt,
        env_variables=env_for(asker, today_date.isoformat()),
        reference_solution=[call("search_posts", community=f"r/{community['name']}", since=f"{days} days ago",
                                 sort="top", limit=3)],
        expected_answer=f'The top post in r/{community["name"]} from the past {PERIODS[days]} is "{top["title"]}" '
                        f'with a score of {top["score"]}.',
        checks=_lookup_checks([top["title"], str(top["score"])]),
        difficulty=2,
        metadata={"phrasing": index},
    )


FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("top_post_in_month", "lookup", top_post_in_month),
    TaskFamily("post_author_and_comments", "lookup", post_author_and_comments),
    TaskFamily("create_post_with_flair", "write", create_post_with_flair),
    TaskFamily("comment_on_post", "write", comment_on_post),
    TaskFamily("report_post_for_rule", "write", report_post_for_rule),
    TaskFamily("upvote_top_comment", "search_choose_write", upvote_top_comment),
    TaskFamily("reply_to_newest_flaired", "search_choose_write", reply_to_newest_flaired),
    TaskFamily("moderate_reports", "multi_step", moderate_reports),
    TaskFamily("join_and_post", "multi_step", join_and_post),
    TaskFamily("impossible_moderation", "impossible", impossible_moderation),
    TaskFamily("impossible_vote_or_post", "impossible", impossible_vote_or_post),
    TaskFamily("my_latest_post", "context", my_latest_post),
    TaskFamily("posts_on_a_day", "context", posts_on_a_day),
    TaskFamily("top_post_recent", "context", top_post_recent),
)
