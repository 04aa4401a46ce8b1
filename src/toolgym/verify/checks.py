"""Evaluate declarative checks against an episode's final state and produce a Verdict."""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from toolgym.envs.database import RowChange
from toolgym.envs.environment import Environment, ToolCallRecord
from toolgym.schema import (
    AnswerContains,
    AnswerEquals,
    Check,
    CheckResult,
    DiffOnly,
    ExpectedChange,
    FieldEquals,
    RowAbsent,
    RowExists,
    ToolCalled,
    ToolNotCalled,
    Verdict,
)


def normalize_text(text: str | None) -> str:
    """Case-folded, whitespace-collapsed, trailing punctuation dropped: what 'the same answer' means."""
    collapsed = " ".join((text or "").casefold().split())
    return collapsed.rstrip(".!")


def contains_value(answer: str, value: str) -> bool:
    """`value` occurs in `answer` as a whole token: "3" is not found in "13" nor in "3.5"."""
    needle = normalize_text(value)
    if not needle:
        return True
    start = r"(?<![\w.])" if needle[0].isalnum() else ""
    end = r"(?!\w|\.\d)" if needle[-1].isalnum() else ""
    return re.search(start + re.escape(needle) + end, answer) is not None


def _split_table(env: Environment, table: str) -> tuple[str | None, str]:
    """'drive.files' names an app's table in a multi-app environment; 'files' the only app's."""
    if "." in table:
        app, name = table.split(".", 1)
        return app, name
    return None, table


def _where_sql(where: dict[str, Any]) -> tuple[str, list[Any]]:
    if not where:
        return "1=1", []
    parts, params = [], []
    for column, value in where.items():
        if value is None:
            parts.append(f'"{column}" IS NULL')
        else:
            parts.append(f'"{column}" = ?')
            params.append(value)
    return " AND ".join(parts), params


def _matching(conn: sqlite3.Connection, table: str, where: dict[str, Any]) -> list[dict[str, Any]]:
    clause, params = _where_sql(where)
    return [dict(r) for r in conn.execute(f'SELECT * FROM "{table}" WHERE {clause}', params).fetchall()]


def _row_matches(row: dict[str, Any], where: dict[str, Any]) -> bool:
    return all(row.get(k) == v for k, v in where.items())


def _change_allowed(change: RowChange, expected: ExpectedChange) -> bool:
    if change.table != expected.table or change.op != expected.op:
        return False
    if not _row_matches(change.row, expected.where):
        return False
    if expected.op == "update" and expected.fields is not None:
        return set(change.changed_fields) <= set(expected.fields)
    return True


def _describe(change: RowChange) -> str:
    if change.op == "update":
        return f"update {change.table}#{change.rowid} ({', '.join(change.changed_fields)})"
    return f"{change.op} {change.table}#{change.rowid}"


def _calls_match(call: ToolCallRecord, check: ToolCalled) -> bool:
    if call.name != check.name or not call.ok:
        return False
    if check.arguments is None:
        return True
    # A missing argument must not match an expected value that happens to read "none".
    return all(k in call.arguments and _argument_text(call.arguments[k]) == _argument_text(v)
               for k, v in check.arguments.items())


def _argument_text(value: Any) -> str:
    """An argument as compared: nested objects by content whatever their key order, text normalised."""
    if isinstance(value, dict | list):
        return normalize_text(json.dumps(value, sort_keys=True, ensure_ascii=False))
    return normalize_text(str(value))


def evaluate_check(check: Check, env: Environment, final_answer: str | None, changes: list[RowChange]) -> CheckResult:
    """One check → pass/fail with a detail line. Raises only if the check names a missing table."""
    label = check.label or check.kind
    if isinstance(check, RowExists | RowAbsent | FieldEquals):
        app, table = _split_table(env, check.table)
        which = getattr(check, "db", "current")
        rows = _matching(env.db(which, app), table, check.where)
        if isinstance(check, RowExists):
            ok = len(rows) == check.count if check.count is not None else len(rows) > 0
            want = f"exactly {check.count}" if check.count is not None else "at least 1"
            return CheckResult(kind=check.kind, label=label, passed=ok, weight=check.weight,
                               detail=f"{len(rows)} row(s) in {check.table} match {check.where}; want {want}")
        if isinstance(check, RowAbsent):
            return CheckResult(kind=check.kind, label=label, passed=not rows, weight=check.weight,
                               detail=f"{len(rows)} row(s) in {check.table} match {check.where}; want 0")
        if len(rows) != 1:
            return CheckResult(kind=check.kind, label=label, passed=False, weight=check.weight,
                               detail=f"{len(rows)} row(s) in {check.table} match {check.where}; want exactly 1")
        actual = rows[0].get(check.field)
        return CheckResult(kind=check.kind, label=label, passed=actual == check.value, weight=check.weight,
                           detail=f"{check.table}.{check.field} = {actual!r}; want {check.value!r}")
    if isinstance(check, DiffOnly):
        unexpected = [c for c in changes if not any(_change_allowed(c, e) for e in check.expected)]
        missing = [e for e in check.expected if not any(_change_allowed(c, e) for c in changes)]
        ok = not unexpected and not missing
        parts = []
        if unexpected:
            parts.append("unexpected: " + "; ".join(_describe(c) for c in unexpected[:5]))
        if missing:
            parts.append("missing: " + "; ".join(f"{e.op} {e.table} {e.where}" for e in missing[:5]))
        return CheckResult(kind=check.kind, label=label, passed=ok, weight=check.weight,
                           detail=" | ".join(parts) or f"{len(changes)} change(s), all expected")
    if isinstance(check, AnswerContains):
        answer = normalize_text(final_answer)
        absent = [v for v in check.values if not contains_value(answer, v)]
        return CheckResult(kind=check.kind, label=label, passed=not absent, weight=check.weight,
                           credit=1 - len(absent) / len(check.values) if check.values else None,
                           detail=f"answer lacks {absent}" if absent else "answer contains every value")
    if isinstance(check, AnswerEquals):
        ok = normalize_text(final_answer) == normalize_text(check.value)
        return CheckResult(kind=check.kind, label=label, passed=ok, weight=check.weight,
                           detail=f"answer {final_answer!r}; want {check.value!r}")
    if isinstance(check, ToolCalled):
        count = sum(1 for c in env.calls if _calls_match(c, check))
        return CheckResult(kind=check.kind, label=label, passed=count >= check.min_count, weight=check.weight,
                           detail=f"{check.name} called successfully {count} time(s); want ≥ {check.min_count}")
    if isinstance(check, ToolNotCalled):
        count = sum(1 for c in env.calls if c.name == check.name)
        return CheckResult(kind=check.kind, label=label, passed=count == 0, weight=check.weight,
                           detail=f"{check.name} called {count} time(s); want 0")
    raise TypeError(f"unknown check kind: {check!r}")


def evaluate_checks(checks: list[Check], env: Environment, final_answer: str | None) -> Verdict:
    """All checks → Verdict. A check that cannot run (bad table, broken state) is a verifier error."""
    try:
        changes = env.diff()
        results = [evaluate_check(c, env, final_answer, changes) for c in checks]
    except (sqlite3.Error, ValueError, KeyError) as exc:
        return Verdict.failure(f"verifier error: {type(exc).__name__}: {exc}")
    return Verdict.from_results(results)

