"""code_host: a GitHub-like code hosting app — repositories, issues, pull requests, reviews."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.code_host.data import seed_code_host
from toolgym.envs.apps.code_host.schema import SCHEMA
from toolgym.envs.apps.code_host.tasks import TASK_FAMILIES
from toolgym.envs.apps.code_host.tools import TOOLS


class CodeHostApp(App):
    """Repositories with collaborators, issues with labels and milestones, PRs with reviews and CI."""

    name = "code_host"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).with_name("policy.md")).read_text(encoding="utf-8")
    tools = TOOLS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_code_host(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return list(TASK_FAMILIES)


APP = CodeHostApp()
