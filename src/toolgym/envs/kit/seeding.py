"""Seed-data helpers several apps share: rows by column name while seeding, the shared population as a
users table, and payment cards for the users who buy things."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from toolgym.envs.people import population

# The tables insert_population and insert_cards fill, for an app's SCHEMA to include as they are.
POPULATION_USERS_TABLE = """CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    phone TEXT NOT NULL,
    home_city TEXT NOT NULL
);
"""
CARDS_TABLE = """CREATE TABLE payment_methods (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    kind TEXT NOT NULL CHECK (kind IN ('visa', 'mastercard', 'amex', 'paypal')),
    last4 TEXT NOT NULL,
    expires TEXT NOT NULL,
    is_default INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1))
);
CREATE INDEX idx_payment_methods_user ON payment_methods(user_id);
"""

@contextmanager
def named_rows(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Rows by column name while seeding; the caller's row factory comes back afterwards."""
    previous = db.row_factory
    db.row_factory = sqlite3.Row
    try:
        yield db
    finally:
        db.row_factory = previous


def insert_population(db: sqlite3.Connection) -> list[int]:
    """Every shared person as a row of POPULATION_USERS_TABLE, with ids 1..N in population order."""
    ids = []
    for index, person in enumerate(population(), start=1):
        db.execute(
            "INSERT INTO users(id, username, name, email, phone, home_city) VALUES (?, ?, ?, ?, ?, ?)",
            (index, person.username, person.name, person.email, person.phone, person.city),
        )
        ids.append(index)
    return ids


def insert_cards(db: sqlite3.Connection, rng: random.Random, user_ids: list[int], second_card: float) -> dict[int, int]:
    """Rows of CARDS_TABLE: every user gets a valid default card; some (`second_card` of them) carry a second
    one, and some an expired one. Returns user id -> default payment method id."""
    default_card: dict[int, int] = {}
    kinds = ["visa", "mastercard", "amex", "paypal"]
    insert = "INSERT INTO payment_methods(user_id, kind, last4, expires, is_default) VALUES (?, ?, ?, ?, ?)"
    for user_id in user_ids:
        cur = db.execute(insert, (user_id, rng.choice(kinds), f"{rng.randint(0, 9999):04d}",
                                  f"{rng.randint(2027, 2031)}-{rng.randint(1, 12):02d}", 1))
        default_card[user_id] = int(cur.lastrowid or 0)
        if rng.random() < second_card:
            db.execute(insert, (user_id, rng.choice(kinds), f"{rng.randint(0, 9999):04d}",
                                f"{rng.randint(2027, 2030)}-{rng.randint(1, 12):02d}", 0))
        if rng.random() < 0.15:
            db.execute(insert, (user_id, rng.choice(kinds[:3]), f"{rng.randint(0, 9999):04d}",
                                f"2025-{rng.randint(1, 12):02d}", 0))
    return default_card
