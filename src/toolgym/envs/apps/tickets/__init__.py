"""tickets: an events marketplace (concerts, sports, theater) where the shared users buy, transfer and refund tickets."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.tickets.data import seed_tickets
from toolgym.envs.apps.tickets.schema import SCHEMA
from toolgym.envs.apps.tickets.tasks import FAMILIES
from toolgym.envs.apps.tickets.tools import TOOLS


class TicketsApp(App):
    """Invented performers touring eight cities' venues, priced sections, and the shared population's orders."""

    name = "tickets"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
    tools = TOOLS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_tickets(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return list(FAMILIES)


APP = TicketsApp()
