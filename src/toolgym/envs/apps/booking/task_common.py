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

from toolgym.envs import World, kit
from toolgym.envs.apps.booking.rules import confirmation_code
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, updated
from toolgym.schema import Check, ExpectedChange


def active_users(world: World) -> list[dict[str, Any]]:
    """Users with data in this app: each has a valid default payment method and bookings."""
    return world.query(
        "SELECT u.id, u.username, u.name FROM users u JOIN payment_methods p ON p.user_id = u.id "
        "AND p.is_default = 1 WHERE EXISTS (SELECT 1 FROM flight_bookings b WHERE b.user_id = u.id) "
        "OR EXISTS (SELECT 1 FROM hotel_reservations r WHERE r.user_id = u.id) ORDER BY u.id"
    )


def city_names(world: World) -> dict[str, str]:
    """Airport code -> city name."""
    return {r["airport_code"]: r["name"] for r in world.query("SELECT name, airport_code FROM cities ORDER BY id")}


def route_days(world: World, min_flights: int = 2) -> list[dict[str, Any]]:
    """(origin, destination, date) groups with at least `min_flights` flights."""
    return world.query(
        "SELECT origin, destination, date, COUNT(*) AS n FROM flights GROUP BY origin, destination, date "
        "HAVING COUNT(*) >= ? ORDER BY origin, destination, date", (min_flights,))


def route_day_ahead(rng: random.Random, world: World) -> tuple[dict[str, Any], dt.date] | None:
    """A route and day with a choice of flights, and a CURRENT_DATE before that day (None when none fits)."""
    group = rng.choice(route_days(world))
    today = kit.today_before(rng, kit.day_of(group["date"]))
    return (group, today) if today is not None else None


def flights_on(world: World, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
    return world.query(
        "SELECT * FROM flights WHERE origin=? AND destination=? AND date=? ORDER BY depart_time, id",
        (origin, destination, date))


def next_code(world: World, table: str, offset: int = 1) -> str:
    """The confirmation code the `offset`-th new row of `table` will get in a fresh episode."""
    return confirmation_code("F" if table == "flight_bookings" else "H", kit.next_id(world, table, offset))


def default_card(world: World, user_id: int) -> int:
    row = world.one("SELECT id FROM payment_methods WHERE user_id=? AND is_default=1 ORDER BY id LIMIT 1", (user_id,))
    assert row is not None, f"user {user_id} has no default payment method"
    return int(row["id"])


# ---------------------------------------------------------------- checks


def flight_booking_checks(
    user_id: int, flight: dict[str, Any], passengers: int, refundable: bool, weight: float = 3.0
) -> tuple[list[Check], list[ExpectedChange]]:
    """Row + seat checks of one new flight booking, and the diff entries it may cause."""
    checks: list[Check] = [
        has_row("flight_bookings", {"user_id": user_id, "flight_id": flight["id"], "passengers": passengers, "refundable": int(refundable), "status": "confirmed"},
                f"booked {flight['flight_number']} on {flight['date']} for {kit.plural(passengers, 'passenger')}", weight=weight, count=1),
        field_is("flights", {"id": flight["id"]},
                "seats_left", flight["seats_left"] - passengers, "seats taken from the flight", weight=1.0),
    ]
    expected = [
        inserted("flight_bookings", {"user_id": user_id, "flight_id": flight["id"]}),
        updated("flights", {"id": flight["id"]}, ["seats_left"]),
    ]
    return checks, expected


def hotel_booking_checks(
    user_id: int, room: dict[str, Any], check_in: str, check_out: str, guests: int, refundable: bool,
    weight: float = 3.0,
) -> tuple[list[Check], list[ExpectedChange]]:
    """Row check of one new hotel reservation, and the diff entry it may cause."""
    checks: list[Check] = [
        has_row("hotel_reservations", {"user_id": user_id, "hotel_id": room["hotel_id"], "room_type_id": room["id"], "check_in": check_in, "check_out": check_out, "guests": guests, "refundable": int(refundable), "status": "confirmed"},
                f"reserved {room['name']} at hotel {room['hotel_id']} {check_in}..{check_out}", weight=weight, count=1),
    ]
    expected = [inserted("hotel_reservations", {"user_id": user_id, "hotel_id": room["hotel_id"]})]
    return checks, expected
