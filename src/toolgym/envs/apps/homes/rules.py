"""Homes rules shared by the seed, the tools and the task generators, so all three agree exactly.

Anything with a `query(sql, params)` method works as `source`: a ToolContext (episode state) or a
World (the seed, read-only). A tour is "upcoming" on or after today; it can be scheduled or
cancelled only for a later day.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

HOME_TYPES = ("house", "condo", "townhouse", "multi_family")
TOUR_SLOTS = tuple(f"{hour:02d}:00" for hour in range(9, 18))  # on the hour, 09:00-17:00
MAX_TOUR_DAYS_AHEAD = 60
MIN_OFFER_PERCENT = 90

_TIME = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?$")


class Source(Protocol):
    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]: ...


def min_offer(price: int) -> int:
    """The lowest offer a listing accepts: MIN_OFFER_PERCENT of the asking price, rounded up to a dollar."""
    return -(-price * MIN_OFFER_PERCENT // 100)


def price_per_sqft(price: int, sqft: int) -> int:
    """Whole dollars per square foot, halves rounded up."""
    return (2 * price + sqft) // (2 * sqft)


def parse_time(text: str) -> str | None:
    """'14:00', '9:00', '2 pm', '10am', '12 p.m.' -> 'HH:MM' (24-hour); None when it is not a time."""
    match = _TIME.match(" ".join(text.strip().lower().split()))
    if match is None:
        return None
    hour, minute, half = int(match.group(1)), int(match.group(2) or 0), match.group(3)
    if half is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half.startswith("p") else 0)
    if hour > 23 or minute > 59:
        return None
    return f"{hour:02d}:{minute:02d}"


def spoken_time(slot: str) -> str:
    """'14:00' -> '2 pm', '09:00' -> '9 am', '12:00' -> '12 pm': how people say tour times."""
    hour = int(slot[:2])
    return f"{hour % 12 or 12} {'pm' if hour >= 12 else 'am'}"


def taken_slots(source: Source, listing_id: int, date: str) -> list[str]:
    rows = source.query(
        "SELECT time FROM tours WHERE listing_id=? AND date=? AND status='scheduled' ORDER BY time", (listing_id, date))
    return [r["time"] for r in rows]


def free_slots(source: Source, listing_id: int, date: str) -> list[str]:
    taken = set(taken_slots(source, listing_id, date))
    return [slot for slot in TOUR_SLOTS if slot not in taken]


def busy_times(source: Source, user_id: int, date: str) -> list[str]:
    """Times at which the user already has a scheduled tour (of any home) that day."""
    rows = source.query(
        "SELECT time FROM tours WHERE user_id=? AND date=? AND status='scheduled' ORDER BY time", (user_id, date))
    return [r["time"] for r in rows]


def upcoming_tour_of(source: Source, user_id: int, listing_id: int, today: str) -> dict[str, Any] | None:
    """The user's scheduled tour of this listing today or later, if any (one per home is allowed)."""
    rows = source.query(
        "SELECT * FROM tours WHERE user_id=? AND listing_id=? AND status='scheduled' AND date>=? ORDER BY date, id",
        (user_id, listing_id, today))
    return rows[0] if rows else None


def open_offer(source: Source, user_id: int, listing_id: int) -> dict[str, Any] | None:
    rows = source.query(
        "SELECT * FROM offers WHERE buyer_id=? AND listing_id=? AND status='open' ORDER BY id", (user_id, listing_id))
    return rows[0] if rows else None


def can_tour(source: Source, user_id: int, listing_id: int, date: str, time: str, today: str) -> bool:
    """Every tour rule except the listing's status and the date window: free slot, free user, no second tour."""
    return (time in free_slots(source, listing_id, date) and time not in busy_times(source, user_id, date)
            and upcoming_tour_of(source, user_id, listing_id, today) is None)
