"""booking: travel booking for flights and hotels (search, book, cancel, review) over shared users."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.booking.data import seed_booking
from toolgym.envs.apps.booking.schema import SCHEMA
from toolgym.envs.apps.booking.tasks import FAMILIES
from toolgym.envs.apps.booking.tools import TOOLS


class BookingApp(App):
    """Flights between twelve cities, hotels in each, and the bookings of the shared population."""

    name = "booking"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
    tools = TOOLS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_booking(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return list(FAMILIES)


APP = BookingApp()
