"""maps: places, opening hours, reviews, directions, saved lists and visit timelines over shared users."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.maps.data import seed_maps
from toolgym.envs.apps.maps.schema import SCHEMA
from toolgym.envs.apps.maps.tasks import FAMILIES
from toolgym.envs.apps.maps.tools import TOOLS


class MapsApp(App):
    """About 190 places in Boston, Cambridge, Somerville and Brookline, and the shared people who go there."""

    name = "maps"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
    tools = TOOLS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_maps(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return list(FAMILIES)


APP = MapsApp()
