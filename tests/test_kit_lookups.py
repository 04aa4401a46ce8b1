"""kit.lookups.row_by_id: the row an id names, or an error a model can act on."""

from __future__ import annotations

import sqlite3

import pytest

from toolgym.envs import ToolContext, ToolError
from toolgym.envs.context import EnvContext
from toolgym.envs.examples.toy import APP
from toolgym.envs.kit.lookups import row_by_id


def _ctx() -> ToolContext:
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    db.execute("CREATE TABLE hotels (id INTEGER PRIMARY KEY, name TEXT)")
    db.execute("INSERT INTO hotels VALUES (3, 'Harbor Inn')")
    return ToolContext(db=db, env=EnvContext({}), app=APP)


def test_finds_the_row_of_an_id() -> None:
    assert dict(row_by_id(_ctx(), "SELECT * FROM hotels WHERE id=?", "hotel_id", 3, "hotel")) == {
        "id": 3, "name": "Harbor Inn"}


def test_a_missing_id_names_the_argument_and_where_to_look() -> None:
    with pytest.raises(ToolError, match=r"^argument 'hotel_id': no hotel with id 9; use search_hotels$"):
        row_by_id(_ctx(), "SELECT * FROM hotels WHERE id=?", "hotel_id", 9, "hotel", "use search_hotels")
    with pytest.raises(ToolError, match=r"^argument 'hotel_id': no hotel with id 9$"):
        row_by_id(_ctx(), "SELECT * FROM hotels WHERE id=?", "hotel_id", 9, "hotel")
