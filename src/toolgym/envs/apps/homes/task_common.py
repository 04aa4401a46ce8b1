"""Helpers the homes task generators share: context, entity picks, wording and check builders.

Generators read the seed through `World` with ORDER BY in every query and draw only from the `rng`
they are given, so the same seed yields the same tasks. Choices a task asks for (cheapest,
largest, best value) use the same rules as the tools, and a draw whose answer would be ambiguous
(a tie) or that an existing row would block is rejected rather than guessed.
"""

from __future__ import annotations

import random
from typing import Any

from toolgym.envs import World, kit
from toolgym.envs.apps.homes.rules import TOUR_SLOTS, can_tour, price_per_sqft
from toolgym.schema import Check, ExpectedChange, RowExists, ToolCall

TYPE_WORDS = {"house": "house", "condo": "condo", "townhouse": "townhouse", "multi_family": "multi-family home"}
TYPE_PLURALS = {"house": "houses", "condo": "condos", "townhouse": "townhouses", "multi_family": "multi-family homes"}


def active_users(world: World) -> list[dict[str, Any]]:
    """Users with data in this app: saved homes, searches, tours or offers."""
    return world.query(
        "SELECT u.id, u.username, u.name FROM users u WHERE "
        "EXISTS (SELECT 1 FROM saved_homes s WHERE s.user_id = u.id) OR "
        "EXISTS (SELECT 1 FROM saved_searches q WHERE q.user_id = u.id) OR "
        "EXISTS (SELECT 1 FROM tours t WHERE t.user_id = u.id) OR "
        "EXISTS (SELECT 1 FROM offers o WHERE o.buyer_id = u.id) ORDER BY u.id")


def listings(world: World, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Listings with their city name and price per sqft (as the tools compute it), by id."""
    rows = world.query(
        "SELECT l.*, c.name AS city FROM listings l JOIN cities c ON c.id = l.city_id "
        f"WHERE {where} ORDER BY l.id", params)
    return [{**r, "price_per_sqft": price_per_sqft(r["price"], r["sqft"])} for r in rows]


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
        user = rng.choice(users)
        if can_tour(world, user["id"], listing_id, date, slot, today):
            return user
    return None


def pick_slot(rng: random.Random) -> str:
    return rng.choice(list(TOUR_SLOTS))


def listing_lookup(listing: dict[str, Any]) -> ToolCall:
    """The search a careful agent makes to find a listing named by its address."""
    status = None if listing["status"] == "active" else "any"
    return kit.call("search_listings", city=listing["city"], address=listing["address"], status=status)


# ---------------------------------------------------------------- checks


def tour_checks(user_id: int, listing_id: int, date: str, slot: str, weight: float = 3.0) -> tuple[Check, ExpectedChange]:
    return (
        RowExists(table="tours", where={"user_id": user_id, "listing_id": listing_id, "date": date, "time": slot,
                                        "status": "scheduled"}, count=1, weight=weight,
                  label=f"tour of listing {listing_id} on {date} at {slot}"),
        ExpectedChange(table="tours", op="insert", where={"user_id": user_id, "listing_id": listing_id}),
    )


def tour_booked(user_id: int, listing_id: int, date: str, slot: str, named: list[str], label: str) -> list[Check]:
    """The checks of a family that books one tour: the tour row, nothing else changed, the answer names `named`."""
    check, expected = tour_checks(user_id, listing_id, date, slot)
    return [check, kit.diff_only([expected]), kit.answer_has(named, label=label)]


def tour_booking_calls(listing_id: int, date: str, slot: str) -> list[ToolCall]:
    """The gold calls that book a tour: the free slots of the day (`date` as the user says it), then the tour."""
    return [kit.call("list_tour_slots", listing_id=listing_id, date=date),
            kit.call("schedule_tour", listing_id=listing_id, date=date, time=slot)]


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
