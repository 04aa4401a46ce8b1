"""Helpers the homes task generators share: context, entity picks, wording and check builders.

Generators read the seed through `World` with ORDER BY in every query and draw only from the `rng`
they are given, so the same seed yields the same tasks. Choices a task asks for (cheapest,
largest, best value) use the same rules as the tools, and a draw whose answer would be ambiguous
(a tie) or that an existing row would block is rejected rather than guessed.
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
from toolgym.envs.apps.homes.rules import TOUR_SLOTS, can_tour, price_per_sqft
from toolgym.schema import Check, ExpectedChange, RowExists, ToolCall

FIRST_DAY = dt.date(2026, 4, 1)  # range of CURRENT_DATE in tasks
LAST_DAY = dt.date(2026, 8, 31)
TYPE_WORDS = {"house": "house", "condo": "condo", "townhouse": "townhouse", "multi_family": "multi-family home"}
TYPE_PLURALS = {"house": "houses", "condo": "condos", "townhouse": "townhouses", "multi_family": "multi-family homes"}


def iso(day: dt.date) -> str:
    return day.isoformat()


def day_of(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def human_date(text: str) -> str:
    """'2026-05-03' -> 'May 3': some prompts say dates the way people do."""
    day = day_of(text)
    return f"{day.strftime('%B')} {day.day}"


def random_today(rng: random.Random) -> dt.date:
    return FIRST_DAY + dt.timedelta(days=rng.randint(0, (LAST_DAY - FIRST_DAY).days))


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments={k: v for k, v in arguments.items() if v is not None})


def active_users(world: World) -> list[dict[str, Any]]:
    """Users with data in this app: saved homes, searches, tours or offers."""
    return world.query(
        "SELECT u.id, u.username, u.name FROM users u WHERE "
        "EXISTS (SELECT 1 FROM saved_homes s WHERE s.user_id = u.id) OR "
        "EXISTS (SELECT 1 FROM saved_searches q WHERE q.user_id = u.id) OR "
        "EXISTS (SELECT 1 FROM tours t WHERE t.user_id = u.id) OR "
        "EXISTS (SELECT 1 FROM offers o WHERE o.buyer_id = u.id) ORDER BY u.id")


def user_by_id(world: World, user_id: int) -> dict[str, Any]:
    row = world.one("SELECT id, username, name FROM users WHERE id=?", (user_id,))
    assert row is not None, f"no user {user_id}"
    return row


def env_for(user: dict[str, Any], today: dt.date) -> dict[str, str]:
    return {"CURRENT_DATE": iso(today), "LOGGED_IN_USER": user["username"], "LOGGED_IN_NAME": user["name"]}


def listings(world: World, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Listings with their city name and price per sqft (as the tools compute it), by id."""
    rows = world.query(
        "SELECT l.*, c.name AS city FROM listings l JOIN cities c ON c.id = l.city_id "
        f"WHERE {where} ORDER BY l.id", params)
    return [{**r, "price_per_sqft": price_per_sqft(r["price"], r["sqft"])} for r in rows]


def pick(rng: random.Random, rows: list[Any]) -> Any:
    return rows[rng.randrange(len(rows))]


def unique_best(rows: list[dict[str, Any]], key: str, largest: bool = False) -> dict[str, Any] | None:
    """The row with the smallest (or largest) `key`, or None when empty or tied (the task would be ambiguous)."""
    if not rows:
        return None
    ordered = sorted(rows, key=lambda r: (-r[key] if largest else r[key], r["id"]))
    if len(ordered) > 1 and ordered[0][key] == ordered[1][key]:
        return None
    return ordered[0]


def is_saved(world: World, user_id: int, listing_id: int) -> bool:
    return world.one("SELECT id FROM saved_homes WHERE user_id=? AND listing_id=?", (user_id, listing_id)) is not None


def has_open_offer(world: World, user_id: int, listing_id: int) -> bool:
    return world.one("SELECT id FROM offers WHERE buyer_id=? AND listing_id=? AND status='open'",
                     (user_id, listing_id)) is not None


def free_user_for_tour(
    rng: random.Random, world: World, listing_id: int, date: str, slot: str, today: str
) -> dict[str, Any] | None:
    """An active user who may book this slot (free at that time, no upcoming tour of the home)."""
    users = active_users(world)
    for _ in range(4):
        user = pick(rng, users)
        if can_tour(world, user["id"], listing_id, date, slot, today):
            return user
    return None


def pick_slot(rng: random.Random) -> str:
    return pick(rng, list(TOUR_SLOTS))


def listing_lookup(listing: dict[str, Any]) -> ToolCall:
    """The search a careful agent makes to find a listing named by its address."""
    status = None if listing["status"] == "active" else "any"
    return call("search_listings", city=listing["city"], address=listing["address"], status=status)


def dollars(amount: int) -> str:
    """How prompts say money: '$412,000'."""
    return f"${amount:,}"


# ---------------------------------------------------------------- checks


def tour_checks(user_id: int, listing_id: int, date: str, slot: str, weight: float = 3.0) -> tuple[Check, ExpectedChange]:
    return (
        RowExists(table="tours", where={"user_id": user_id, "listing_id": listing_id, "date": date, "time": slot,
                                        "status": "scheduled"}, count=1, weight=weight,
                  label=f"tour of listing {listing_id} on {date} at {slot}"),
        ExpectedChange(table="tours", op="insert", where={"user_id": user_id, "listing_id": listing_id}),
    )


def saved_checks(user_id: int, listing_id: int, weight: float = 3.0) -> tuple[Check, ExpectedChange]:
    return (
        RowExists(table="saved_homes", where={"user_id": user_id, "listing_id": listing_id}, count=1, weight=weight,
                  label=f"listing {listing_id} saved"),
        ExpectedChange(table="saved_homes", op="insert", where={"user_id": user_id, "listing_id": listing_id}),
    )


def offer_checks(user_id: int, listing_id: int, amount: int, weight: float = 3.0) -> tuple[Check, ExpectedChange]:
    return (
        RowExists(table="offers", where={"buyer_id": user_id, "listing_id": listing_id, "amount": amount,
                                         "status": "open"}, count=1, weight=weight,
                  label=f"open offer of {amount} on listing {listing_id}"),
        ExpectedChange(table="offers", op="insert", where={"buyer_id": user_id, "listing_id": listing_id}),
    )
