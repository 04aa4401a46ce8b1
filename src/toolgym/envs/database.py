"""SQLite state: a read-only seed snapshot, a fresh copy per episode, and an exact row diff.

The seed database is built once, serialized to bytes, and deserialized into a private
in-memory database for every episode (sub-millisecond). Triggers record every touched
(table, rowid); the diff compares only those rows with the seed, so it is exact (net
changes: a value set and set back is no change) and costs O(changes), not O(database).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

TOUCHED_TABLE = "_toolgym_touched"


@dataclass(frozen=True)
class RowChange:
    """One row's net change between seed and current."""

    table: str
    op: str  # "insert" | "update" | "delete"
    rowid: int
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @property
    def changed_fields(self) -> list[str]:
        if self.before is None or self.after is None:
            return sorted((self.after or self.before or {}).keys())
        return sorted(k for k in self.after if self.before.get(k) != self.after.get(k))

    @property
    def row(self) -> dict[str, Any]:
        """The row as it is now (or was, for a delete)."""
        return self.after if self.after is not None else (self.before or {})

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "op": self.op, "rowid": self.rowid, "before": self.before, "after": self.after}


def user_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' AND name != ? ORDER BY name",
        (TOUCHED_TABLE,),
    ).fetchall()
    return [r[0] for r in rows]


def install_change_tracking(conn: sqlite3.Connection) -> None:
    """Add the touched-rows table and one trigger per table and operation."""
    conn.execute(f"CREATE TABLE IF NOT EXISTS {TOUCHED_TABLE} (tbl TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (tbl, rid))")
    for table in user_tables(conn):
        without_rowid = conn.execute("SELECT sql FROM sqlite_master WHERE name=?", (table,)).fetchone()[0]
        if "WITHOUT ROWID" in without_rowid.upper():
            raise ValueError(f"table {table!r}: WITHOUT ROWID tables cannot be diffed; drop that clause")
        record = f"INSERT OR IGNORE INTO {TOUCHED_TABLE}(tbl, rid) VALUES ('{table}', %s);"
        conn.executescript(
            f"""
            CREATE TRIGGER IF NOT EXISTS _tg_{table}_ins AFTER INSERT ON "{table}" BEGIN {record % "NEW.rowid"} END;
            CREATE TRIGGER IF NOT EXISTS _tg_{table}_del AFTER DELETE ON "{table}" BEGIN {record % "OLD.rowid"} END;
            CREATE TRIGGER IF NOT EXISTS _tg_{table}_upd AFTER UPDATE ON "{table}" BEGIN
                {record % "OLD.rowid"} {record % "NEW.rowid"} END;
            """
        )


def _dict_factory(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


def connect_bytes(data: bytes, read_only: bool = False) -> sqlite3.Connection:
    """A private in-memory database holding a copy of `data`."""
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    conn.deserialize(data)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys=ON")
    # Rows that INSERT OR REPLACE deletes fire delete triggers only with recursive triggers on;
    # without it the diff would miss those deletions.
    conn.execute("PRAGMA recursive_triggers=ON")
    if read_only:
        conn.execute("PRAGMA query_only=ON")
    return conn


@dataclass
class SeedSnapshot:
    """The seeded database of an app as bytes, plus a cache of its rows for diffing."""

    data: bytes
    _rows: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict, repr=False)
    _reader: sqlite3.Connection | None = field(default=None, repr=False)

    def fresh(self) -> sqlite3.Connection:
        return connect_bytes(self.data)

    def reader(self) -> sqlite3.Connection:
        """A shared read-only connection on the seed (it is never written)."""
        if self._reader is None:
            self._reader = connect_bytes(self.data, read_only=True)
        return self._reader

    def row(self, table: str, rowid: int) -> dict[str, Any] | None:
        cache = self._rows.setdefault(table, {})
        if rowid not in cache:
            cur = self.reader().execute(f'SELECT * FROM "{table}" WHERE rowid=?', (rowid,))
            cur.row_factory = _dict_factory  # type: ignore[assignment]
            cache[rowid] = cur.fetchone()
        return cache[rowid]


def diff(seed: SeedSnapshot, current: sqlite3.Connection) -> list[RowChange]:
    """Net row-level changes from seed to current, ordered by table and rowid."""
    touched = current.execute(f"SELECT tbl, rid FROM {TOUCHED_TABLE} ORDER BY tbl, rid").fetchall()
    changes: list[RowChange] = []
    for table, rowid in touched:
        before = seed.row(table, rowid)
        cur = current.execute(f'SELECT * FROM "{table}" WHERE rowid=?', (rowid,))
        cur.row_factory = _dict_factory  # type: ignore[assignment]
        after = cur.fetchone()
        if before == after:
            continue
        op = "insert" if before is None else "delete" if after is None else "update"
        changes.append(RowChange(table=table, op=op, rowid=rowid, before=before, after=after))
    return changes
