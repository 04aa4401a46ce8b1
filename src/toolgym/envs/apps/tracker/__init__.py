"""tracker: a Jira-like issue tracker — projects with workflows, sprints, tickets, links and worklogs.

Its people are the shared population and its projects work on code_host repositories, so
multi-app tasks can join a ticket to the pull request it references.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.tracker.data import seed_tracker
from toolgym.envs.apps.tracker.schema import SCHEMA
from toolgym.envs.apps.tracker.tasks import TASK_FAMILIES
from toolgym.envs.apps.tracker.tools import TOOLS


class TrackerApp(App):
    """Projects with per-project workflows and sprints; tickets with links, comments, watchers, worklogs."""

    name = "tracker"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).with_name("policy.md")).read_text(encoding="utf-8")
    tools = TOOLS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_tracker(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return list(TASK_FAMILIES)


APP = TrackerApp()
