"""Small helpers the forum's task generators share: picking users and dates, phrasing, gold calls.

Everything here is deterministic given the `rng` and the seed world: every query has an ORDER BY
and choices come only from `rng`.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import World, kit
from toolgym.envs.apps.forum.content import COMMUNITIES, CommunitySpec
from toolgym.envs.apps.forum.data import capitalize_first, fill

LATE_FIRST = dt.date(2026, 8, 21)  # every seeded item is dated on or before 2026-08-20
LATE_LAST = dt.date(2026, 8, 31)
CONTEXT_FIRST = dt.date(2026, 4, 1)


def late_today(rng: random.Random) -> str:
    """A CURRENT_DATE after all seeded content: the whole forum is visible."""
    return kit.random_day(rng, LATE_FIRST, LATE_LAST).isoformat()


def spec_of(name: str) -> CommunitySpec:
    for spec in COMMUNITIES:
        if spec.name == name:
            return spec
    raise KeyError(name)


def communities(world: World) -> list[dict[str, Any]]:
    return world.query("SELECT * FROM communities ORDER BY id")


def viewers(world: World, community: dict[str, Any]) -> list[dict[str, Any]]:
    """Users who can read and write in a community as of now: members if private, and never the banned."""
    private = community["visibility"] == "private"
    return world.query(
        "SELECT u.* FROM users u WHERE NOT EXISTS (SELECT 1 FROM bans b WHERE b.community_id=? AND b.user_id=u.id) "
        "AND (? = 0 OR EXISTS (SELECT 1 FROM memberships m WHERE m.community_id=? AND m.user_id=u.id)) ORDER BY u.id",
        (community["id"], int(private), community["id"]),
    )


def members(world: World, community_id: int, role: str | None = None) -> list[dict[str, Any]]:
    """Unbanned members (optionally of one role)."""
    rows = world.query(
        "SELECT u.*, m.role FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.community_id=? "
        "AND NOT EXISTS (SELECT 1 FROM bans b WHERE b.community_id=m.community_id AND b.user_id=u.id) ORDER BY u.id",
        (community_id,),
    )
    return [r for r in rows if role is None or r["role"] == role]


def visible_posts(world: World, community_id: int, today: str) -> list[dict[str, Any]]:
    return world.query(
        "SELECT p.*, u.username AS author, f.name AS flair FROM posts p JOIN users u ON u.id = p.author_id "
        "LEFT JOIN flairs f ON f.id = p.flair_id WHERE p.community_id=? AND p.removed=0 AND p.created_on <= ? ORDER BY p.id",
        (community_id, today),
    )


def new_title(rng: random.Random, world: World, spec: CommunitySpec) -> str | None:
    """A title in the community's style that no seeded post uses."""
    for _ in range(40):
        title = capitalize_first(fill(rng.choice(spec.titles), spec.slots, rng))
        if world.one("SELECT id FROM posts WHERE lower(title)=?", (title.lower(),)) is None:
            return title
    return None


def new_body(rng: random.Random, spec: CommunitySpec) -> str:
    return fill(rng.choice(spec.bodies), spec.slots, rng)


def comment_text(rng: random.Random, spec: CommunitySpec) -> str:
    return fill(rng.choice(spec.comments), spec.slots, rng)


def flair_id(world: World, community_id: int, name: str) -> int:
    row = world.one("SELECT id FROM flairs WHERE community_id=? AND name=?", (community_id, name))
    assert row is not None
    return int(row["id"])


def flairs(world: World, community_id: int) -> list[str]:
    return [r["name"] for r in world.query("SELECT name FROM flairs WHERE community_id=? ORDER BY id", (community_id,))]


def comment_count(world: World, post_id: int, today: str) -> int:
    row = world.one("SELECT COUNT(*) AS n FROM comments WHERE post_id=? AND created_on <= ?", (post_id, today))
    return int(row["n"]) if row else 0
