"""mail: an Outlook-like mailbox with calendar for the logged-in user (the held-out evaluation environment)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.mail.data import seed_mail_app
from toolgym.envs.apps.mail.schema import SCHEMA
from toolgym.envs.apps.mail.tasks import task_families
from toolgym.envs.apps.mail.tools import TOOLS


class MailApp(App):
    """Folders, messages, attachments and contacts per mailbox, plus a shared calendar with invitations."""

    name = "mail"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
    tools = TOOLS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_mail_app(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return task_families(self)


APP = MailApp()
