"""kit.payments.listed_payment_methods: every app lists cards the same way, expired ones flagged."""

from __future__ import annotations

import sqlite3

from toolgym.envs import ToolContext
from toolgym.envs.context import EnvContext
from toolgym.envs.examples.toy import APP
from toolgym.envs.kit.payments import listed_payment_methods


def _ctx() -> ToolContext:
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    db.execute("CREATE TABLE payment_methods (id INTEGER PRIMARY KEY, user_id INTEGER, kind TEXT, last4 TEXT, "
               "expires TEXT, is_default INTEGER)")
    db.executemany("INSERT INTO payment_methods VALUES (?, ?, ?, ?, ?, ?)", [
        (1, 7, "visa", "1111", "2026-04", 0), (2, 7, "amex", "2222", "2027-01", 1), (3, 8, "visa", "3333", "2028-01", 1)])
    return ToolContext(db=db, env=EnvContext({"CURRENT_DATE": "2026-05-03"}), app=APP)


def test_lists_only_the_owners_cards_default_first_with_expiry_flags() -> None:
    assert listed_payment_methods(_ctx(), ("user_id", 7)) == [
        {"payment_method_id": 2, "kind": "amex", "last4": "2222", "expires": "2027-01", "is_default": True,
         "expired": False},
        {"payment_method_id": 1, "kind": "visa", "last4": "1111", "expires": "2026-04", "is_default": False,
         "expired": True},
    ]


def test_order_by_is_the_apps_choice() -> None:
    assert [r["payment_method_id"] for r in listed_payment_methods(_ctx(), ("user_id", 7), order_by="id")] == [1, 2]
