"""homes: a real-estate app (search listings, agents, saved homes and searches, tours, offers) over shared users."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.homes.data import seed_homes
from toolgym.envs.apps.homes.schema import SCHEMA
from toolgym.envs.apps.homes.tasks import FAMILIES
from toolgym.envs.apps.homes.tools import TOOLS


class HomesApp(App):
    """Homes for sale in ten cities, their agents and price history, and the shared users' searches, tours and offers."""

    name = "homes"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
    tools = TOOLS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_homes(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return list(FAMILIES)


APP = HomesApp()
