"""The Fleet verifier API (query builder, diff invariants) on real SQLite files, in-process."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from toolgym.envs import Environment
from toolgym.envs.examples.toy import APP
from toolgym.verify.fleet_api import DatabaseSnapshot, IgnoreConfig, SnapshotDiff, VerifierEnv


@pytest.fixture
def dbs(tmp_path: Path) -> tuple[DatabaseSnapshot, DatabaseSnapshot]:
    """seed and current of the toy app after: insert note 7, complete note 1, delete note 2."""
    env = Environment([APP])
    env.reset({"LOGGED_IN_USER": "ana", "CURRENT_DATE": "2026-06-15"})
    env.call_tool("add_note", {"title": "buy milk", "due": "tomorrow"})
    env.call_tool("complete_note", {"note_id": 1})
    env.db("current").execute("DELETE FROM notes WHERE id = 2")
    seed, current = tmp_path / "seed.sqlite", tmp_path / "current.sqlite"
    seed.write_bytes(env.db("seed").serialize())
    current.write_bytes(env.db("current").serialize())
    return DatabaseSnapshot(str(seed), name="seed"), DatabaseSnapshot(str(current), name="current")


def diff_of(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot], ignore: IgnoreConfig | None = None) -> SnapshotDiff:
    return dbs[0].diff(dbs[1], ignore)


def test_changes_are_keyed_by_primary_key(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot]) -> None:
    notes = diff_of(dbs).changes()["notes"]
    assert [r["row_id"] for r in notes["added_rows"]] == [7]
    assert notes["added_rows"][0]["data"] == {"id": 7, "owner": "ana", "title": "buy milk", "due": "2026-06-16", "done": 0}
    assert [(r["row_id"], r["changes"]) for r in notes["modified_rows"]] == [(1, {"done": {"before": 0, "after": 1}})]
    assert [r["row_id"] for r in notes["removed_rows"]] == [2]
    assert notes["total_changes"] == 3
    assert "users" not in diff_of(dbs).changes()


def test_full_comparison_agrees_with_the_touched_rows(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot], tmp_path: Path) -> None:
    """A current db without toolgym's trigger bookkeeping is diffed row by row, to the same result."""
    plain = tmp_path / "plain.sqlite"
    plain.write_bytes(Path(dbs[1].db_path).read_bytes())
    with sqlite3.connect(plain) as conn:
        conn.executescript("DROP TRIGGER IF EXISTS _tg_notes_ins; DROP TRIGGER IF EXISTS _tg_notes_del;"
                           "DROP TRIGGER IF EXISTS _tg_notes_upd; DROP TABLE _toolgym_touched;")
    assert dbs[0].diff(DatabaseSnapshot(str(plain))).changes() == diff_of(dbs).changes()


def test_expect_only_legacy_specs(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot]) -> None:
    allowed = [
        {"table": "notes", "pk": 7, "field": None, "after": "__added__"},
        {"table": "notes", "pk": 1, "field": "done", "after": 1},
        {"table": "notes", "pk": "2", "field": None, "after": "__removed__"},  # pk compares as text
    ]
    diff_of(dbs).expect_only(allowed)
    with pytest.raises(AssertionError, match=r"delete notes pk=2"):
        diff_of(dbs).expect_only(allowed[:2])
    with pytest.raises(AssertionError, match=r"modify notes pk=1 field 'done': 0 -> 1"):
        diff_of(dbs).expect_only([allowed[0], {"table": "notes", "pk": 1, "field": "done", "after": 0}, allowed[2]])
    with pytest.raises(AssertionError, match="Expected no changes but found 3 change"):
        diff_of(dbs).expect_only([])


INSERT = {"type": "insert", "table": "notes", "pk": 7,
          "fields": [("id", 7), ("owner", "ana"), ("title", "buy milk"), ("due", ...), ("done", 0)]}
MODIFY = {"type": "modify", "table": "notes", "pk": 1, "resulting_fields": [("done", 1)], "no_other_changes": True}
DELETE = {"type": "delete", "table": "notes", "pk": 2, "fields": [("owner", "bo")]}


def test_expect_only_v2_typed_specs(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot]) -> None:
    diff_of(dbs).expect_only_v2([INSERT, MODIFY, DELETE])
    short_insert = {**INSERT, "fields": INSERT["fields"][:-1]}
    with pytest.raises(AssertionError, match="field 'done' is not in the spec"):
        diff_of(dbs).expect_only_v2([short_insert, MODIFY, DELETE])
    wrong_delete = {**DELETE, "fields": [("owner", "ana")]}
    with pytest.raises(AssertionError, match="field 'owner': expected 'ana', got 'bo'"):
        diff_of(dbs).expect_only_v2([INSERT, MODIFY, wrong_delete])
    with pytest.raises(ValueError, match="no_other_changes"):
        diff_of(dbs).expect_only_v2([INSERT, {k: v for k, v in MODIFY.items() if k != "no_other_changes"}, DELETE])


def test_expect_only_v2_completeness(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot]) -> None:
    never_done = {"type": "modify", "table": "notes", "pk": 5, "resulting_fields": [("done", 1)], "no_other_changes": True}
    with pytest.raises(AssertionError, match="expected modify notes pk=5 did not happen"):
        diff_of(dbs).expect_only_v2([INSERT, MODIFY, DELETE, never_done])
    diff_of(dbs).expect_only_v2([INSERT, MODIFY, DELETE, never_done], require_completeness=False)


def test_expect_exactly(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot]) -> None:
    diff_of(dbs).expect_exactly([INSERT, MODIFY, DELETE])
    with pytest.raises(AssertionError, match="delete notes pk=2: no spec allows it"):
        diff_of(dbs).expect_exactly([INSERT, MODIFY])
    with pytest.raises(AssertionError, match="expected delete notes pk=4 did not happen"):
        diff_of(dbs).expect_exactly([INSERT, MODIFY, DELETE, {"type": "delete", "table": "notes", "pk": 4}])
    with pytest.raises(ValueError, match="lacks required 'type'"):
        diff_of(dbs).expect_exactly([{"table": "notes", "pk": 7}])


def test_ignore_config_and_expect(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot]) -> None:
    ignoring_done = diff_of(dbs, IgnoreConfig(table_fields={"notes": {"done"}}))
    assert [r["row_id"] for r in ignoring_done.changes()["notes"]["modified_rows"]] == []
    assert diff_of(dbs, IgnoreConfig(tables={"notes"})).changes() == {}
    diff_of(dbs).expect(allow=[{"table": "notes", "field": "done"}])
    with pytest.raises(AssertionError, match="forbidden field"):
        diff_of(dbs).expect(forbid=[{"table": "notes", "field": "done"}])
    with pytest.raises(AssertionError, match="forbidden table notes"):
        diff_of(dbs).expect(forbid=[{"table": "notes"}])


def test_query_builder(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot]) -> None:
    _, current = dbs
    notes = current.table("notes")
    assert [r["id"] for r in notes.eq("owner", "ana").sort("id", desc=True).all()] == [7, 5, 3, 1]
    assert notes.eq("owner", "ana").count() == 4
    notes.eq("owner", "bo").count().assert_eq(2).assert_gt(1).assert_between(1, 3)
    assert notes.neq("owner", "ana").select("id").all() == [{"id": 4}, {"id": 6}]
    assert [r["id"] for r in notes.in_("id", [1, 2, 3]).all()] == [1, 3]
    assert [r["id"] for r in notes.not_in("id", [1, 3, 5, 7]).gt("id", 4).all()] == [6]
    assert [r["id"] for r in notes.gte("due", "2026-06-15").lte("due", "2026-06-16").all()] == [5, 6, 7]
    assert notes.eq("title", "BUY MILK").first() is None
    assert notes.ilike("title", "BUY%").first()["id"] == 7
    assert notes.is_null("due").count() == 0 and notes.not_null("due").count() == 6
    assert notes.eq("due", None).count() == 0  # eq(None) means IS NULL, not "= NULL"
    assert notes.limit(2).all()[1]["id"] == 3
    joined = notes.select("notes.id", "users.id AS user_id").join("users", {"owner": "username"}).eq("notes.id", 4).first()
    assert joined == {"id": 4, "user_id": 2}
    notes.eq("id", 7).assert_exists().assert_eq("due", "2026-06-16")
    notes.eq("id", 2).assert_none()
    with pytest.raises(AssertionError, match="expected 'tomorrow'"):
        notes.eq("id", 7).assert_eq("due", "tomorrow")
    current.expect_row("notes", {"id": 1}, {"done": 1}).expect_absent_row("notes", {"id": 2})
    current.expect_rows("notes", {"owner": "ana"}, count=4, contains=[{"title": "buy milk"}])


def test_raw_query_has_fleet_shape_and_is_read_only(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot]) -> None:
    result = dbs[1].query("SELECT id, owner FROM notes WHERE id < ? ORDER BY id", [3])
    assert result.columns == ["id", "owner"] and result.rows == [[1, "ana"]]
    assert list(result) == [{"id": 1, "owner": "ana"}]
    with pytest.raises(sqlite3.OperationalError):
        dbs[1].query("DELETE FROM notes")
    with pytest.raises(sqlite3.OperationalError):
        dbs[1].query("ATTACH DATABASE ':memory:' AS other")
    with pytest.raises(PermissionError):
        dbs[1].exec("DELETE FROM notes")
    assert dbs[1].tables() == ["notes", "users"]  # toolgym's bookkeeping table is hidden


def test_composite_primary_keys(tmp_path: Path) -> None:
    paths = [tmp_path / "before.sqlite", tmp_path / "after.sqlite"]
    for path in paths:
        with sqlite3.connect(path) as conn:
            conn.executescript(
                "CREATE TABLE members (team TEXT, user TEXT, role TEXT, PRIMARY KEY (team, user));"
                "INSERT INTO members VALUES ('red', 'ana', 'member'), ('red', 'bo', 'member');"
            )
    with sqlite3.connect(paths[1]) as conn:
        conn.execute("UPDATE members SET role = 'owner' WHERE user = 'bo'")
    before, after = DatabaseSnapshot(str(paths[0])), DatabaseSnapshot(str(paths[1]))
    modified = before.diff(after).changes()["members"]["modified_rows"]
    assert [r["row_id"] for r in modified] == [("red", "bo")]
    spec = {"type": "modify", "table": "members", "pk": ["red", "bo"], "resulting_fields": [("role", "owner")],
            "no_other_changes": True}
    before.diff(after).expect_exactly([spec])


def test_verifier_env_db_names(dbs: tuple[DatabaseSnapshot, DatabaseSnapshot]) -> None:
    env = VerifierEnv({"toy": {"seed": dbs[0].db_path, "current": dbs[1].db_path}})
    assert env.db().table("notes").count() == 6
    assert env.db("seed").table("notes").count() == 6
    assert env.db("current") is env.db("current", "toy")
    with pytest.raises(KeyError, match="unknown database 'final'"):
        env.db("final")
    with pytest.raises(KeyError, match="unknown app 'mail'"):
        env.db("current", "mail")
    env.close()
