"""Compact builders for the row checks a write task is graded by: a row exists, a field holds a value, and
the diff holds only the expected inserts and updates. One line per check keeps a family's grading readable.
"""

from __future__ import annotations

from typing import Any

from toolgym.schema import DiffOnly, ExpectedChange, FieldEquals, RowExists


def has_row(table: str, where: dict[str, Any], label: str, weight: float = 1.0,
            count: int | None = None) -> RowExists:
    """A row of `table` matches `where` (exactly `count` rows, when given)."""
    return RowExists(table=table, where=where, count=count, weight=weight, label=label)


def field_is(table: str, where: dict[str, Any], field: str, value: Any, label: str,
             weight: float = 1.0) -> FieldEquals:
    """The one row of `table` matching `where` has `field == value`."""
    return FieldEquals(table=table, where=where, field=field, value=value, weight=weight, label=label)


def inserted(table: str, where: dict[str, Any]) -> ExpectedChange:
    """An insert into `table` of rows matching `where`, allowed by the diff check."""
    return ExpectedChange(table=table, op="insert", where=where)


def updated(table: str, where: dict[str, Any], fields: list[str] | None = None) -> ExpectedChange:
    """An update of the rows matching `where`, allowed to change only `fields` (any column when None)."""
    return ExpectedChange(table=table, op="update", where=where, fields=fields)


def only(label: str, expected: list[ExpectedChange], weight: float = 1.0) -> DiffOnly:
    """The diff holds nothing but the `expected` changes."""
    return DiffOnly(expected=expected, weight=weight, label=label)
