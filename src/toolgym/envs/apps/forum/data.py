"""Seed data of the forum: the shared population posting in a dozen communities, March–August 2026.

Every public community gets a small moderation backlog (self-promotion posts by one repeat
offender and a few one-off spammers, plus reports under other rules) so moderation tasks have
something real to sort through. All content is dated 2026-03-01..2026-08-20.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import sqlite3

from faker import Faker

from toolgym.envs import kit
from toolgym.envs.apps.forum.content import (
    COMMUNITIES,
    GENERIC_COMMENTS,
    REASONS_BY_RULE,
    SPAM_BODIES,
    SPAM_REPORT_REASONS,
    SPAM_TITLES,
    SPAM_TOPICS,
    CommunitySpec,
)
from toolgym.envs.people import population

FIRST_DAY = dt.date(2026, 3, 1)
LAST_DAY = dt.date(2026, 8, 20)
FORUM_USERS = 100
_SLOT = re.compile(r"\{(\w+)\}")


def fill(template: str, slots: dict[str, tuple[str, ...]], rng: random.Random) -> str:
    """Replace each `{slot}` with a random value of that slot (a missing slot is left as is)."""
    return _SLOT.sub(lambda m: rng.choice(slots[m.group(1)]) if m.group(1) in slots else m.group(0), template)


def capitalize_first(text: str) -> str:
    return text[:1].upper() + text[1:]



def _post_score(rng: random.Random) -> int:
    if rng.random() < 0.08:
        return -rng.randint(1, 12)
    return min(2400, int(rng.lognormvariate(3.0, 1.2)))


def _comment_score(rng: random.Random) -> int:
    if rng.random() < 0.1:
        return -rng.randint(1, 8)
    return min(600, int(rng.lognormvariate(1.4, 1.1)))


class _Seeder:
    """Holds the id counters and uniqueness sets while the tables are filled."""

    def __init__(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        self.db = db
        self.fake = fake
        self.rng = rng
        self.titles: set[str] = set()
        self.members: dict[int, list[int]] = {}
        self.moderators: dict[int, list[int]] = {}
        self.user_ids: list[int] = []
        self.spam_posts: set[int] = set()

    def run(self) -> None:
        self.users()
        for community_id, spec in enumerate(COMMUNITIES, start=1):
            self.community(community_id, spec)
        for community_id, spec in enumerate(COMMUNITIES, start=1):
            self.posts(community_id, spec)
            if spec.visibility == "public":
                self.moderation_backlog(community_id, spec)
        self.comments()
        self.votes()
        self.karma()

    def users(self) -> None:
        people = population()
        chosen = sorted(self.rng.sample(range(len(people)), FORUM_USERS))
        for user_id, index in enumerate(chosen, start=1):
            person = people[index]
            joined = self.fake.date_between(start_date=dt.date(2021, 1, 1), end_date=dt.date(2026, 2, 20))
            self.db.execute(
                "INSERT INTO users(id, username, display_name, email, karma, joined_on) VALUES (?, ?, ?, ?, 0, ?)",
                (user_id, person.username, person.name, person.email, joined.isoformat()),
            )
            self.user_ids.append(user_id)

    def community(self, community_id: int, spec: CommunitySpec) -> None:
        rng = self.rng
        created = kit.random_day(rng, dt.date(2018, 1, 1), dt.date(2025, 6, 30))
        self.db.execute(
            "INSERT INTO communities(id, name, description, visibility, flair_required, created_on) VALUES (?, ?, ?, ?, ?, ?)",
            (community_id, spec.name, spec.description, spec.visibility, int(spec.flair_required), created.isoformat()),
        )
        for number, (title, description) in enumerate(spec.rules, start=1):
            self.db.execute(
                "INSERT INTO community_rules(community_id, number, title, description) VALUES (?, ?, ?, ?)",
                (community_id, number, title, description),
            )
        for flair in spec.flairs:
            self.db.execute("INSERT INTO flairs(community_id, name) VALUES (?, ?)", (community_id, flair))
        size = rng.randint(30, 44) if spec.visibility == "public" else rng.randint(9, 14)
        members = sorted(rng.sample(self.user_ids, size))
        moderators = sorted(rng.sample(members, rng.randint(2, 3)))
        for user_id in members:
            role = "moderator" if user_id in moderators else "member"
            joined = kit.random_day(rng, dt.date(2024, 1, 1), dt.date(2026, 2, 28))
            self.db.execute(
                "INSERT INTO memberships(community_id, user_id, role, joined_on) VALUES (?, ?, ?, ?)",
                (community_id, user_id, role, joined.isoformat()),
            )
        self.members[community_id] = members
        self.moderators[community_id] = moderators

    def _flair_id(self, community_id: int, name: str) -> int:
        row = self.db.execute("SELECT id FROM flairs WHERE community_id=? AND name=?", (community_id, name)).fetchone()
        return int(row[0])

    def _insert_post(self, community_id: int, author_id: int, title: str, body: str, day: dt.date,
                     score: int, flair: str | None) -> int:
        self.titles.add(title.casefold())
        flair_id = self._flair_id(community_id, flair) if flair else None
        cur = self.db.execute(
            "INSERT INTO posts(community_id, author_id, title, body, created_on, score, flair_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (community_id, author_id, title, body, day.isoformat(), score, flair_id),
        )
        return int(cur.lastrowid or 0)

    def _new_title(self, spec: CommunitySpec) -> str:
        for _ in range(200):
            title = capitalize_first(fill(self.rng.choice(spec.titles), spec.slots, self.rng))
            if title.casefold() not in self.titles:
                return title
        raise RuntimeError(f"community {spec.name}: title templates exhausted")

    def posts(self, community_id: int, spec: CommunitySpec) -> None:
        rng = self.rng
        count = rng.randint(19, 25) if spec.visibility == "public" else rng.randint(9, 12)
        members = self.members[community_id]
        for _ in range(count):
            title = self._new_title(spec)
            body = fill(rng.choice(spec.bodies), spec.slots, rng)
            flair = rng.choice(spec.flairs) if spec.flair_required or rng.random() < 0.8 else None
            self._insert_post(community_id, rng.choice(members), title, body, kit.random_day(rng, FIRST_DAY, LAST_DAY), _post_score(rng), flair)

    def _spam_post(self, community_id: int, spec: CommunitySpec, author_id: int, used: set[int]) -> int:
        rng = self.rng
        topic = SPAM_TOPICS[spec.name]
        while True:
            index = rng.randrange(len(SPAM_TITLES))
            code = f"{topic.split()[0][:4].upper()}{rng.randint(10, 99)}"
            title = capitalize_first(SPAM_TITLES[index].format(code=code, topic=topic))
            if index not in used and title.casefold() not in self.titles:
                used.add(index)
                break
        day = kit.random_day(rng, dt.date(2026, 5, 1), LAST_DAY)
        flair = rng.choice(spec.flairs) if spec.flair_required else None
        post_id = self._insert_post(community_id, author_id, title, rng.choice(SPAM_BODIES), day, rng.randint(-9, 2), flair)
        self.spam_posts.add(post_id)
        return post_id

    def _report(self, post_id: int, community_id: int, rule_number: int, reasons: tuple[str, ...],
                status: str, how_many: int) -> None:
        rng = self.rng
        post = self.db.execute("SELECT author_id, created_on FROM posts WHERE id=?", (post_id,)).fetchone()
        rule_id = self.db.execute(
            "SELECT id FROM community_rules WHERE community_id=? AND number=?", (community_id, rule_number)
        ).fetchone()[0]
        reporters = [u for u in self.members[community_id] if u != post[0]]
        posted = dt.date.fromisoformat(post[1])
        for reporter in sorted(rng.sample(reporters, how_many)):
            day = min(LAST_DAY, posted + dt.timedelta(days=rng.randint(0, 3)))
            self.db.execute(
                "INSERT INTO reports(post_id, reporter_id, rule_id, reason, created_on, status) VALUES (?, ?, ?, ?, ?, ?)",
                (post_id, reporter, rule_id, rng.choice(reasons), day.isoformat(), status),
            )

    def moderation_backlog(self, community_id: int, spec: CommunitySpec) -> None:
        """Open self-promotion reports (one repeat offender), reports under other rules, old removals."""
        rng = self.rng
        regulars = [u for u in self.members[community_id] if u not in self.moderators[community_id]]
        offender, *others = rng.sample(regulars, 5)
        used: set[int] = set()
        for _ in range(rng.randint(2, 3)):
            post_id = self._spam_post(community_id, spec, offender, used)
            self._report(post_id, community_id, spec.spam_rule, SPAM_REPORT_REASONS, "open", rng.randint(1, 2))
        for author in others[: rng.randint(1, 2)]:
            post_id = self._spam_post(community_id, spec, author, used)
            self._report(post_id, community_id, spec.spam_rule, SPAM_REPORT_REASONS, "open", rng.randint(1, 2))
        ordinary = [
            r[0] for r in self.db.execute(
                "SELECT id FROM posts WHERE community_id=? AND created_on < ? ORDER BY id", (community_id, "2026-08-10")
            ).fetchall()
            if r[0] not in self.spam_posts
        ]
        picked = rng.sample(ordinary, 3)
        other_rules = [n for n in range(1, len(spec.rules) + 1) if n != spec.spam_rule]
        for post_id in picked[:2]:
            number = rng.choice(other_rules)
            title = spec.rules[number - 1][0]
            reasons = REASONS_BY_RULE.get(title, (f"Breaks the '{title}' rule",))
            self._report(post_id, community_id, number, reasons, "open", 1)
        self._report(picked[2], community_id, spec.spam_rule, SPAM_REPORT_REASONS, "dismissed", 1)
        if community_id % 2 == 0:
            self._old_ban(community_id, spec, others[-1], used)

    def _old_ban(self, community_id: int, spec: CommunitySpec, spammer: int, used: set[int]) -> None:
        """An earlier removal and ban, so the moderation log and ban list are not empty."""
        rng = self.rng
        moderator = self.moderators[community_id][0]
        post_id = self._spam_post(community_id, spec, spammer, used)
        self._report(post_id, community_id, spec.spam_rule, SPAM_REPORT_REASONS, "actioned", 1)
        day = self.db.execute("SELECT created_on FROM posts WHERE id=?", (post_id,)).fetchone()[0]
        reason = f"Rule {spec.spam_rule}: {spec.rules[spec.spam_rule - 1][0]}"
        self.db.execute("UPDATE posts SET removed=1, removed_reason=? WHERE id=?", (reason, post_id))
        acted = min(LAST_DAY, dt.date.fromisoformat(day) + dt.timedelta(days=rng.randint(1, 3))).isoformat()
        self.db.execute(
            "INSERT INTO moderation_actions(community_id, moderator_id, action, post_id, target_user_id, reason, created_on)"
            " VALUES (?, ?, 'remove_post', ?, ?, ?, ?)",
            (community_id, moderator, post_id, spammer, reason, acted),
        )
        self.db.execute(
            "INSERT INTO bans(community_id, user_id, moderator_id, reason, created_on, expires_on) VALUES (?, ?, ?, ?, ?, NULL)",
            (community_id, spammer, moderator, "Repeated self-promotion", acted),
        )
        self.db.execute(
            "INSERT INTO moderation_actions(community_id, moderator_id, action, post_id, target_user_id, reason, created_on)"
            " VALUES (?, ?, 'ban_user', NULL, ?, 'Repeated self-promotion', ?)",
            (community_id, moderator, spammer, acted),
        )

    def comments(self) -> None:
        rng = self.rng
        posts = self.db.execute(
            "SELECT id, community_id, created_on, removed FROM posts ORDER BY id"
        ).fetchall()
        specs = {i: spec for i, spec in enumerate(COMMUNITIES, start=1)}
        for post_id, community_id, created_on, removed in posts:
            spec = specs[community_id]
            count = rng.randint(0, 2) if (removed or post_id in self.spam_posts) else rng.randint(0, 7)
            private = spec.visibility == "private"
            posted = dt.date.fromisoformat(created_on)
            ids: list[int] = []
            for _ in range(count):
                pool = self.members[community_id] if private or rng.random() < 0.7 else self.user_ids
                template = rng.choice(spec.comments if rng.random() < 0.75 else GENERIC_COMMENTS)
                parent = rng.choice(ids) if ids and rng.random() < 0.35 else None
                day = min(LAST_DAY, posted + dt.timedelta(days=rng.randint(0, 4)))
                cur = self.db.execute(
                    "INSERT INTO comments(post_id, parent_id, author_id, body, created_on, score) VALUES (?, ?, ?, ?, ?, ?)",
                    (post_id, parent, rng.choice(pool), fill(template, spec.slots, rng), day.isoformat(), _comment_score(rng)),
                )
                ids.append(int(cur.lastrowid or 0))

    def _viewers(self, community_id: int) -> list[int]:
        private = self.db.execute("SELECT visibility FROM communities WHERE id=?", (community_id,)).fetchone()[0]
        return self.members[community_id] if private == "private" else self.user_ids

    def votes(self) -> None:
        rng = self.rng
        posts = self.db.execute(
            "SELECT id, community_id, author_id, created_on FROM posts WHERE removed=0 ORDER BY id"
        ).fetchall()
        for post_id, community_id, author_id, created_on in posts:
            voters = [u for u in self._viewers(community_id) if u != author_id]
            for voter in sorted(rng.sample(voters, rng.randint(0, 5))):
                day = min(LAST_DAY, dt.date.fromisoformat(created_on) + dt.timedelta(days=rng.randint(0, 3)))
                value = 1 if rng.random() < 0.85 else -1
                self.db.execute(
                    "INSERT INTO votes(user_id, post_id, value, created_on) VALUES (?, ?, ?, ?)",
                    (voter, post_id, value, day.isoformat()),
                )
        comments = self.db.execute(
            "SELECT c.id, p.community_id, c.author_id, c.created_on FROM comments c JOIN posts p ON p.id = c.post_id ORDER BY c.id"
        ).fetchall()
        for comment_id, community_id, author_id, created_on in comments:
            if rng.random() > 0.3:
                continue
            voters = [u for u in self._viewers(community_id) if u != author_id]
            for voter in sorted(rng.sample(voters, rng.randint(1, 2))):
                day = min(LAST_DAY, dt.date.fromisoformat(created_on) + dt.timedelta(days=rng.randint(0, 2)))
                self.db.execute(
                    "INSERT INTO votes(user_id, comment_id, value, created_on) VALUES (?, ?, ?, ?)",
                    (voter, comment_id, 1 if rng.random() < 0.9 else -1, day.isoformat()),
                )

    def karma(self) -> None:
        for user_id in self.user_ids:
            posts = self.db.execute("SELECT COALESCE(SUM(score), 0) FROM posts WHERE author_id=?", (user_id,)).fetchone()[0]
            comments = self.db.execute("SELECT COALESCE(SUM(score), 0) FROM comments WHERE author_id=?", (user_id,)).fetchone()[0]
            self.db.execute("UPDATE users SET karma=? WHERE id=?", (posts + comments + self.rng.randint(0, 400), user_id))


def seed_forum(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    """Fill every forum table; deterministic for a given `rng` (Faker is kept for the App contract)."""
    _Seeder(db, fake, rng).run()
