"""crm: a HubSpot-like CRM (companies, contacts, a deal pipeline, activities, reminders) over shared users."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.crm.data import seed_crm
from toolgym.envs.apps.crm.schema import SCHEMA
from toolgym.envs.apps.crm.tasks import FAMILIES
from toolgym.envs.apps.crm.tools import TOOLS


class CrmApp(App):
    """A sales team from the shared population selling to sixty companies through a seven-stage pipeline."""

    name = "crm"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
    tools = TOOLS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_crm(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return list(FAMILIES)


APP = CrmApp()
