"""An app laid out as a package (docs/adding-an-app.md): the subclass declares its schema, tools, seed
function and FAMILIES, and reads its policy from the policy.md beside it; nothing else to write."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from faker import Faker

from toolgym.envs.app import App, TaskFamily

SeedFunction = Callable[[sqlite3.Connection, Faker, random.Random], None]


def read_policy(module_file: str) -> str:
    """The policy.md in the folder of `module_file` (an app package's `__file__`)."""
    return (Path(module_file).parent / "policy.md").read_text(encoding="utf-8")


class PackagedApp(App):
    """An App whose `seed` is the package's seed function and whose families are its FAMILIES tuple."""

    families: ClassVar[tuple[TaskFamily, ...]]
    seed_data: ClassVar[SeedFunction]  # set as staticmethod(seed_<app>), the function in the app's data.py

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        self.seed_data(db, fake, rng)

    def task_families(self) -> list[TaskFamily]:
        return list(self.families)
