"""The Fleet verifier API over SQLite files: `env.db("seed" | "current")`, a query builder, diffs.

Fleet verifiers (`def validate_task(env, final_answer=None) -> int`) are written against
fleet-python's `DatabaseSnapshot` / `QueryBuilder` / `SnapshotDiff`. This module offers the calls
they use — `table(...).eq(...).all() / first() / count()`, `assert_*`, raw `query(sql, args)`
returning `.columns` / `.rows`, and `seed.diff(current).expect_only / expect_only_v2 /
expect_exactly / expect` — over read-only SQLite files.

Standard library only: it is loaded inside the verifier sandbox (`python -I -S`), where nothing
else can be imported. Connections are opened read-only, so a verifier can look but never write.
"""

from __future__ import annotations

import json
import re
import sqlite3
import string
import urllib.parse
from collections.abc import Iterator
from typing import Any

TASK_SUCCESSFUL_SCORE = 1
TASK_FAILED_SCORE = 0

# toolgym's change-tracking table: bookkeeping, never part of an app's data.
TOUCHED_TABLE = "_toolgym_touched"
_ROWID = "__toolgym_rowid__"


# ---------------------------------------------------------------------------------------------
#  Value comparison and small helpers Fleet verifiers find in their namespace
# ---------------------------------------------------------------------------------------------


def _looks_like_json(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    text = value.strip()
    return (text.startswith("{") and text.endswith("}")) or (text.startswith("[") and text.endswith("]"))


def values_equivalent(expected: Any, actual: Any) -> bool:
    """Equal, or both JSON text with the same parsed value (Fleet compares JSON columns by meaning)."""
    if expected == actual:
        return True
    if _looks_like_json(expected) and _looks_like_json(actual):
        try:
            return json.loads(expected) == json.loads(actual)
        except ValueError:
            return False
    return False


_PUNCTUATION = str.maketrans(string.punctuation, " " * len(string.punctuation))


def _squash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)
    return "".join(text.lower().translate(_PUNCTUATION).split())


def normalized_contains(target: str, blob: Any) -> bool:
    """`target` occurs in `blob` ignoring case, punctuation and whitespace."""
    return _squash(target) in _squash(blob)


def normalized_string_comparison(target: str, blob: Any) -> bool:
    """`target` equals `blob` ignoring case, punctuation and whitespace."""
    return _squash(target) == _squash(blob)


def extract_numbers(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"-?\d+\.?\d*", str(text).replace(",", ""))]


def contains_number(text: str, target_number: Any) -> bool:
    try:
        target = float(str(target_number).replace(",", ""))
    except ValueError:
        return False
    return target in extract_numbers(text)


def _sort_key(key: Any) -> tuple[int, Any]:
    """Rowids sort numerically; composite keys (WITHOUT ROWID tables) by their text."""
    return (0, key) if isinstance(key, int) else (1, str(key))


def _pk_text(pk: Any) -> str:
    """Primary keys compare as text (Fleet: `str(spec_pk) == str(row_id)`); lists act as tuples."""
    if isinstance(pk, list | tuple):
        return str(tuple(pk))
    return str(pk)


# ---------------------------------------------------------------------------------------------
#  Query results
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
#  Query builder
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
#  Snapshots
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
#  Diff
# ---------------------------------------------------------------------------------------------


class IgnoreConfig:
    """Tables, fields (everywhere) and per-table fields a diff leaves out."""

    def __init__(
        self,
        tables: set[str] | None = None,
        fields: set[str] | None = None,
        table_fields: dict[str, set[str]] | None = None,
    ) -> None:
        self.tables = set(tables or ())
        self.fields = set(fields or ())
        self.table_fields = {k: set(v) for k, v in (table_fields or {}).items()}

    def should_ignore_table(self, table: str) -> bool:
        return table in self.tables

    def should_ignore_field(self, table: str, field: str) -> bool:
        return field in self.fields or field in self.table_fields.get(table, set())


def _fields_spec(spec: Any) -> dict[str, tuple[bool, Any]]:
    """[(field, value), (field, ...)] → {field: (check_value, value)}; `...` accepts any value."""
    mapping: dict[str, tuple[bool, Any]] = {}
    for item in spec:
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise ValueError(f"invalid field spec {item!r}: each entry must be (field_name, expected_value); use ... for any value")
        name, value = item
        mapping[name] = (False, None) if value is ... else (True, value)
    return mapping


class SnapshotDiff:
    """Row-level changes between two snapshots, keyed by primary key, with Fleet's invariants."""

    def __init__(self, before: DatabaseSnapshot, after: DatabaseSnapshot, ignore_config: IgnoreConfig | None = None) -> None:
        self.before = before
        self.after = after
        self.ignore_config = ignore_config or IgnoreConfig()
        self._cached: dict[str, dict[str, Any]] | None = None

    # -- collecting ------------------------------------------------------------------------
    def _rows_by_rowid(self, snapshot: DatabaseSnapshot, table: str, rowids: list[int] | None) -> dict[Any, dict[str, Any]]:
        if not snapshot.has_table(table):
            return {}
        conn = snapshot.connection
        if rowids is None:
            cursor = conn.execute(f'SELECT rowid AS {_ROWID}, * FROM "{table}"')
            names = [c[0] for c in cursor.description]
            return {row[0]: dict(zip(names[1:], row[1:], strict=True)) for row in cursor.fetchall()}
        found: dict[Any, dict[str, Any]] = {}
        for rowid in rowids:
            cursor = conn.execute(f'SELECT * FROM "{table}" WHERE rowid=?', (rowid,))
            row = cursor.fetchone()
            if row is not None:
                found[rowid] = dict(zip([c[0] for c in cursor.description], row, strict=True))
        return found

    def _rows_by_key(self, snapshot: DatabaseSnapshot, table: str, key: list[str]) -> dict[Any, dict[str, Any]]:
        """For WITHOUT ROWID tables: rows keyed by their primary key."""
        if not snapshot.has_table(table):
            return {}
        cursor = snapshot.connection.execute(f'SELECT * FROM "{table}"')
        names = [c[0] for c in cursor.description]
        rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
        return {tuple(r[k] for k in key): r for r in rows}

    def _touched_rowids(self, table: str) -> list[int] | None:
        """Rowids toolgym's triggers recorded as touched, or None when the db has no such record."""
        if not self.after.has_table(TOUCHED_TABLE) or not self.before.has_table(table) or not self.after.has_table(table):
            return None
        rows = self.after.connection.execute(f"SELECT rid FROM {TOUCHED_TABLE} WHERE tbl=? ORDER BY rid", (table,))
        return [r[0] for r in rows.fetchall()]

    def _table_diff(self, table: str) -> dict[str, Any]:
        reference = self.before if self.before.has_table(table) else self.after
        key = reference.primary_key(table)
        schema = reference.connection.execute("SELECT sql FROM sqlite_master WHERE name=?", (table,)).fetchone()
        without_rowid = bool(schema and schema[0] and "WITHOUT ROWID" in schema[0].upper())
        if without_rowid:
            before_rows = self._rows_by_key(self.before, table, key)
            after_rows = self._rows_by_key(self.after, table, key)
        else:
            touched = self._touched_rowids(table)
            before_rows = self._rows_by_rowid(self.before, table, touched)
            after_rows = self._rows_by_rowid(self.after, table, touched)

        def identity(row: dict[str, Any], rowid: Any) -> Any:
            if key == ["rowid"]:
                return rowid
            values = tuple(row.get(k) for k in key)
            return values[0] if len(values) == 1 else values

        def visible(row: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in row.items() if not self.ignore_config.should_ignore_field(table, k)}

        added, removed, modified = [], [], []
        for rowid in sorted(set(before_rows) | set(after_rows), key=_sort_key):
            before, after = before_rows.get(rowid), after_rows.get(rowid)
            if before is None and after is not None:
                added.append({"row_id": identity(after, rowid), "data": visible(after)})
            elif after is None and before is not None:
                removed.append({"row_id": identity(before, rowid), "data": visible(before)})
            elif before is not None and after is not None and before != after:
                changes = {
                    f: {"before": before.get(f), "after": after.get(f)}
                    for f in after
                    if before.get(f) != after.get(f) and not self.ignore_config.should_ignore_field(table, f)
                }
                if changes:
                    modified.append({"row_id": identity(after, rowid), "changes": changes, "data": visible(after)})
        total = len(added) + len(removed) + len(modified)
        after_count = self.after.connection.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0] if self.after.has_table(table) else 0
        return {
            "table_name": table,
            "primary_key": key,
            "added_rows": added,
            "removed_rows": removed,
            "modified_rows": modified,
            "unchanged_count": after_count - len(added) - len(modified),
            "total_changes": total,
        }

    def _collect(self) -> dict[str, dict[str, Any]]:
        if self._cached is None:
            tables = sorted(set(self.before.tables()) | set(self.after.tables()))
            self._cached = {t: self._table_diff(t) for t in tables if not self.ignore_config.should_ignore_table(t)}
        return self._cached

    def changes(self) -> dict[str, dict[str, Any]]:
        """The structured diff: `{table: {added_rows, removed_rows, modified_rows, ...}}`, changed tables only."""
        return {t: d for t, d in self._collect().items() if d["total_changes"]}

    def _all_changes(self) -> list[tuple[str, str, dict[str, Any]]]:
        out = []
        for table, report in self._collect().items():
            out += [(table, "insert", row) for row in report["added_rows"]]
            out += [(table, "delete", row) for row in report["removed_rows"]]
            out += [(table, "modify", row) for row in report["modified_rows"]]
        return out

    # -- invariants ------------------------------------------------------------------------
    @staticmethod
    def _specs_for(specs: list[dict[str, Any]], table: str, row_id: Any) -> list[dict[str, Any]]:
        return [s for s in specs if s.get("table") == table and "pk" in s and _pk_text(s["pk"]) == _pk_text(row_id)]

    def _no_changes(self) -> SnapshotDiff:
        for table, report in self._collect().items():
            if report["total_changes"]:
                raise AssertionError(f"Expected no changes but found {report['total_changes']} change(s) in table '{table}'")
        return self

    @staticmethod
    def _describe(table: str, op: str, row: dict[str, Any], field: str | None = None) -> str:
        if op == "modify" and field is not None:
            change = row["changes"][field]
            return f"modify {table} pk={row['row_id']!r} field '{field}': {change['before']!r} -> {change['after']!r}"
        return f"{op} {table} pk={row['row_id']!r}"

    def _raise_unexpected(self, problems: list[str], allowed: list[dict[str, Any]]) -> None:
        lines = ["Unexpected database changes:"] + [f"  - {p}" for p in problems[:10]]
        if len(problems) > 10:
            lines.append(f"  ... and {len(problems) - 10} more")
        lines.append(f"Allowed changes: {allowed[:5]!r}" + (" ..." if len(allowed) > 5 else ""))
        raise AssertionError("\n".join(lines))

    def expect_only(self, allowed_changes: list[dict[str, Any]]) -> SnapshotDiff:
        """Every change is allowed by a `{table, pk, field, after}` spec ('__added__' / '__removed__' for rows)."""
        if not allowed_changes:
            return self._no_changes()
        problems = []
        for table, op, row in self._all_changes():
            specs = self._specs_for(allowed_changes, table, row["row_id"])
            if op == "modify":
                for field, change in row["changes"].items():
                    if not any(s.get("field") == field and values_equivalent(s.get("after"), change["after"]) for s in specs):
                        problems.append(self._describe(table, op, row, field))
            else:
                marker = "__added__" if op == "insert" else "__removed__"
                if not any(s.get("field") is None and s.get("after") == marker for s in specs):
                    problems.append(self._describe(table, op, row))
        if problems:
            self._raise_unexpected(problems, allowed_changes)
        return self

    def _check_row_fields(self, table: str, data: dict[str, Any], spec: dict[str, Any], every_field: bool) -> list[str]:
        """Mismatches of a row against a spec's `fields` (every row field must be listed when `every_field`)."""
        fields = spec.get("fields")
        if fields is None:
            return []
        mapping = _fields_spec(fields)
        problems = []
        names = list(data) if every_field else list(mapping)
        for name in names:
            if name == "rowid" or self.ignore_config.should_ignore_field(table, name):
                continue
            if name not in mapping:
                problems.append(f"field '{name}' is not in the spec")
                continue
            if name not in data:
                problems.append(f"field '{name}' is not a column of {table}")
                continue
            check, expected = mapping[name]
            if check and not values_equivalent(expected, data[name]):
                problems.append(f"field '{name}': expected {expected!r}, got {data[name]!r}")
        return problems

    def _check_modify(self, table: str, row: dict[str, Any], spec: dict[str, Any]) -> list[str]:
        resulting = spec.get("resulting_fields")
        if resulting is None:
            return []
        if "no_other_changes" not in spec or not isinstance(spec["no_other_changes"], bool):
            raise ValueError(
                f"modify spec for table '{table}' pk={spec.get('pk')!r} has 'resulting_fields' and needs "
                "'no_other_changes': True or False"
            )
        mapping = _fields_spec(resulting)
        problems = []
        for name, change in row["changes"].items():
            if name not in mapping:
                if spec["no_other_changes"]:
                    problems.append(f"field '{name}' changed but is not in resulting_fields")
                continue
            check, expected = mapping[name]
            if check and not values_equivalent(expected, change["after"]):
                problems.append(f"field '{name}': expected {expected!r}, got {change['after']!r}")
        for name, (check, expected) in mapping.items():
            if name not in row["changes"] and check and not values_equivalent(expected, row["data"].get(name)):
                problems.append(f"field '{name}': expected {expected!r}, got {row['data'].get(name)!r}")
        return problems

    def _validate_typed(self, specs: list[dict[str, Any]], strict_types: bool) -> tuple[list[str], set[int]]:
        """Problems with the actual changes, and the indexes of specs they realised."""
        problems: list[str] = []
        realised: set[int] = set()
        for table, op, row in self._all_changes():
            candidates = self._specs_for(specs, table, row["row_id"])
            typed = [s for s in candidates if s.get("type") == op]
            if typed:
                spec = typed[0]
                if op == "modify":
                    errors = self._check_modify(table, row, spec)
                else:
                    errors = self._check_row_fields(table, row["data"], spec, every_field=op == "insert")
                if errors:
                    problems.append(self._describe(table, op, row) + ": " + "; ".join(errors))
                else:
                    realised.add(next(i for i, s in enumerate(specs) if s is spec))
                continue
            if strict_types:
                problems.append(self._describe(table, op, row) + ": no spec allows it")
                continue
            # legacy whole-row / single-field specs
            if op == "modify":
                for field, change in row["changes"].items():
                    if not any(s.get("field") == field and values_equivalent(s.get("after"), change["after"]) for s in candidates):
                        problems.append(self._describe(table, op, row, field))
            else:
                marker = "__added__" if op == "insert" else "__removed__"
                if not any(s.get("fields", None) is None and s.get("after") == marker for s in candidates):
                    problems.append(self._describe(table, op, row))
        return problems, realised

    def expect_only_v2(self, allowed_changes: list[dict[str, Any]], require_completeness: bool = True) -> SnapshotDiff:
        """Typed specs (`type`: insert | modify | delete, with `fields` / `resulting_fields`); legacy specs allowed.

        With `require_completeness`, every typed spec must also have happened.
        """
        if not allowed_changes:
            return self._no_changes()
        for spec in allowed_changes:
            if spec.get("type") not in (None, "insert", "modify", "delete"):
                raise ValueError(f"spec {spec!r}: 'type' must be 'insert', 'modify' or 'delete'")
        problems, realised = self._validate_typed(allowed_changes, strict_types=False)
        if require_completeness:
            for index, spec in enumerate(allowed_changes):
                if spec.get("type") is not None and index not in realised:
                    problems.append(f"expected {spec['type']} {spec.get('table')} pk={spec.get('pk')!r} did not happen")
        if problems:
            self._raise_unexpected(problems, allowed_changes)
        return self

    def expect_exactly(self, expected_changes: list[dict[str, Any]]) -> SnapshotDiff:
        """Exactly these typed changes happened: nothing unexpected, nothing missing."""
        for index, spec in enumerate(expected_changes):
            for required in ("type", "table", "pk"):
                if required not in spec:
                    raise ValueError(f"spec at index {index} lacks required '{required}': {spec!r}")
            if spec["type"] not in ("insert", "modify", "delete"):
                raise ValueError(f"spec at index {index}: 'type' must be 'insert', 'modify' or 'delete', got {spec['type']!r}")
        problems, realised = self._validate_typed(expected_changes, strict_types=True)
        for index, spec in enumerate(expected_changes):
            if index not in realised:
                problems.append(f"expected {spec['type']} {spec['table']} pk={spec['pk']!r} did not happen")
        if problems:
            self._raise_unexpected(problems, expected_changes)
        return self

    def expect(self, *, allow: list[dict[str, Any]] | None = None, forbid: list[dict[str, Any]] | None = None) -> SnapshotDiff:
        """Per-table / per-field rules: modified fields must be allowed (when `allow` is given) and not forbidden."""
        allowed = {(c["table"], c.get("field")) for c in allow or []}
        forbidden = {(c["table"], c.get("field")) for c in forbid or []}
        for table, report in self._collect().items():
            for row in report["modified_rows"]:
                for field in row["changes"]:
                    if (table, field) in forbidden:
                        raise AssertionError(f"Modification to forbidden field {(table, field)}")
                    if allowed and (table, field) not in allowed:
                        raise AssertionError(f"Modification to unallowed field {(table, field)}")
            if (table, None) in forbidden and (report["added_rows"] or report["removed_rows"]):
                raise AssertionError(f"Changes in forbidden table {table}")
        return self


# ---------------------------------------------------------------------------------------------
#  The `env` a verifier receives
# ---------------------------------------------------------------------------------------------


class _Instance:
    """Fleet verifiers sometimes call `env.instance.load()`; locally there is nothing to load."""

    def load(self) -> None:
        return None


class VerifierEnv:
    """`env.db("seed")` / `env.db("current")` (and `env.db(which, app)` when several apps are joined)."""

    def __init__(self, databases: dict[str, dict[str, str]], env_variables: dict[str, str] | None = None) -> None:
        self._paths = databases
        self._snapshots: dict[tuple[str, str], DatabaseSnapshot] = {}
        self.apps = list(databases)
        self.env_variables = dict(env_variables or {})
        self.instance = _Instance()

    def db(self, name: str = "current", app: str | None = None) -> DatabaseSnapshot:
        if name not in ("seed", "current"):
            raise KeyError(f"unknown database {name!r}; available: 'seed', 'current'")
        if app is None:
            if len(self.apps) != 1:
                raise ValueError(f"this environment joins apps {self.apps}; name one: env.db({name!r}, app)")
            app = self.apps[0]
        if app not in self._paths:
            raise KeyError(f"unknown app {app!r}; available: {self.apps}")
        key = (app, name)
        if key not in self._snapshots:
            self._snapshots[key] = DatabaseSnapshot(self._paths[app][name], name=f"{app}:{name}")
        return self._snapshots[key]

    def open_all(self) -> None:
        """Open every database now (the sandbox allows no new connections once the verifier runs)."""
        for app in self.apps:
            for which in ("seed", "current"):
                _ = self.db(which, app).connection

    def close(self) -> None:
        for snapshot in self._snapshots.values():
            snapshot.close()
