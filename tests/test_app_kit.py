"""The app kit's helpers: the variants apps rely on to keep their generated tasks byte-identical."""

from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
from pathlib import Path

import pytest

from toolgym.envs import ToolContext, ToolError, kit, resolve_date
from toolgym.envs.context import EnvContext
from toolgym.envs.examples.toy import APP
from toolgym.schema import AnswerContains, DiffOnly, ExpectedChange, FieldEquals, RowExists, ToolNotCalled


def test_human_date_says_a_date_three_ways() -> None:
    day = dt.date(2026, 5, 3)
    assert kit.human_date(day) == kit.human_date("2026-05-03") == "May 3"
    assert kit.human_date(day, weekday=True) == "Sunday, May 3"
    assert kit.human_date("2026-05-03", year=True) == "May 3, 2026"


def test_days_stay_in_the_window_and_an_empty_window_is_none() -> None:
    rng = random.Random(1)
    assert all(kit.FIRST_DAY <= kit.random_day(rng) <= kit.LAST_DAY for _ in range(50))
    assert kit.today_before(rng, kit.FIRST_DAY) is None  # nothing before the first day
    day = dt.date(2026, 6, 10)
    for _ in range(50):
        today = kit.today_before(rng, day, 5)
        assert today is not None and day - dt.timedelta(days=5) <= today < day
    assert kit.today_before(rng, day, 0, same_day=True) == day


def test_a_tie_or_nothing_has_no_best() -> None:
    rows = [{"id": 1, "price": 5}, {"id": 2, "price": 3}, {"id": 3, "price": 9}]
    assert kit.unique_best(rows, "price")["id"] == 2
    assert kit.unique_best(rows, "price", largest=True)["id"] == 3
    assert kit.unique_best(rows, lambda r: -r["id"])["id"] == 3
    assert kit.unique_best([*rows, {"id": 4, "price": 3}], "price") is None
    assert kit.unique_best([], "price") is None
    assert kit.pick(random.Random(0), []) is None


def test_phrase_returns_the_index_and_draws_like_choice() -> None:
    templates = ("a {x}", "b {x}", "c {x}")
    index, text = kit.phrase(random.Random(3), templates, x="y")
    assert text == templates[index].format(x="y")
    assert templates[index] == random.Random(3).choice(templates)


@pytest.mark.parametrize(("count", "text"), [(1, "1 ticket"), (2, "2 tickets")])
def test_plural(count: int, text: str) -> None:
    assert kit.plural(count, "ticket") == text


def test_wording_helpers() -> None:
    assert kit.names_list(["A"]) == "A" and kit.names_list(["A", "B", "C"]) == "A, B and C"
    assert kit.with_article("editor") == "an editor" and kit.with_article("viewer") == "a viewer"
    assert kit.money(412000) == "$412,000"
    assert [kit.clock("14:30", s) for s in (0, 1, 2)] == ["14:30", "2:30pm", "2:30 PM"]
    assert kit.clock("09:00") == "9am"


def test_check_builders_keep_the_labels_they_are_given() -> None:
    default = kit.impossible_checks("book_flight")
    assert [c.label for c in default] == ["nothing changed", "book_flight not called", "reply says it cannot be done"]
    short = kit.impossible_checks(["vote", "report_post"], reply_label=kit.SAYS_IT_CANNOT,
                                  attempt_label="{tool} not attempted", unchanged_label="no app changed")
    assert isinstance(short[0], DiffOnly) and short[0].label == "no app changed"
    assert [c.name for c in short if isinstance(c, ToolNotCalled)] == ["vote", "report_post"]
    assert short[-1] == AnswerContains(values=["cannot"], weight=1.0, label="says it cannot")
    assert [c.label for c in kit.lookup_checks(["x", "y"])] == ["answer mentions x", "answer mentions y", "nothing changed"]
    assert [c.weight for c in kit.lookup_checks(["x", "y"], per_fact=False)] == [2.0, 1.0]


def test_the_seed_reader_runs_tools_and_next_id_predicts_the_new_row() -> None:
    world = APP.world()
    env = kit.env_vars("ana", "Ana", dt.date(2026, 6, 1))
    notes = kit.SeedReader(APP, world, env)(APP.tool("list_my_notes"))
    assert notes and all(isinstance(n["id"], int) for n in notes)
    assert kit.next_id(world, "notes") == 7 and kit.next_id(world, "notes", 2) == 8
    assert kit.call("add_note", title="x", due=None).arguments == {"title": "x"}


def test_where_adds_only_the_filters_given_and_keeps_parameters_in_step() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE homes (id INTEGER PRIMARY KEY, city TEXT, beds INTEGER, price INTEGER)")
    db.executemany("INSERT INTO homes(city, beds, price) VALUES (?, ?, ?)",
                   [("Austin", 2, 300), ("Austin", 4, 500), ("Boston", 4, 900)])
    assert kit.Where().sql == "1=1" and kit.Where().params == []
    where = kit.Where("city=?", params=["Austin"]).when(None, "price<=?").when(3, "beds>=?")
    assert where.sql == "city=? AND beds>=?" and where.params == ["Austin", 3]
    where.add("price BETWEEN ? AND ?", 100, 600)
    found = db.execute(f"SELECT id FROM homes WHERE {where.sql} ORDER BY id", where.params).fetchall()
    assert found == [(2,)]


def test_module_texts_reads_the_json_beside_a_module_with_arrays_as_tuples(tmp_path: Path) -> None:
    (tmp_path / "texts").mkdir()
    texts = {"ASK": ["a {x}", "b {x}"], "BY_KIND": {"bug": [["Fix", 2]]}, "N": 3}
    (tmp_path / "texts" / "tasks_demo.json").write_text(json.dumps(texts), encoding="utf-8")
    loaded = kit.module_texts(str(tmp_path / "tasks_demo.py"))
    assert loaded == {"ASK": ("a {x}", "b {x}"), "BY_KIND": {"bug": (("Fix", 2),)}, "N": 3}
    assert list(loaded) == ["ASK", "BY_KIND", "N"]  # file order, so draws over keys stay the same
    with pytest.raises(FileNotFoundError):
        kit.module_texts(str(tmp_path / "tasks_other.py"))


def test_relative_day_phrases_mean_the_day_on_the_today_returned() -> None:
    rng = random.Random(5)
    day = dt.date(2026, 6, 19)
    kinds = ("tomorrow", "today", "in_days", "next_weekday", "this_weekday")
    seen = set()
    for _ in range(200):
        drawn = kit.relative_day(rng, day, kinds, max_in_days=10, this_lead=(0, 6))
        if drawn is not None:
            phrase, today = drawn
            assert resolve_date(phrase, today) == day and kit.FIRST_DAY <= today <= day
            seen.add(phrase.split()[0])
    assert seen == {"tomorrow", "today", "in", "next", "this"}
    assert kit.relative_day(rng, kit.FIRST_DAY, ("tomorrow",)) is None  # the day before is outside the window


def test_directory_member_needs_the_account_and_names_what_is_missing() -> None:
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    db.execute("CREATE TABLE users (username TEXT, name TEXT, has_mailbox INTEGER)")
    db.executemany("INSERT INTO users VALUES (?, ?, ?)", [("ana", "Ana", 1), ("bo", "Bo", 0)])

    def member(username: str) -> dict:
        ctx = ToolContext(db=db, env=EnvContext({"LOGGED_IN_USER": username}), app=APP)
        return kit.directory_member(ctx, "username, name", "has_mailbox", "mailbox")

    assert dict(member("ana")) == {"username": "ana", "name": "Ana", "has_mailbox": 1}
    with pytest.raises(ToolError, match="user 'bo' has no mailbox in this organisation"):
        member("bo")
    with pytest.raises(ToolError, match="the logged-in user 'cy' is not in the directory"):
        member("cy")


def test_row_check_builders_make_the_checks_a_write_task_is_graded_by() -> None:
    """The one-line builders, exported from the kit, give the same checks as spelled out in full."""
    where = {"id": 7}
    assert kit.has_row("files", where, "file kept", count=1) == RowExists(
        table="files", where=where, count=1, weight=1.0, label="file kept")
    assert kit.field_is("files", where, "name", "a.txt", "renamed", weight=2.0) == FieldEquals(
        table="files", where=where, field="name", value="a.txt", weight=2.0, label="renamed")
    only = kit.only("only the rename", [kit.updated("files", where, ["name"]), kit.inserted("activity", {"actor": "me"})])
    assert only == DiffOnly(expected=[ExpectedChange(table="files", op="update", where=where, fields=["name"]),
                                      ExpectedChange(table="activity", op="insert", where={"actor": "me"})],
                            weight=1.0, label="only the rename")
