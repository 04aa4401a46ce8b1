"""phone_support: a mobile carrier's support desk with dual control (tau2 telecom in spirit).

The agent holds the account tools; the customer holds the phone's settings (`owner="user"` tools)
and must be instructed. `user_actions` tells a scripted user simulator which instruction means
which device tool call.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from faker import Faker

from toolgym.envs import App, TaskFamily
from toolgym.envs.apps.phone_support.data import seed_phone_support
from toolgym.envs.apps.phone_support.device_tools import USER_TOOLS
from toolgym.envs.apps.phone_support.schema import SCHEMA
from toolgym.envs.apps.phone_support.tasks import FAMILIES
from toolgym.envs.apps.phone_support.tools import AGENT_TOOLS
from toolgym.envs.apps.phone_support.user_actions import USER_ACTIONS, UserAction


class PhoneSupportApp(App):
    """Plans, accounts, lines, bills and the customers' phones of one carrier over the shared population."""

    name = "phone_support"
    version = "1.0.0"
    schema = SCHEMA
    policy = (Path(__file__).parent / "policy.md").read_text(encoding="utf-8")
    tools = [*AGENT_TOOLS, *USER_TOOLS]
    user_actions: tuple[UserAction, ...] = USER_ACTIONS

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        seed_phone_support(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return list(FAMILIES)


APP = PhoneSupportApp()
