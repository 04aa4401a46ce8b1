"""kit.members: the members of a group holding some roles, read from a real SQLite membership table."""

from __future__ import annotations

import sqlite3

from toolgym.envs import World
from toolgym.envs.kit.members import members_with


def _world() -> World:
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    db.execute("CREATE TABLE collaborators(repo_id INTEGER, username TEXT, permission TEXT)")
    db.executemany(
        "INSERT INTO collaborators VALUES (?, ?, ?)",
        [(1, "zoe", "admin"), (1, "amy", "read"), (1, "bob", "write"), (2, "cat", "write")],
    )
    return World(db)


def test_members_with_keeps_the_group_and_roles_in_username_order() -> None:
    world = _world()
    assert members_with(world, "collaborators", ("repo_id", 1), "permission", ("write", "admin")) == ["bob", "zoe"]
    assert members_with(world, "collaborators", ("repo_id", 1), "permission", ["read", "write", "admin"]) == [
        "amy", "bob", "zoe",
    ]
    assert members_with(world, "collaborators", ("repo_id", 2), "permission", ("read",)) == []
