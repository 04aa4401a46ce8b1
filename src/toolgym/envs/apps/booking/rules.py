"""Booking rules shared by the seed, the tools and the task generators, so all three agree exactly.

Anything with a `query(sql, params)` method works as `source`: a ToolContext (episode state) or a
World (the seed, read-only). Confirmation codes are a bijection of the rowid, so they are unique,
look random and need no randomness.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Protocol

from toolgym.envs.kit.codes import scrambled_symbols

MAX_NIGHTS = 14
MAX_PASSENGERS = 9


class Source(Protocol):
    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]: ...


def confirmation_code(prefix: str, rowid: int) -> str:
    """'F' + 5 symbols for flight bookings, 'H' + 5 for hotel reservations, derived from the rowid.

    The scrambling is invertible on 25 bits, so distinct rowids never share a code.
    """
    start = rowid * 0x9E3779 + ord(prefix) * 0x1F123B
    return prefix + scrambled_symbols(start, 5, 0x5BD1E9, (13, 11))


def stay_nights(check_in: str, check_out: str) -> list[str]:
    """The nights of a stay as ISO dates: check_in up to (not including) check_out."""
    start, end = dt.date.fromisoformat(check_in), dt.date.fromisoformat(check_out)
    return [(start + dt.timedelta(days=i)).isoformat() for i in range((end - start).days)]


def free_rooms(source: Source, room_type_id: int, total_rooms: int, check_in: str, check_out: str) -> int:
    """Rooms of a type free on every night of the stay: total minus the busiest night's confirmed bookings."""
    rows = source.query(
        "SELECT check_in, check_out FROM hotel_reservations "
        "WHERE room_type_id=? AND status='confirmed' AND check_in < ? AND check_out > ? ORDER BY id",
        (room_type_id, check_out, check_in),
    )
    busiest = 0
    for night in stay_nights(check_in, check_out):
        busy = sum(1 for r in rows if r["check_in"] <= night < r["check_out"])
        busiest = max(busiest, busy)
    return max(0, total_rooms - busiest)


def available_room_types(
    source: Source, hotel_id: int, check_in: str, check_out: str, guests: int
) -> list[dict[str, Any]]:
    """Room types of a hotel that fit `guests` and have a free room every night, cheapest first."""
    rooms = source.query(
        "SELECT id, name, max_guests, price_per_night, refundable_price_per_night, total_rooms "
        "FROM room_types WHERE hotel_id=? AND max_guests>=? ORDER BY price_per_night, id",
        (hotel_id, guests),
    )
    out = []
    for room in rooms:
        free = free_rooms(source, room["id"], room["total_rooms"], check_in, check_out)
        if free > 0:
            out.append({**room, "free": free})
    return out


def flight_total(price: int, refundable_price: int, passengers: int, refundable: bool) -> int:
    return (refundable_price if refundable else price) * passengers


def stay_total(price_per_night: int, refundable_price_per_night: int, nights: int, refundable: bool) -> int:
    return (refundable_price_per_night if refundable else price_per_night) * nights
