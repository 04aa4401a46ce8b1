"""Forum requests the rules forbid (moderating without the role, voting twice, posting where I cannot,
voting on my own post): the agent must change nothing and say why."""

from __future__ import annotations

import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.forum.task_common import (
    communities,
    late_today,
    members,
    new_body,
    new_title,
    spec_of,
    viewers,
    visible_posts,
)
from toolgym.schema import ToolCall

TEXTS = kit.module_texts(__file__)


def _refusal(variant: str, phrased: tuple[int, str], asker: dict[str, Any], today: str, calls: list[ToolCall],
             answer: str, write_tool: str, difficulty: int) -> TaskDraft:
    """An impossible request of `asker`'s: the agent looks with `calls`, leaves `write_tool` alone and says
    why it cannot (`answer`); the phrasing is recorded under its `variant`."""
    index, prompt = phrased
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(asker, today, "display_name"),
        reference_solution=calls,
        expected_answer=answer,
        checks=kit.impossible_checks(write_tool, reply_label=kit.SAYS_IT_CANNOT, attempt_label="{tool} not attempted"),
        difficulty=difficulty,
        metadata={"phrasing": f"{variant}-{index}", "variant": variant},
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
        phrased = kit.phrase(rng, TEXTS["REMOVE_UNMODERATED"], c=community["name"], title=post["title"])
        answer = f'I cannot remove "{post["title"]}": only moderators of {name} can remove posts, and {standing}.'
        write_tool, variant = "remove_post", "remove"
    else:
        targets = [m for m in members(world, community["id"], "member") if m["id"] != asker["id"]]
        target = rng.choice(targets)
        phrased = kit.phrase(rng, TEXTS["BAN_UNMODERATED"], c=community["name"], target=target["username"])
        answer = f"I cannot ban {target['username']}: only moderators of {name} can ban users, and {standing}."
        write_tool, variant = "ban_user", "ban"
    return _refusal(variant, phrased, asker, today, [kit.call("list_my_communities")], answer, write_tool, 2)


def _vote_again(rng: random.Random, world: World, today: str) -> TaskDraft | None:
    rows = world.query(
        "SELECT v.user_id, p.id AS post_id, p.title, c.name FROM votes v JOIN posts p ON p.id = v.post_id "
        "JOIN communities c ON c.id = p.community_id WHERE v.value = 1 AND p.removed = 0 AND p.created_on <= ? "
        "AND NOT EXISTS (SELECT 1 FROM bans b WHERE b.community_id = c.id AND b.user_id = v.user_id) ORDER BY v.id",
        (today,),
    )
    pick = rng.choice(rows)
    phrased = kit.phrase(rng, TEXTS["VOTE_AGAIN"], c=pick["name"], title=pick["title"])
    calls = [
        kit.call("search_posts", community=f"r/{pick['name']}", query=pick["title"], limit=5),
        kit.call("get_post", post_id=pick["post_id"]),
    ]
    answer = (f'I cannot upvote "{pick["title"]}" again: you have already upvoted it, and each user '
              "gets one vote per post.")
    voter = kit.user_by_id(world, pick["user_id"], "*")
    return _refusal("vote_again", phrased, voter, today, calls, answer, "vote", 2)


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
    phrased = kit.phrase(rng, TEXTS["PRIVATE_POST"], c=community["name"], title=title, body=new_body(rng, spec))
    name = f"r/{community['name']}"
    answer = f"I cannot post in {name}: it is a private, invitation-only community and you are not a member."
    return _refusal("private_post", phrased, asker, today, [kit.call("get_community", community=name)], answer,
                    "create_post", 2)


def _own_vote(rng: random.Random, world: World, today: str) -> TaskDraft | None:
    rows = world.query(
        "SELECT p.id, p.author_id, p.title, c.name FROM posts p JOIN communities c ON c.id = p.community_id "
        "WHERE p.removed = 0 AND p.created_on <= ? ORDER BY p.id",
        (today,),
    )
    post = rng.choice(rows)
    phrased = kit.phrase(rng, TEXTS["OWN_VOTE"], c=post["name"], title=post["title"])
    answer = f'I cannot upvote "{post["title"]}": it is your own post, and users cannot vote on their own content.'
    author = kit.user_by_id(world, post["author_id"], "*")
    return _refusal("own_vote", phrased, author, today, [kit.call("list_my_posts", community=f"r/{post['name']}")],
                    answer, "vote", 1)


def impossible_vote_or_post(rng: random.Random, world: World) -> TaskDraft | None:
    today = late_today(rng)
    variant = rng.choice([_vote_again, _private_post, _own_vote])
    return variant(rng, world, today)
