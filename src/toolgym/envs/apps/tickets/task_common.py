"""Helpers the tickets task generators share: context, entity picks, wording and check builders.

Generators read the seed through `World` with ORDER BY in every query and draw only from the `rng`
they are given, so the same seed yields the same tasks. Choices a task asks for (cheapest, earliest,
best within a budget) go through the same rule functions the tools use, and a draw whose answer
would be ambiguous is rejected rather than guessed.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any, NamedTuple

from toolgym.envs import World, kit
from toolgym.envs.apps.tickets.rules import (
    EVENT_COLUMNS,
    EVENT_JOINS,
    event_sections,
    find_events,
    order_code,
    transfer_code,
)
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, updated
from toolgym.schema import Check, ExpectedChange

NOUN = {"concert": "show", "sports": "game", "theater": "performance", "comedy": "show", "family": "show"}
KIND = {"concert": "concert", "sports": "game", "theater": "theater show", "comedy": "comedy show",
        "family": "family show"}
KIND_PLURAL = {"concert": "concerts", "sports": "games", "theater": "theater shows", "comedy": "comedy shows",
               "family": "family shows"}
RELATIVE_KINDS = ("tomorrow", "today", "this_weekday", "next_weekday")  # one draw picks one
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def buyers(world: World) -> list[dict[str, Any]]:
    """Users with data in this app who can pay: a default payment method and at least one order."""
    return world.query(
        "SELECT u.id, u.username, u.name FROM users u JOIN payment_methods p ON p.user_id = u.id "
        "AND p.is_default = 1 WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id) ORDER BY u.id")


def other_users(world: World, not_ids: list[int]) -> list[dict[str, Any]]:
    """Possible ticket recipients: anyone in the population but the given users."""
    marks = ", ".join("?" for _ in not_ids)
    return world.query(f"SELECT id, username, name FROM users WHERE id NOT IN ({marks}) ORDER BY id", not_ids)


def pick_event(rng: random.Random, world: World, first: str, last: str, status: str) -> dict[str, Any]:
    """A random event of one status between two days, as search_events describes it."""
    ids = world.query("SELECT id FROM events WHERE date BETWEEN ? AND ? AND status=? ORDER BY id", (first, last, status))
    row = world.one(f"SELECT {EVENT_COLUMNS} {EVENT_JOINS} WHERE e.id=?", (rng.choice(ids)["id"],))
    assert row is not None
    return row


def sections_of(world: World, event_id: int) -> list[dict[str, Any]]:
    return event_sections(world, event_id)


def only_event(world: World, performer: str, date: str) -> bool:
    """True when searching this performer on this day finds exactly one event (prompts name both)."""
    return len(find_events(world, performer=performer, date_from=date, date_to=date)) == 1


def event_and_today(rng: random.Random, world: World) -> tuple[dict[str, Any], dt.date] | None:
    """An on-sale event that prompts can name by performer and date, and a CURRENT_DATE before it."""
    event = pick_event(rng, world, "2026-04-02", "2026-09-30", "on_sale")
    if not only_event(world, event["performer"], event["date"]):
        return None
    today = kit.today_before(rng, kit.day_of(event["date"]))
    return (event, today) if today is not None else None


def seats_left_after(world: World, event_id: int, taken: int) -> int:
    row = world.one("SELECT SUM(seats_available) AS n FROM sections WHERE event_id=?", (event_id,))
    assert row is not None
    return int(row["n"]) - taken


def next_order(world: World, offset: int = 1) -> tuple[int, str]:
    """Rowid and code of the `offset`-th order created in a fresh episode."""
    rowid = kit.next_id(world, "orders", offset)
    return rowid, order_code(rowid)


def next_transfer(world: World, offset: int = 1) -> tuple[int, str]:
    rowid = kit.next_id(world, "transfers", offset)
    return rowid, transfer_code(rowid)


def day_said(rng: random.Random, day: dt.date) -> tuple[str, str, dt.date] | None:
    """(prompt phrase, tool date argument, CURRENT_DATE) that make a relative phrase mean exactly `day`."""
    relative = kit.relative_day(rng, day, RELATIVE_KINDS)
    if relative is None:
        return None
    phrase, today = relative
    return phrase, phrase.removeprefix("this "), today


class DayGroup(NamedTuple):
    """The events of one kind in one city on one day, and a relative phrase a CURRENT_DATE gives that day."""

    city: str
    category: str
    date: str
    when: str  # the prompt's phrase ('tomorrow', 'this Saturday')
    argument: str  # the search_events date argument
    today: dt.date
    events: list[dict[str, Any]]


def day_group(rng: random.Random, world: World, most: int) -> DayGroup | None:
    """A (city, category, day) with at most `most` events, said relative to a CURRENT_DATE; None when the
    drawn phrase cannot mean that day."""
    group = rng.choice(world.query(
        "SELECT v.city, p.category, e.date FROM events e JOIN venues v ON v.id = e.venue_id "
        "JOIN performers p ON p.id = e.performer_id GROUP BY v.city, p.category, e.date "
        "HAVING COUNT(*) <= ? ORDER BY v.city, p.category, e.date", (most,)))
    relative = day_said(rng, kit.day_of(group["date"]))
    if relative is None:
        return None
    events = find_events(world, city=group["city"], category=group["category"], date_from=group["date"],
                         date_to=group["date"])
    return DayGroup(group["city"], group["category"], group["date"], *relative, events)


# ---------------------------------------------------------------- checks


def purchase_checks(
    user_id: int, event_id: int, section: dict[str, Any], quantity: int, order_id: int,
    payment_method_id: int | None = None, weight: float = 3.0,
) -> tuple[list[Check], list[ExpectedChange]]:
    """Order, seat counter and ticket checks of one new order, and the diff entries it may cause."""
    where: dict[str, Any] = {"user_id": user_id, "event_id": event_id, "section_id": section["id"],
                             "quantity": quantity, "status": "confirmed"}
    if payment_method_id is not None:
        where["payment_method_id"] = payment_method_id
    checks: list[Check] = [
        has_row("orders", where, f"bought {kit.plural(quantity, 'ticket')} in {section['name']} of event {event_id}", weight=weight, count=1),
        field_is("sections", {"id": section["id"]},
                "seats_available", section["seats_available"] - quantity, "seats taken from the section", weight=1.0),
        has_row("tickets", {"order_id": order_id, "section_id": section["id"], "holder_id": user_id},
                f"{kit.plural(quantity, 'ticket')} issued to the buyer", weight=1.0, count=quantity),
    ]
    expected = [
        inserted("orders", {"user_id": user_id, "event_id": event_id}),
        inserted("tickets", {"order_id": order_id}),
        updated("sections", {"id": section["id"]}, ["seats_available"]),
    ]
    return checks, expected


def transfer_checks(
    order_id: int, from_id: int, to_user: dict[str, Any], count: int, transfer_id: int, weight: float = 2.0,
) -> tuple[list[Check], list[ExpectedChange]]:
    """Checks of one new pending transfer and its tickets, and the diff entry of the transfer row."""
    checks: list[Check] = [
        has_row("transfers", {"order_id": order_id, "from_user_id": from_id, "to_user_id": to_user["id"], "ticket_count": count, "status": "pending"},
                f"{kit.plural(count, 'ticket')} sent to {to_user['username']}", weight=weight, count=1),
        has_row("tickets", {"order_id": order_id, "transfer_id": transfer_id, "status": "transfer_pending"},
                "the sent tickets are pending transfer", weight=1.0, count=count),
    ]
    expected = [inserted("transfers", {"order_id": order_id, "to_user_id": to_user["id"]})]
    return checks, expected
