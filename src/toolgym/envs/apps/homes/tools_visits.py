"""Homes tools over tours and offers: open tour slots, scheduling and cancelling tours, making and
withdrawing offers."""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, tool
from toolgym.envs.apps.homes.rules import (
    MIN_OFFER_PERCENT,
    TOUR_SLOTS,
    busy_times,
    free_slots,
    min_offer,
    open_offer,
    parse_time,
    taken_slots,
    upcoming_tour_of,
)
from toolgym.envs.apps.homes.tool_common import (
    current_user,
    find_listing,
    my_offers,
    my_tours,
    offer_view,
    only_mine,
    require_active,
    tour_date,
    tour_view,
)


@tool
def list_tour_slots(ctx: ToolContext, listing_id: int, date: str) -> dict:
    """Show which tour times of an active listing are free on a day (tours start on the hour, 09:00-17:00).

    Args:
        listing_id: The listing to tour.
        date: The day: YYYY-MM-DD, 'tomorrow' or a weekday like 'next Friday'; after today.
    """
    listing = find_listing(ctx, listing_id)
    require_active(listing, "tours are available")
    day = tour_date(ctx, date)
    result: dict[str, Any] = {"listing_id": listing_id, "address": listing["address"], "date": day,
                              "free_slots": free_slots(ctx, listing_id, day),
                              "taken_slots": taken_slots(ctx, listing_id, day)}
    if ctx.env.user:
        me = current_user(ctx)
        result["your_other_tours_at"] = busy_times(ctx, me["id"], day)
    return result


@tool
def schedule_tour(ctx: ToolContext, listing_id: int, date: str, time: str) -> dict:
    """Book an in-person tour of an active listing for the logged-in user in a free slot.

    Args:
        listing_id: The listing to tour.
        date: The day: YYYY-MM-DD, 'tomorrow' or a weekday like 'next Friday'; after today, at most 60 days ahead.
        time: Start time on the hour from 09:00 to 17:00, e.g. '14:00' or '2 pm'.
    """
    me = current_user(ctx)
    listing = find_listing(ctx, listing_id)
    require_active(listing, "tours are available")
    day = tour_date(ctx, date)
    slot = parse_time(time)
    if slot is None or slot not in TOUR_SLOTS:
        raise ToolError(f"argument 'time': tours start on the hour from 09:00 to 17:00 (e.g. '14:00'); got {time!r}")
    today = ctx.env.today.isoformat()
    if slot in taken_slots(ctx, listing_id, day):
        free = ", ".join(free_slots(ctx, listing_id, day)) or "none"
        raise ToolError(f"the {slot} tour slot of {listing['address']} on {day} is taken; free that day: {free}")
    if slot in busy_times(ctx, me["id"], day):
        raise ToolError(f"you already have another tour on {day} at {slot}; pick a different time")
    existing = upcoming_tour_of(ctx, me["id"], listing_id, today)
    if existing is not None:
        raise ToolError(f"you already have a tour of {listing['address']} on {existing['date']} at {existing['time']} "
                        f"(tour_id {existing['id']}); cancel it first to pick another time")
    cur = ctx.db.execute(
        "INSERT INTO tours(listing_id, user_id, date, time, status, requested_on) VALUES (?, ?, ?, ?, 'scheduled', ?)",
        (listing_id, me["id"], day, slot, today))
    return {"tour_id": cur.lastrowid, "listing_id": listing_id, "address": listing["address"],
            "city": listing["city"], "date": day, "time": slot, "status": "scheduled"}


@tool
def list_my_tours(ctx: ToolContext, upcoming_only: bool = False) -> dict:
    """List the logged-in user's home tours, earliest first (status scheduled, completed or cancelled).

    Args:
        upcoming_only: True for only scheduled tours from today on.
    """
    me = current_user(ctx)
    today = ctx.env.today.isoformat()
    if upcoming_only:
        rows = my_tours(ctx, me["id"], "t.status='scheduled' AND t.date>=?", (today,))
    else:
        rows = my_tours(ctx, me["id"])
    return {"today": today, "tours": [tour_view(r, today) for r in rows][:30]}


@tool
def cancel_tour(ctx: ToolContext, tour_id: int) -> dict:
    """Cancel one of the logged-in user's scheduled tours; only tours on a later day than today can be cancelled.

    Args:
        tour_id: The tour_id from list_my_tours.
    """
    tour = only_mine(my_tours(ctx, current_user(ctx)["id"], "t.id=?", (tour_id,)), "tour", tour_id, "list_my_tours")
    today = ctx.env.today.isoformat()
    if tour["status"] == "cancelled":
        raise ToolError(f"tour {tour_id} of {tour['address']} is already cancelled")
    if tour["date"] <= today:
        raise ToolError(f"tour {tour_id} was on {tour['date']} (today is {today}); only later tours can be cancelled")
    ctx.db.execute("UPDATE tours SET status='cancelled', cancelled_on=? WHERE id=?", (today, tour_id))
    return {**tour_view(tour, today), "status": "cancelled"}


@tool
def make_offer(ctx: ToolContext, listing_id: int, amount: int) -> dict:
    """Make a purchase offer on an active listing for the logged-in user (at least 90% of the asking price).

    Args:
        listing_id: The listing to make an offer on.
        amount: Offer in whole US dollars, e.g. 415000.
    """
    me = current_user(ctx)
    listing = find_listing(ctx, listing_id)
    require_active(listing, "offers can be made")
    if amount < 1:
        raise ToolError(f"argument 'amount' must be a positive number of US dollars; got {amount}")
    floor = min_offer(listing["price"])
    if amount < floor:
        raise ToolError(f"argument 'amount': offers must be at least {MIN_OFFER_PERCENT}% of the asking price "
                        f"(${listing['price']}), so at least ${floor}; got ${amount}")
    existing = open_offer(ctx, me["id"], listing_id)
    if existing is not None:
        raise ToolError(f"you already have an open offer of ${existing['amount']} on {listing['address']} "
                        f"(offer_id {existing['id']}); withdraw it with withdraw_offer before making a new one")
    today = ctx.env.today.isoformat()
    cur = ctx.db.execute(
        "INSERT INTO offers(listing_id, buyer_id, amount, status, offered_on) VALUES (?, ?, ?, 'open', ?)",
        (listing_id, me["id"], amount, today))
    return {"offer_id": cur.lastrowid, "listing_id": listing_id, "address": listing["address"],
            "city": listing["city"], "asking_price": listing["price"], "amount": amount,
            "percent_of_asking": round(100 * amount / listing["price"], 1), "status": "open", "offered_on": today}


@tool
def withdraw_offer(ctx: ToolContext, offer_id: int) -> dict:
    """Withdraw one of the logged-in user's open offers.

    Args:
        offer_id: The offer_id from list_my_offers.
    """
    offer = only_mine(my_offers(ctx, current_user(ctx)["id"], "o.id=?", (offer_id,)), "offer", offer_id,
                      "list_my_offers")
    if offer["status"] != "open":
        raise ToolError(f"offer {offer_id} on {offer['address']} is {offer['status']}; only open offers can be withdrawn")
    ctx.db.execute("UPDATE offers SET status='withdrawn', closed_on=? WHERE id=?", (ctx.env.today.isoformat(), offer_id))
    return {**offer_view(offer), "status": "withdrawn"}


@tool
def list_my_offers(ctx: ToolContext, status: Literal["open", "accepted", "rejected", "withdrawn", "all"] = "all") -> list[dict]:
    """List the logged-in user's offers, newest first, with each listing's asking price and status.

    Args:
        status: 'open', 'accepted', 'rejected', 'withdrawn' or 'all' (default).
    """
    me = current_user(ctx)
    rows = my_offers(ctx, me["id"]) if status == "all" else my_offers(ctx, me["id"], "o.status=?", (status,))
    return [offer_view(r) for r in rows[:30]]
