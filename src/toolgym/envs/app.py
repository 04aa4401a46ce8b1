"""App: the few overrides that make an environment — schema, seed data, policy, tools, task families."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from faker import Faker

from toolgym.envs.context import EnvContext
from toolgym.envs.database import SeedSnapshot, install_change_tracking
from toolgym.envs.tool import Tool
from toolgym.schema import Check, ToolCall, UserScenario

TaskShape = Literal["lookup", "write", "search_choose_write", "multi_step", "impossible", "context"]


@dataclass
class _Rows:
    """Rows as dicts from a connection: how tools read an episode's database and generators read the seed."""

    db: sqlite3.Connection

    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute(sql, params).fetchall()]

    def one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> dict[str, Any] | None:
        row = self.db.execute(sql, params).fetchone()
        return dict(row) if row is not None else None


@dataclass
class ToolContext(_Rows):
    """What a tool function sees: its app's current database and the task's runtime context."""

    env: EnvContext
    app: App


@dataclass
class World(_Rows):
    """A read-only view of an app's seed data, for task generators to pick entities from."""


@dataclass
class TaskDraft:
    """What a generator emits; the dataset build turns it into a Task with id, env and split."""

    prompt: str
    checks: list[Check]
    reference_solution: list[ToolCall]
    env_variables: dict[str, str] = field(default_factory=dict)
    expected_answer: str | None = None
    difficulty: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)
    user_scenario: UserScenario | None = None  # dual control: the simulated user's side of the task


@dataclass
class TaskFamily:
    """A kind of task: `generate(rng, world)` returns a draft, or None when the draw is unusable."""

    name: str
    shape: TaskShape
    generate: Callable[[random.Random, World], TaskDraft | None]
    weight: float = 1.0


class App:
    """Subclass and set the class attributes; `seed` fills the schema with realistic data."""

    name: ClassVar[str]
    version: ClassVar[str]
    schema: ClassVar[str]
    policy: ClassVar[str]
    tools: ClassVar[list[Tool]]
    data_seed: ClassVar[int] = 1234

    _snapshots: ClassVar[dict[str, SeedSnapshot]] = {}

    def seed(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement seed()")

    def task_families(self) -> list[TaskFamily]:
        raise NotImplementedError(f"{type(self).__name__} must implement task_families()")

    @property
    def data_id(self) -> str:
        return f"{self.name}-seed-{self.data_seed}"

    def snapshot(self) -> SeedSnapshot:
        """Build (once per process) the seeded database and keep it as bytes."""
        key = f"{self.name}@{self.version}#{self.data_seed}"
        if key not in App._snapshots:
            conn = sqlite3.connect(":memory:", isolation_level=None)
            conn.execute("PRAGMA foreign_keys=ON")
            conn.executescript(self.schema)
            fake = Faker("en_US")
            fake.seed_instance(self.data_seed)
            conn.execute("BEGIN")
            self.seed(conn, fake, random.Random(self.data_seed))
            conn.execute("COMMIT")
            install_change_tracking(conn)
            conn.execute("VACUUM")
            App._snapshots[key] = SeedSnapshot(conn.serialize())
            conn.close()
        return App._snapshots[key]

    def world(self) -> World:
        return World(self.snapshot().reader())

    def tool(self, name: str) -> Tool | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None
