"""Picking entities from the seed for a task: clear winners (a tie makes the task ambiguous, so the draw
is rejected), the ids new rows will get on replay, users and the env_variables that log them in."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from toolgym.envs.app import World

Row = TypeVar("Row")


def pick(rng: random.Random, rows: Sequence[Row]) -> Row | None:
    """One of `rows` (the same draw as `rng.choice`), or None when there are none to draw from."""
    return rows[rng.randrange(len(rows))] if rows else None


def unique_best(rows: Sequence[Row], key: str | Callable[[Row], Any], *, largest: bool = False) -> Row | None:
    """The row with the smallest (or `largest`) `key` (a column or a function of the row), or None when
    there are no rows or the first place is tied."""
    value: Callable[[Row], Any] = (lambda row: row[key]) if isinstance(key, str) else key  # type: ignore[index]
    if not rows:
        return None
    values = [value(row) for row in rows]
    best = max(values) if largest else min(values)
    if values.count(best) > 1:
        return None
    return rows[values.index(best)]


class Rows(Protocol):
    """What next_id reads through: the seed (World) or an episode's database (ToolContext)."""

    def one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> dict[str, Any] | None: ...


def next_id(source: Rows, table: str, offset: int = 1) -> int:
    """The id the `offset`-th new row of `table` gets from here on (SQLite: max(rowid) + 1): a generator
    predicts a new row's id from the seed, a tool assigns it in the episode."""
    row = source.one(f"SELECT COALESCE(MAX(id), 0) AS n FROM {table}")
    return int(row["n"] if row else 0) + offset


def user_by_id(world: World, user_id: int, columns: str = "id, username, name") -> dict[str, Any]:
    row = world.one(f"SELECT {columns} FROM users WHERE id=?", (user_id,))
    assert row is not None, f"no user {user_id}"
    return row


def env_vars(username: str, name: str, today: dt.date | str) -> dict[str, str]:
    """A task's runtime context: CURRENT_DATE, LOGGED_IN_USER and LOGGED_IN_NAME."""
    day = today if isinstance(today, str) else today.isoformat()
    return {"CURRENT_DATE": day, "LOGGED_IN_USER": username, "LOGGED_IN_NAME": name}


def env_for(user: Mapping[str, Any], today: dt.date | str, name_key: str = "name") -> dict[str, str]:
    """env_variables that log in the user of a row (its `username` and `name_key` columns)."""
    return env_vars(user["username"], user[name_key], today)


def env_for_username(world: World, username: str, today: dt.date | str) -> dict[str, str]:
    """env_variables that log in `username`, whose name comes from the app's users table."""
    row = world.one("SELECT name FROM users WHERE username=?", (username,))
    return env_vars(username, row["name"] if row else username, today)
