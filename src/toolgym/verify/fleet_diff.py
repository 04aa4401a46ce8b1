"""Row-level changes between two snapshots, and Fleet's `expect_*` invariants over them.

Standard library only, like every fleet_*.py file: see `toolgym.verify.fleet_api`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .fleet_values import TOUCHED_TABLE, values_equivalent

if TYPE_CHECKING:
    from .fleet_query import DatabaseSnapshot


_ROWID = "__toolgym_rowid__"  # the rowid, selected under a name no app column has


def _sort_key(key: Any) -> tuple[int, Any]:
    """Rowids sort numerically; composite keys (WITHOUT ROWID tables) by their text."""
    return (0, key) if isinstance(key, int) else (1, str(key))


def _pk_text(pk: Any) -> str:
    """Primary keys compare as text (Fleet: `str(spec_pk) == str(row_id)`); lists act as tuples."""
    if isinstance(pk, list | tuple):
        return str(tuple(pk))
    return str(pk)


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

    def _legacy_problems(self, table: str, op: str, row: dict[str, Any], specs: list[dict[str, Any]], row_key: str
                         ) -> list[str]:
        """One change against legacy `{table, pk, field, after}` specs: a modified field needs a spec with its
        new value; an added / removed row needs `after` '__added__' / '__removed__' with no `row_key` set."""
        if op == "modify":
            return [
                self._describe(table, op, row, field) for field, change in row["changes"].items()
                if not any(s.get("field") == field and values_equivalent(s.get("after"), change["after"]) for s in specs)
            ]
        marker = "__added__" if op == "insert" else "__removed__"
        if any(s.get(row_key) is None and s.get("after") == marker for s in specs):
            return []
        return [self._describe(table, op, row)]

    def expect_only(self, allowed_changes: list[dict[str, Any]]) -> SnapshotDiff:
        """Every change is allowed by a `{table, pk, field, after}` spec ('__added__' / '__removed__' for rows)."""
        if not allowed_changes:
            return self._no_changes()
        problems = []
        for table, op, row in self._all_changes():
            specs = self._specs_for(allowed_changes, table, row["row_id"])
            problems += self._legacy_problems(table, op, row, specs, row_key="field")
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
            problems += self._legacy_problems(table, op, row, candidates, row_key="fields")
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
