"""The environment SDK on real SQLite: exact diffs, atomic tool calls, argument errors, runtime context."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import pytest

from toolgym.envs import EnvError, Environment, ToolContext, ToolError, resolve_date, tool
from toolgym.envs.examples.toy import APP, ToyApp


def fresh(user: str | None = "ana", today: str = "2026-06-15") -> Environment:
    env = Environment([APP])
    variables = {"CURRENT_DATE": today}
    if user:
        variables["LOGGED_IN_USER"] = user
    env.reset(variables)
    return env


def changes(env: Environment) -> list[tuple[str, str, int, list[str]]]:
    return [(c.table, c.op, c.rowid, c.changed_fields) for c in env.diff()]


# ---------------------------------------------------------------------------------------------
#  Diff: exact net changes
# ---------------------------------------------------------------------------------------------


def test_fresh_environment_has_no_changes() -> None:
    assert changes(fresh()) == []


def test_insert_is_one_insert_with_the_new_row() -> None:
    env = fresh()
    env.call_tool("add_note", {"title": "buy milk", "due": "tomorrow"})
    [change] = env.diff()
    assert (change.table, change.op, change.rowid) == ("notes", "insert", 7)
    assert change.before is None
    assert change.after == {"id": 7, "owner": "ana", "title": "buy milk", "due": "2026-06-16", "done": 0}


def test_update_names_only_the_changed_field() -> None:
    env = fresh()
    env.call_tool("complete_note", {"note_id": 3})
    [change] = env.diff()
    assert (change.op, change.rowid, change.changed_fields) == ("update", 3, ["done"])
    assert (change.before["done"], change.after["done"]) == (0, 1)


def test_delete_keeps_the_deleted_row() -> None:
    env = fresh()
    env.db("current").execute("DELETE FROM notes WHERE id = 2")
    [change] = env.diff()
    assert (change.op, change.rowid, change.after) == ("delete", 2, None)
    assert change.before is not None and change.before["owner"] == "bo"


def test_set_and_set_back_is_no_change() -> None:
    env = fresh()
    db = env.db("current")
    db.execute("UPDATE notes SET done = 1, title = 'x' WHERE id = 1")
    db.execute("UPDATE notes SET done = 0 WHERE id = 1")
    original = env.db("seed").execute("SELECT title FROM notes WHERE id = 1").fetchone()[0]
    db.execute("UPDATE notes SET title = ? WHERE id = 1", (original,))
    assert changes(env) == []


def test_insert_then_delete_is_no_change() -> None:
    env = fresh()
    env.call_tool("add_note", {"title": "temporary"})
    env.db("current").execute("DELETE FROM notes WHERE title = 'temporary'")
    assert changes(env) == []


def test_several_updates_of_one_row_are_one_net_update() -> None:
    env = fresh()
    db = env.db("current")
    db.execute("UPDATE notes SET title = 'a' WHERE id = 4")
    db.execute("UPDATE notes SET title = 'b', done = 1 WHERE id = 4")
    assert changes(env) == [("notes", "update", 4, ["done", "title"])]


def test_insert_or_replace_reports_the_row_it_deleted() -> None:
    env = fresh()
    # username is UNIQUE: the REPLACE deletes user 1 ('ana') and inserts a new row 9.
    env.db("current").execute("INSERT OR REPLACE INTO users(id, username, name) VALUES (9, 'ana', 'Ana Again')")
    assert [(c.table, c.op, c.rowid) for c in env.diff()] == [("users", "delete", 1), ("users", "insert", 9)]


def test_reset_starts_from_the_untouched_seed() -> None:
    env = fresh()
    env.call_tool("add_note", {"title": "x"})
    env.db("current").execute("DELETE FROM notes")
    env.reset({"LOGGED_IN_USER": "ana"})
    assert changes(env) == []
    assert env.db("seed").execute("SELECT COUNT(*) FROM notes").fetchone()[0] == 6
    assert env.db("current").execute("SELECT COUNT(*) FROM notes").fetchone()[0] == 6


def test_diff_of_joined_apps_prefixes_tables_with_the_app() -> None:
    env = Environment([APP, OTHER_APP])
    env.reset({"LOGGED_IN_USER": "ana"})
    env.call_tool("add_note", {"title": "x"})
    env.call_tool("half_write_then_fail", {"title": "ignored"})
    assert [(c.table, c.op) for c in env.diff()] == [("toy.notes", "insert")]


# ---------------------------------------------------------------------------------------------
#  Tool calls are atomic
# ---------------------------------------------------------------------------------------------


@tool
def half_write_then_fail(ctx: ToolContext, title: str) -> dict:
    """Insert a note, then refuse: the insert must not survive the refusal.

    Args:
        title: Title of the note.
    """
    ctx.db.execute("INSERT INTO notes(owner, title) VALUES (?, ?)", (ctx.env.require_user(), title))
    raise ToolError("refused after writing")


@tool
def half_write_then_crash(ctx: ToolContext, title: str) -> dict:
    """Insert a note, then hit a bug.

    Args:
        title: Title of the note.
    """
    ctx.db.execute("INSERT INTO notes(owner, title) VALUES (?, ?)", (ctx.env.require_user(), title))
    raise RuntimeError("bug after writing")


class PartialWriteApp(ToyApp):
    name = "toy_partial"
    tools = [*ToyApp.tools, half_write_then_fail, half_write_then_crash]


class OtherApp(ToyApp):
    """A second app for joined environments (its tools must not clash with toy's)."""

    name = "toy_other"
    tools = [half_write_then_fail]


OTHER_APP = OtherApp()


def test_a_refused_call_leaves_no_half_done_write() -> None:
    env = Environment([PartialWriteApp()])
    env.reset({"LOGGED_IN_USER": "ana"})
    result = env.call_tool("half_write_then_fail", {"title": "ghost"})
    assert result.is_error and "refused after writing" in result.content
    assert changes(env) == []
    env.call_tool("add_note", {"title": "real"})  # the connection still works afterwards
    assert [c.op for c in env.diff()] == ["insert"]


def test_a_crashing_tool_raises_env_error_and_leaves_no_write() -> None:
    env = Environment([PartialWriteApp()])
    env.reset({"LOGGED_IN_USER": "ana"})
    with pytest.raises(EnvError, match=r"half_write_then_crash.*RuntimeError: bug after writing"):
        env.call_tool("half_write_then_crash", {"title": "ghost"})
    assert changes(env) == []
    assert env.calls[-1].ok is False


def test_crash_tool_is_an_env_error_not_a_tool_result() -> None:
    env = fresh()
    with pytest.raises(EnvError, match="ZeroDivisionError"):
        env.call_tool("crash", {})


# ---------------------------------------------------------------------------------------------
#  Malformed arguments come back as readable errors naming the argument
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("add_note", {}, "missing required argument(s) 'title' for 'add_note'"),
        ("add_note", {"title": "x", "colour": "red"}, "unknown argument(s) 'colour' for 'add_note'; it takes: title, due"),
        ("complete_note", {"note_id": "one"}, "argument 'note_id' must be an integer; got string 'one'"),
        ("complete_note", {"note_id": 1.5}, "argument 'note_id' must be an integer; got number 1.5"),
        ("complete_note", {"note_id": True}, "argument 'note_id' must be an integer; got boolean True"),
        ("add_note", {"title": None}, "argument 'title' must be a string; got null None"),
        ("add_note", {"title": ["a"]}, "argument 'title' must be a string; got array ['a']"),
        ("add_note", ["buy milk"], "arguments of 'add_note' must be a JSON object; got array"),
        ("add_note", {"title": "x", "due": "someday"}, "cannot read date 'someday'"),
        ("drop_tables", {}, "unknown tool 'drop_tables'; available tools: add_note, complete_note, crash, list_my_notes"),
    ],
)
def test_bad_calls_are_readable_errors(name: str, arguments: object, message: str) -> None:
    env = fresh()
    result = env.call_tool(name, arguments)
    assert result.is_error
    assert message in result.content
    assert result.content.startswith("Error: ")
    assert changes(env) == []
    assert env.calls[-1].ok is False and env.calls[-1].error is not None


def test_integral_float_is_accepted_for_an_integer() -> None:
    env = fresh()
    result = env.call_tool("complete_note", {"note_id": 3.0})
    assert not result.is_error
    assert changes(env) == [("notes", "update", 3, ["done"])]


@tool
def tag_notes(ctx: ToolContext, tags: list[str], weight: float = 1.0, meta: dict | None = None) -> dict:
    """Tag notes (boundary tests: arrays, numbers, objects).

    Args:
        tags: Tags to add.
        weight: A weight.
        meta: Free-form metadata.
    """
    return {"tags": tags, "weight": weight}


class BoundaryApp(ToyApp):
    name = "toy_boundary"
    tools = [*ToyApp.tools, tag_notes]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("complete_note", {"note_id": float("nan")}, "argument 'note_id' must be a finite number; got NaN"),
        ("complete_note", {"note_id": float("inf")}, "argument 'note_id' must be a finite number; got Infinity"),
        ("complete_note", {"note_id": 1e308}, "argument 'note_id' is out of range: integers must lie between "
                                              "-9223372036854775808 and 9223372036854775807"),
        ("complete_note", {"note_id": 2**63}, "argument 'note_id' is out of range"),
        ("complete_note", {"note_id": -(2**63) - 1}, "argument 'note_id' is out of range"),
        ("complete_note", {"note_id": 10**5000}, "got an integer of about 5001 digits"),
        ("add_note", {"title": "x" * 10_001}, "argument 'title' is too long: 10,001 characters; the limit is 10,000"),
        ("add_note", {"title": "a\ud800b"}, "argument 'title' is not valid Unicode text: unpaired surrogate \\ud800 at position 1"),
        ("tag_notes", {"tags": ["ok", "\udfff"]}, "argument 'tags[1]' is not valid Unicode text"),
        ("tag_notes", {"tags": ["a"] * 1_001}, "argument 'tags' has 1,001 items; the limit is 1,000"),
        ("tag_notes", {"tags": [], "weight": float("-inf")}, "argument 'weight' must be a finite number; got -Infinity"),
        ("tag_notes", {"tags": [], "meta": {"k": [float("nan")]}}, "argument 'meta.k[0]' must be a finite number; got NaN"),
        ("tag_notes", {"tags": [], "meta": {"\ud800": 1}}, "argument 'meta' has a key that is not valid text: '\\ud800'"),
        ("tag_notes", {"tags": [], "meta": {"k": {1, 2}}}, "argument 'meta.k' must be a JSON value; got set"),
        ("x" * 60_000, {}, "unknown tool 'xxxxxxxx"),
        ("add_note", {"x" * 60_000: 1}, "unknown argument(s) 'xxxx"),
    ],
)
def test_the_tool_boundary_refuses_values_tools_and_sqlite_cannot_hold(name: str, arguments: object, message: str) -> None:
    env = Environment([BoundaryApp()])
    env.reset({"LOGGED_IN_USER": "ana"})
    result = env.call_tool(name, arguments)
    assert result.is_error and message in result.content, result.content
    assert len(result.content) < 400  # the offending value is shown cut short
    assert changes(env) == []


@pytest.mark.parametrize("depth", [16, 17, 1000])
def test_nesting_is_limited_without_recursion(depth: int) -> None:
    env = Environment([BoundaryApp()])
    env.reset({"LOGGED_IN_USER": "ana"})
    value: object = {}
    for _ in range(depth - 2):  # `depth` levels, counting the arguments object around `meta`
        value = {"a": value}
    result = env.call_tool("tag_notes", {"tags": [], "meta": value})
    assert result.is_error == (depth > 16), result.content
    if depth > 16:
        assert "argument 'meta' is nested too deeply" in result.content


def test_a_long_error_is_cut_keeping_its_advice() -> None:
    env = fresh()
    result = env.call_tool("add_note", {"title": "x", "due": "y" * 9_000})
    assert result.is_error and len(result.content) <= 1_100
    assert result.content.startswith("Error: cannot read date 'yyy") and "characters cut" in result.content
    assert result.content.endswith("'tomorrow' or 'next Friday'")


# ---------------------------------------------------------------------------------------------
#  Whose fault: a tool failing on its input is the model's; a broken environment is not
# ---------------------------------------------------------------------------------------------

FAULTS: dict[str, BaseException] = {
    "value": ValueError("invalid literal for int() with base 10: 'x'"),
    "type": TypeError("unsupported operand type(s)"),
    "key": KeyError("no such status"),
    "index": IndexError("list index out of range"),
    "overflow": OverflowError("Python int too large to convert to SQLite INTEGER"),
    "zero": ZeroDivisionError("division by zero"),
    "recursion": RecursionError("maximum recursion depth exceeded"),
    "unicode": UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"),
    "integrity": sqlite3.IntegrityError("UNIQUE constraint failed: notes.id"),
    "binding": sqlite3.ProgrammingError("Error binding parameter 1: type 'list' is not supported"),
    "like": sqlite3.OperationalError("LIKE or GLOB pattern too complex"),
    "too_big": sqlite3.OperationalError("string or blob too big"),
    # infrastructure
    "locked": sqlite3.OperationalError("database is locked"),
    "disk": sqlite3.OperationalError("disk I/O error"),
    "no_table": sqlite3.OperationalError("no such table: notez"),
    "closed": sqlite3.ProgrammingError("Cannot operate on a closed database."),
    "corrupt": sqlite3.DatabaseError("database disk image is malformed"),
    "memory": MemoryError(),
    "os": OSError("No space left on device"),
    "attribute": AttributeError("'NoneType' object has no attribute 'lower'"),
    "runtime": RuntimeError("bug"),
    "env": EnvError("backend gone"),
}
MODEL_FAULTS = ["value", "type", "key", "index", "overflow", "zero", "recursion", "unicode", "integrity", "binding",
                "like", "too_big"]


@tool
def fail_with(ctx: ToolContext, kind: str) -> dict:
    """Write a note, then raise the exception named `kind` (as tool code would on some input).

    Args:
        kind: Which exception to raise.
    """
    ctx.db.execute("INSERT INTO notes(owner, title) VALUES (?, ?)", (ctx.env.require_user(), kind))
    raise FAULTS[kind]


class FaultApp(ToyApp):
    name = "toy_faults"
    tools = [*ToyApp.tools, fail_with]


@pytest.mark.parametrize("kind", list(FAULTS))
def test_an_exception_on_input_is_the_models_fault_and_infrastructure_stays_infrastructure(kind: str) -> None:
    env = Environment([FaultApp()])
    env.reset({"LOGGED_IN_USER": "ana"})
    if kind in MODEL_FAULTS:
        result = env.call_tool("fail_with", {"kind": kind})
        assert result.is_error and result.content.startswith("Error: fail_with could not use these arguments (")
        assert type(FAULTS[kind]).__name__ in result.content
    else:
        with pytest.raises(EnvError, match=r"tool 'fail_with' of app 'toy_faults' crashed"):
            env.call_tool("fail_with", {"kind": kind})
    assert changes(env) == []  # either way the half-done write is undone
    assert env.calls[-1].ok is False


def test_a_real_constraint_violation_is_a_tool_error() -> None:
    @tool
    def add_note_with_id(ctx: ToolContext, note_id: int) -> dict:
        """Insert a note with a given id.

        Args:
            note_id: Id of the new note.
        """
        ctx.db.execute("INSERT INTO notes(id, owner, title) VALUES (?, 'ana', 't')", (note_id,))
        return {"id": note_id}

    class IdApp(ToyApp):
        name = "toy_ids"
        tools = [*ToyApp.tools, add_note_with_id]

    env = Environment([IdApp()])
    env.reset({"LOGGED_IN_USER": "ana"})
    result = env.call_tool("add_note_with_id", {"note_id": 1})  # note 1 exists
    assert result.is_error and "IntegrityError: UNIQUE constraint failed: notes.id" in result.content
    assert not env.call_tool("add_note_with_id", {"note_id": 2**63 - 1}).is_error  # the largest id SQLite holds


def test_a_closed_database_is_an_env_error_not_the_models() -> None:
    env = fresh()
    env.db().close()
    with pytest.raises(EnvError, match="unusable"):
        env.call_tool("complete_note", {"note_id": 1})
    assert env.call_tool("nope", {}).is_error  # a bad call is still answered without the database


def test_a_failed_lookup_is_a_tool_error_the_model_can_act_on() -> None:
    env = fresh(user="ana")
    result = env.call_tool("complete_note", {"note_id": 2})  # note 2 belongs to bo
    assert result.is_error and "no note with id 2 belongs to you" in result.content


def test_tool_schema_comes_from_signature_and_docstring() -> None:
    spec = {s.name: s for s in Environment([APP]).tool_specs()}["add_note"]
    assert spec.description == "Add a note for the logged-in user."
    assert spec.parameters["required"] == ["title"]
    assert spec.parameters["properties"]["title"] == {"type": "string", "description": "Short title of the note."}
    assert spec.parameters["properties"]["due"]["type"] == "string"


# ---------------------------------------------------------------------------------------------
#  env_variables: who "my" is and what "tomorrow" means
# ---------------------------------------------------------------------------------------------


def test_logged_in_user_decides_what_my_notes_are() -> None:
    ana = json.loads(fresh(user="ana").call_tool("list_my_notes", {}).content)
    bo = json.loads(fresh(user="bo").call_tool("list_my_notes", {}).content)
    assert [n["id"] for n in ana] == [1, 3, 5]
    assert [n["id"] for n in bo] == [2, 4, 6]


def test_no_logged_in_user_is_a_readable_error() -> None:
    result = fresh(user=None).call_tool("list_my_notes", {})
    assert result.is_error and "no user is logged in (LOGGED_IN_USER is not set)" in result.content


@pytest.mark.parametrize(
    ("today", "due", "stored"),
    [
        ("2026-06-15", "tomorrow", "2026-06-16"),
        ("2026-12-31", "tomorrow", "2027-01-01"),
        ("2026-06-17", "next Friday", "2026-06-19"),
        ("2026-06-19", "next Friday", "2026-06-26"),
    ],
)
def test_current_date_decides_relative_dates(today: str, due: str, stored: str) -> None:
    env = fresh(today=today)
    result = json.loads(env.call_tool("add_note", {"title": "x", "due": due}).content)
    assert result["due"] == stored
    assert env.diff()[0].after["due"] == stored


# ---------------------------------------------------------------------------------------------
#  resolve_date (today = Wednesday 2026-06-17)
# ---------------------------------------------------------------------------------------------

WEDNESDAY = dt.date(2026, 6, 17)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("today", "2026-06-17"),
        ("tomorrow", "2026-06-18"),
        ("yesterday", "2026-06-16"),
        ("day after tomorrow", "2026-06-19"),
        ("the day after tomorrow", "2026-06-19"),
        ("in 3 days", "2026-06-20"),
        ("in 1 day", "2026-06-18"),
        ("2 days ago", "2026-06-15"),
        ("next week", "2026-06-24"),
        ("2026-07-01", "2026-07-01"),
        ("friday", "2026-06-19"),
        ("this Friday", "2026-06-19"),
        ("on friday", "2026-06-19"),
        ("next friday", "2026-06-19"),
        ("  Next   FRIDAY ", "2026-06-19"),
        ("last friday", "2026-06-12"),
        ("wednesday", "2026-06-17"),
        ("next wednesday", "2026-06-24"),
        ("last wednesday", "2026-06-10"),
        ("monday", "2026-06-22"),
        ("last monday", "2026-06-15"),
    ],
)
def test_resolve_date(text: str, expected: str) -> None:
    assert resolve_date(text, WEDNESDAY).isoformat() == expected


@pytest.mark.parametrize("text", ["someday", "next fortnight", "2026-13-01", "friday next", ""])
def test_unreadable_dates_name_the_text(text: str) -> None:
    with pytest.raises(ToolError, match="cannot read date"):
        resolve_date(text, WEDNESDAY)
