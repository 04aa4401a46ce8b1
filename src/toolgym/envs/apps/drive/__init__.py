"""drive: a Google-Drive-like file store for the logged-in user: folders, files, versions, sharing, trash."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.drive.data import seed_drive_app
from toolgym.envs.apps.drive.schema import SCHEMA
from toolgym.envs.apps.drive.tasks import task_families
from toolgym.envs.apps.drive.tools import TOOLS


class DriveApp(App):
    """Per-user folder trees of files with version histories, shared with people, folders and links."""

    name = "drive"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
    tools = TOOLS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_drive_app(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return task_families(self)


APP = DriveApp()
