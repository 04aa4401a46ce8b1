"""forum: a Reddit-like forum app — communities, posts, threaded comments, votes and moderation."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.forum.data import seed_forum
from toolgym.envs.apps.forum.schema import SCHEMA
from toolgym.envs.apps.forum.tasks import FAMILIES
from toolgym.envs.apps.forum.tools import TOOLS


class ForumApp(App):
    """Communities with rules and flairs, posts, comments, one-per-user votes, reports, removals and bans."""

    name = "forum"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).with_name("policy.md")).read_text(encoding="utf-8")
    tools = TOOLS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_forum(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return list(FAMILIES)


APP = ForumApp()
