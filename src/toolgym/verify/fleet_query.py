"""Read-only SQLite snapshots (`env.db(...)`), raw queries and Fleet's fluent query builder.

Standard library only, like every fleet_*.py file: see `toolgym.verify.fleet_api`.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from collections.abc import Iterator
from typing import Any

from .fleet_diff import IgnoreConfig, SnapshotDiff
from .fleet_values import TOUCHED_TABLE


class QueryResult:
    """What `db.query(sql)` returns: Fleet's QueryResponse shape (`columns`, `rows` as lists)."""

    def __init__(self, columns: list[str], rows: list[list[Any]]) -> None:
        self.success = True
        self.columns = columns
        self.rows = rows
        self.rows_affected = 0
        self.last_insert_rowid: int | None = None
        self.error: str | None = None
        self.message = ""

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.dicts())

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"<QueryResult {len(self.rows)} row(s) {self.columns}>"


class Count(int):
    """An int with Fleet's fluent count assertions (`count().assert_eq(3)`)."""

    def assert_eq(self, expected: int) -> Count:
        if int(self) != expected:
            raise AssertionError(f"Expected count {expected}, got {int(self)}")
        return self

    def assert_gt(self, threshold: int) -> Count:
        if int(self) <= threshold:
            raise AssertionError(f"Expected count > {threshold}, got {int(self)}")
        return self

    def assert_between(self, low: int, high: int) -> Count:
        if not low <= int(self) <= high:
            raise AssertionError(f"Expected count between {low} and {high}, got {int(self)}")
        return self

    @property
    def value(self) -> int:
        return int(self)


class QueryBuilder:
    """Fluent, immutable SELECT over one table: each call returns a new builder."""

    def __init__(self, snapshot: DatabaseSnapshot, table: str) -> None:
        self._snapshot = snapshot
        self._table = table
        self._columns: list[str] = ["*"]
        self._conditions: list[tuple[str, str, Any]] = []
        self._joins: list[tuple[str, dict[str, str]]] = []
        self._limit: int | None = None
        self._order_by: str | None = None

    def _clone(self) -> QueryBuilder:
        other = QueryBuilder(self._snapshot, self._table)
        other._columns = list(self._columns)
        other._conditions = list(self._conditions)
        other._joins = list(self._joins)
        other._limit = self._limit
        other._order_by = self._order_by
        return other

    def _where(self, column: str, op: str, value: Any) -> QueryBuilder:
        other = self._clone()
        other._conditions.append((column, op, value))
        return other

    def select(self, *columns: str) -> QueryBuilder:
        other = self._clone()
        other._columns = list(columns) or ["*"]
        return other

    def limit(self, n: int | None) -> QueryBuilder:
        other = self._clone()
        other._limit = n
        return other

    def sort(self, column: str, desc: bool = False) -> QueryBuilder:
        other = self._clone()
        other._order_by = f"{column} {'DESC' if desc else 'ASC'}"
        return other

    def eq(self, column: str, value: Any) -> QueryBuilder:
        return self._where(column, "IS" if value is None else "=", value)

    def neq(self, column: str, value: Any) -> QueryBuilder:
        return self._where(column, "IS NOT" if value is None else "!=", value)

    def gt(self, column: str, value: Any) -> QueryBuilder:
        return self._where(column, ">", value)

    def gte(self, column: str, value: Any) -> QueryBuilder:
        return self._where(column, ">=", value)

    def lt(self, column: str, value: Any) -> QueryBuilder:
        return self._where(column, "<", value)

    def lte(self, column: str, value: Any) -> QueryBuilder:
        return self._where(column, "<=", value)

    def in_(self, column: str, values: list[Any]) -> QueryBuilder:
        return self._where(column, "IN", tuple(values))

    def not_in(self, column: str, values: list[Any]) -> QueryBuilder:
        return self._where(column, "NOT IN", tuple(values))

    def is_null(self, column: str) -> QueryBuilder:
        return self._where(column, "IS", None)

    def not_null(self, column: str) -> QueryBuilder:
        return self._where(column, "IS NOT", None)

    def ilike(self, column: str, pattern: str) -> QueryBuilder:
        return self._where(column, "LIKE", pattern)  # SQLite's LIKE is case-insensitive for ASCII

    def like(self, column: str, pattern: str) -> QueryBuilder:
        return self._where(column, "LIKE", pattern)

    def join(self, other_table: str, on: dict[str, str]) -> QueryBuilder:
        """Inner join; `on` maps this table's columns to the other table's."""
        other = self._clone()
        other._joins.append((other_table, dict(on)))
        return other

    def _compile(self, columns: list[str] | None = None, limit: int | None = None) -> tuple[str, list[Any]]:
        parts = [f"SELECT {', '.join(columns or self._columns)} FROM {self._table}"]
        params: list[Any] = []
        for table, on in self._joins:
            clauses = " AND ".join(f"{self._table}.{left} = {table}.{right}" for left, right in on.items())
            parts.append(f"JOIN {table} ON {clauses}")
        if self._conditions:
            clauses = []
            for column, op, value in self._conditions:
                if op in ("IN", "NOT IN"):
                    clauses.append(f"{column} {op} ({', '.join('?' for _ in value)})")
                    params.extend(value)
                elif op in ("IS", "IS NOT") and value is None:
                    clauses.append(f"{column} {op} NULL")
                else:
                    clauses.append(f"{column} {op} ?")
                    params.append(value)
            parts.append("WHERE " + " AND ".join(clauses))
        if self._order_by and columns is None:
            parts.append(f"ORDER BY {self._order_by}")
        effective_limit = limit if limit is not None else (self._limit if columns is None else None)
        if effective_limit is not None:
            parts.append(f"LIMIT {int(effective_limit)}")
        return " ".join(parts), params

    def all(self) -> list[dict[str, Any]]:
        sql, params = self._compile()
        return self._snapshot.query(sql, params).dicts()

    def first(self) -> dict[str, Any] | None:
        sql, params = self._compile(limit=1)
        rows = self._snapshot.query(sql, params).dicts()
        return rows[0] if rows else None

    def count(self) -> Count:
        sql, params = self._compile(columns=["COUNT(*)"])
        return Count(self._snapshot.query(sql, params).rows[0][0] or 0)

    def explain(self) -> str:
        sql, params = self._compile()
        return f"SQL: {sql}\nParams: {params}"

    def assert_exists(self) -> QueryBuilder:
        if self.first() is None:
            raise AssertionError(f"Expected at least one matching row in {self._table}, found none ({self.explain()})")
        return self

    def assert_none(self) -> QueryBuilder:
        row = self.first()
        if row is not None:
            raise AssertionError(f"Expected no matching rows in {self._table}, found {row} ({self.explain()})")
        return self

    def assert_eq(self, column: str, value: Any) -> QueryBuilder:
        row = self.first()
        if row is None:
            raise AssertionError(f"No row in {self._table} to compare {column}={value!r} ({self.explain()})")
        if row.get(column) != value:
            raise AssertionError(f"{self._table}.{column} is {row.get(column)!r}; expected {value!r} (row {row})")
        return self

    def __repr__(self) -> str:
        return f"<QueryBuilder {self.explain()}>"


def _open_read_only(path: str) -> sqlite3.Connection:
    uri = "file:" + urllib.parse.quote(path) + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    conn.execute("PRAGMA query_only=ON")
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)  # no ATTACH: a verifier reads only its own dbs
    return conn


class DatabaseSnapshot:
    """One read-only SQLite database (an app's `seed` or `current` state)."""

    def __init__(self, db_path: str, *, name: str | None = None) -> None:
        self.db_path = db_path
        self.name = name or db_path
        self._conn: sqlite3.Connection | None = None

    @property
    def connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = _open_read_only(self.db_path)
        return self._conn

    def query(self, sql: str, args: list[Any] | tuple[Any, ...] | None = None) -> QueryResult:
        """Run a read-only SQL statement; rows come back as lists with `columns` naming them."""
        cursor = self.connection.execute(sql, tuple(args or ()))
        columns = [c[0] for c in cursor.description or ()]
        return QueryResult(columns, [list(r) for r in cursor.fetchall()])

    def exec(self, sql: str, args: list[Any] | None = None) -> QueryResult:
        raise PermissionError("verifier databases are read-only: use query(), not exec()")

    def table(self, table: str) -> QueryBuilder:
        return QueryBuilder(self, table)

    def tables(self) -> list[str]:
        rows = self.connection.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' AND name != ? ORDER BY name",
            (TOUCHED_TABLE,),
        ).fetchall()
        return [r[0] for r in rows]

    def has_table(self, table: str) -> bool:
        row = self.connection.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone()
        return row is not None

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self.connection.execute(f'PRAGMA table_info("{table}")').fetchall()]

    def primary_key(self, table: str) -> list[str]:
        """Fleet's row identity: the declared primary key, else `id`, else `rowid`."""
        info = self.connection.execute(f'PRAGMA table_info("{table}")').fetchall()
        declared = [name for _, name in sorted((r[5], r[1]) for r in info if r[5] > 0)]
        if declared:
            return declared
        return ["id"] if any(r[1] == "id" for r in info) else ["rowid"]

    def diff(self, other: DatabaseSnapshot, ignore_config: IgnoreConfig | None = None) -> SnapshotDiff:
        """Changes from this snapshot (before) to `other` (after)."""
        return SnapshotDiff(self, other, ignore_config)

    def expect_row(self, table: str, where: dict[str, Any], expect: dict[str, Any]) -> DatabaseSnapshot:
        query = self.table(table)
        for column, value in where.items():
            query = query.eq(column, value)
        query.assert_exists()
        for column, value in expect.items():
            query.assert_eq(column, value)
        return self

    def expect_rows(
        self, table: str, where: dict[str, Any], *, count: int | None = None, contains: list[dict[str, Any]] | None = None
    ) -> DatabaseSnapshot:
        query = self.table(table)
        for column, value in where.items():
            query = query.eq(column, value)
        if count is not None:
            query.count().assert_eq(count)
        if contains:
            rows = query.all()
            for wanted in contains:
                if not any(all(r.get(k) == v for k, v in wanted.items()) for r in rows):
                    raise AssertionError(f"Expected a row matching {wanted} in {table}")
        return self

    def expect_absent_row(self, table: str, where: dict[str, Any]) -> DatabaseSnapshot:
        query = self.table(table)
        for column, value in where.items():
            query = query.eq(column, value)
        query.assert_none()
        return self

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        return f"<DatabaseSnapshot {self.name}>"
