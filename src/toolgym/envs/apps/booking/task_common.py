"""Helpers the booking task generators share: context, entity picks, fare choices and check builders.

Generators read the seed through `World` with ORDER BY in every query and draw only from the `rng`
they are given, so the same seed yields the same tasks. Choices a task asks for (cheapest, earliest,
best-rated) are computed here with the same rules the tools apply, and a draw whose answer would
be ambiguous (a tie) is rejected rather than guessed.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import World
from toolgym.envs.app import answer_has as answer_has  # re-exported: the check builders apps share
from toolgym.envs.app import diff_only as diff_only
from toolgym.envs.app import impossible_checks as impossible_checks
from toolgym.envs.app import lookup_checks as lookup_checks
from toolgym.envs.apps.booking.rules import confirmation_code
from toolgym.schema import (
    Check,
    ExpectedChange,
    FieldEquals,
    RowExists,
    ToolCall,
)

FIRST_DAY = dt.date(2026, 4, 1)  # range of CURRENT_DATE in tasks
LAST_DAY = dt.date(2026, 8, 31)


def iso(day: dt.date) -> str:
    return day.isoformat()


def day_of(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def human_date(text: str) -> str:
    """'2026-05-03' -> 'May 3, 2026': some prompts say dates the way people do."""
    day = day_of(text)
    return f"{day.strftime('%B')} {day.day}, {day.year}"


def pick_today(rng: random.Random, before: dt.date, lead_days: int = 45) -> dt.date | None:
    """A CURRENT_DATE in the task range, 1..lead_days days before `before`; None if there is none."""
    low = max(FIRST_DAY, before - dt.timedelta(days=lead_days))
    high = min(LAST_DAY, before - dt.timedelta(days=1))
    if low > high:
        return None
    return low + dt.timedelta(days=rng.randint(0, (high - low).days))


def active_users(world: World) -> list[dict[str, Any]]:
    """Users with data in this app: each has a valid default payment method and bookings."""
    return world.query(
        "SELECT u.id, u.username, u.name FROM users u JOIN payment_methods p ON p.user_id = u.id "
        "AND p.is_default = 1 WHERE EXISTS (SELECT 1 FROM flight_bookings b WHERE b.user_id = u.id) "
        "OR EXISTS (SELECT 1 FROM hotel_reservations r WHERE r.user_id = u.id) ORDER BY u.id"
    )


def user_by_id(world: World, user_id: int) -> dict[str, Any]:
    row = world.one("SELECT id, username, name FROM users WHERE id=?", (user_id,))
    assert row is not None, f"no user {user_id}"
    return row


def env_for(user: dict[str, Any], today: dt.date) -> dict[str, str]:
    return {"CURRENT_DATE": iso(today), "LOGGED_IN_USER": user["username"], "LOGGED_IN_NAME": user["name"]}


def city_names(world: World) -> dict[str, str]:
    """Airport code -> city name."""
    return {r["airport_code"]: r["name"] for r in world.query("SELECT name, airport_code FROM cities ORDER BY id")}


def route_days(world: World, min_flights: int = 2) -> list[dict[str, Any]]:
    """(origin, destination, date) groups with at least `min_flights` flights."""
    return world.query(
        "SELECT origin, destination, date, COUNT(*) AS n FROM flights GROUP BY origin, destination, date "
        "HAVING COUNT(*) >= ? ORDER BY origin, destination, date", (min_flights,))


def flights_on(world: World, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
    return world.query(
        "SELECT * FROM flights WHERE origin=? AND destination=? AND date=? ORDER BY depart_time, id",
        (origin, destination, date))


def unique_best(rows: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The row with the smallest `key`, or None when empty or tied (the task would be ambiguous)."""
    if not rows:
        return None
    ordered = sorted(rows, key=lambda r: (r[key], r["id"]))
    if len(ordered) > 1 and ordered[0][key] == ordered[1][key]:
        return None
    return ordered[0]


def next_rowid(world: World, table: str, offset: int = 1) -> int:
    return int(world.one(f"SELECT COALESCE(MAX(id), 0) AS n FROM {table}")["n"]) + offset  # type: ignore[index]


def next_code(world: World, table: str, offset: int = 1) -> str:
    """The confirmation code the `offset`-th new row of `table` will get in a fresh episode."""
    return confirmation_code("F" if table == "flight_bookings" else "H", next_rowid(world, table, offset))


def default_card(world: World, user_id: int) -> int:
    row = world.one("SELECT id FROM payment_methods WHERE user_id=? AND is_default=1 ORDER BY id LIMIT 1", (user_id,))
    assert row is not None, f"user {user_id} has no default payment method"
    return int(row["id"])


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


# ---------------------------------------------------------------- checks


def flight_booking_checks(
    user_id: int, flight: dict[str, Any], passengers: int, refundable: bool, weight: float = 3.0
) -> tuple[list[Check], list[ExpectedChange]]:
    """Row + seat checks of one new flight booking, and the diff entries it may cause."""
    checks: list[Check] = [
        RowExists(table="flight_bookings", where={
            "user_id": user_id, "flight_id": flight["id"], "passengers": passengers,
            "refundable": int(refundable), "status": "confirmed"}, count=1, weight=weight,
            label=f"booked {flight['flight_number']} on {flight['date']} for {plural(passengers, 'passenger')}"),
        FieldEquals(table="flights", where={"id": flight["id"]}, field="seats_left",
                    value=flight["seats_left"] - passengers, weight=1.0, label="seats taken from the flight"),
    ]
    expected = [
        ExpectedChange(table="flight_bookings", op="insert", where={"user_id": user_id, "flight_id": flight["id"]}),
        ExpectedChange(table="flights", op="update", where={"id": flight["id"]}, fields=["seats_left"]),
    ]
    return checks, expected


def hotel_booking_checks(
    user_id: int, room: dict[str, Any], check_in: str, check_out: str, guests: int, refundable: bool,
    weight: float = 3.0,
) -> tuple[list[Check], list[ExpectedChange]]:
    """Row check of one new hotel reservation, and the diff entry it may cause."""
    checks: list[Check] = [
        RowExists(table="hotel_reservations", where={
            "user_id": user_id, "hotel_id": room["hotel_id"], "room_type_id": room["id"], "check_in": check_in,
            "check_out": check_out, "guests": guests, "refundable": int(refundable), "status": "confirmed"},
            count=1, weight=weight, label=f"reserved {room['name']} at hotel {room['hotel_id']} {check_in}..{check_out}"),
    ]
    expected = [ExpectedChange(table="hotel_reservations", op="insert",
                               where={"user_id": user_id, "hotel_id": room["hotel_id"]})]
    return checks, expected
