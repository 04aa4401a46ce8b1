"""Tickets tools that find events and seats, and buy tickets."""

from __future__ import annotations

from typing import Any

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.tickets.rules import event_sections, find_events, next_seats, order_code
from toolgym.envs.apps.tickets.tool_common import (
    MAX_EVENTS,
    Category,
    current_user,
    event_view,
    find_city,
    find_event,
    today_iso,
)


@tool
def list_venues(ctx: ToolContext, city: str | None = None) -> list[dict[str, Any]]:
    """List the venues (all, or those of one city) with their kind, address and capacity.

    Args:
        city: Only venues in this city, e.g. 'Chicago'.
    """
    if city is None:
        return ctx.query("SELECT name AS venue, kind, city, state, address, capacity FROM venues ORDER BY city, name")
    return ctx.query("SELECT name AS venue, kind, city, state, address, capacity FROM venues WHERE city=? "
                     "ORDER BY name", (find_city(ctx, city),))


@tool
def search_events(
    ctx: ToolContext, city: str | None = None, category: Category | None = None, date: str | None = None,
    end_date: str | None = None, performer: str | None = None,
) -> dict:
    """Find events, soonest first, with their cheapest available ticket price and seats left.

    With no dates, only events from today on are listed; with `date` alone, only that day; with
    `date` and `end_date`, every day from one to the other.

    Args:
        city: City of the venue, e.g. 'Austin'.
        category: One of 'concert', 'sports', 'theater', 'comedy', 'family'.
        date: A day (YYYY-MM-DD, 'today', 'tomorrow', 'Saturday', 'next Friday'), or the first day of a range.
        end_date: Last day of a date range (inclusive).
        performer: Part of a performer's, team's or show's name, e.g. 'Mara Quinn'.
    """
    today = today_iso(ctx)
    place = find_city(ctx, city) if city is not None else None
    start = kit.date_arg(ctx, "date", date) if date is not None else None
    end = kit.date_arg(ctx, "end_date", end_date) if end_date is not None else None
    if start is not None and end is not None and end < start:
        raise ToolError(f"argument 'end_date' ({end}) is before 'date' ({start})")
    if start is None:
        date_from, date_to = today, end
    else:
        date_from, date_to = start, end if end is not None else start
    if performer is not None and not performer.strip():
        raise ToolError("argument 'performer' is empty; give part of a name or leave it out")
    rows = find_events(ctx, city=place, category=category, date_from=date_from, date_to=date_to, performer=performer)
    result: dict[str, Any] = {
        "today": today, "from": date_from, "to": date_to or "any later date",
        "events": [event_view(ctx, r) for r in rows[:MAX_EVENTS]], "total_found": len(rows),
    }
    if len(rows) > MAX_EVENTS:
        result["note"] = f"showing the first {MAX_EVENTS}; narrow the search with a city, category or dates"
    if not rows:
        result["note"] = "no events match these filters"
    return result


@tool
def get_event_details(ctx: ToolContext, event_id: int) -> dict:
    """Show one event: performer, venue and address, date and time, status, price range, ticket limit.

    Args:
        event_id: The event_id from search_events.
    """
    row = find_event(ctx, event_id)
    prices = ctx.one("SELECT MIN(price) AS lo, MAX(price) AS hi, COUNT(*) AS n FROM sections WHERE event_id=?",
                     (event_id,))
    assert prices is not None
    today = today_iso(ctx)
    return {
        **event_view(ctx, row), "genre": row["genre"], "venue_kind": row["venue_kind"], "address": row["address"],
        "venue_capacity": row["venue_capacity"], "max_per_order": row["max_per_order"],
        "price_range": {"min": prices["lo"], "max": prices["hi"]}, "sections": prices["n"],
        "can_buy": row["status"] == "on_sale" and row["date"] >= today,
    }


@tool
def get_seat_map(ctx: ToolContext, event_id: int) -> dict:
    """Show an event's sections, cheapest first: price tier, price per ticket, rows, seats available.

    Args:
        event_id: The event_id from search_events.
    """
    row = find_event(ctx, event_id)
    sections = [
        {"section": s["name"], "price_tier": s["price_tier"], "price": s["price"], "rows": f"1-{s['row_count']}",
         "seats_per_row": s["seats_per_row"], "seats_available": s["seats_available"]}
        for s in event_sections(ctx, event_id)
    ]
    result = {k: row[k] for k in ("event_id", "title", "date", "start_time", "venue", "city", "status",
                                  "max_per_order")}
    if row["date"] < today_iso(ctx):
        result["past"] = True
    result["sections"] = sections
    return result


@tool
def buy_tickets(
    ctx: ToolContext, event_id: int, section: str, quantity: int, payment_method_id: int | None = None
) -> dict:
    """Buy tickets in one section of an event for the logged-in user; returns the order code and seats.

    Args:
        event_id: The event_id from search_events.
        section: Section name exactly as get_seat_map shows it, e.g. 'Orchestra'.
        quantity: Number of tickets (at least 1, at most the event's max_per_order).
        payment_method_id: One of your payment methods; default: your default payment method.
    """
    me = current_user(ctx)
    if quantity < 1:
        raise ToolError(f"argument 'quantity' must be at least 1; got {quantity}")
    event = find_event(ctx, event_id)
    today = today_iso(ctx)
    label = f"{event['title']} on {event['date']}"
    if event["date"] < today:
        raise ToolError(f"{label} is in the past (today is {today}); only upcoming events can be bought")
    if event["status"] == "cancelled":
        raise ToolError(f"{label} is cancelled; no tickets are sold for it")
    if event["status"] == "sold_out":
        raise ToolError(f"{label} is sold out")
    if quantity > event["max_per_order"]:
        raise ToolError(f"argument 'quantity': at most {event['max_per_order']} tickets per order for {label}; "
                        f"got {quantity}")
    wanted = " ".join(section.split())
    seat_section = ctx.one("SELECT * FROM sections WHERE event_id=? AND lower(name)=lower(?)", (event_id, wanted))
    if seat_section is None:
        names = ", ".join(s["name"] for s in event_sections(ctx, event_id))
        raise ToolError(f"argument 'section': {label} has no section {section!r}; its sections: {names}")
    if seat_section["seats_available"] < quantity:
        left = seat_section["seats_available"]
        state = "is sold out" if left == 0 else f"has only {left} seat(s) left"
        raise ToolError(f"section {seat_section['name']} of {label} {state}; {quantity} requested")
    card = kit.payment_method(
        ctx, ("user_id", me["id"]), payment_method_id,
        no_default="you have no default payment method; name a payment_method_id (see list_my_ticket_payment_methods)",
        not_found="no payment method {id} belongs to you; see list_my_ticket_payment_methods")
    rowid = kit.next_id(ctx, "orders")
    code = order_code(rowid)
    total = seat_section["price"] * quantity
    ctx.db.execute(
        "INSERT INTO orders(id, code, user_id, event_id, section_id, quantity, unit_price, total_price, "
        "payment_method_id, status, ordered_on) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'confirmed', ?)",
        (rowid, code, me["id"], event_id, seat_section["id"], quantity, seat_section["price"], total, card["id"], today),
    )
    seats = next_seats(seat_section, quantity)
    ctx.db.executemany(
        "INSERT INTO tickets(order_id, section_id, row_number, seat_number, holder_id, status) "
        "VALUES (?, ?, ?, ?, ?, 'valid')", [(rowid, seat_section["id"], r, s, me["id"]) for r, s in seats])
    ctx.db.execute("UPDATE sections SET seats_available = seats_available - ? WHERE id=?",
                   (quantity, seat_section["id"]))
    left = ctx.one("SELECT SUM(seats_available) AS n FROM sections WHERE event_id=?", (event_id,))
    if left is not None and left["n"] == 0:
        ctx.db.execute("UPDATE events SET status='sold_out' WHERE id=?", (event_id,))
    return {
        "order_code": code, "status": "confirmed", "event_id": event_id, "title": event["title"],
        "date": event["date"], "start_time": event["start_time"], "venue": event["venue"],
        "section": seat_section["name"], "quantity": quantity, "unit_price": seat_section["price"],
        "total_price": total, "seats": [f"row {r} seat {s}" for r, s in seats],
        "paid_with": f"{card['kind']} ending {card['last4']}",
    }
