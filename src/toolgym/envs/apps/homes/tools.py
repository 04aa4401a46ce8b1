"""Tools of the homes app: search listings, look up agents, save homes and searches, tour, make offers.

Every rule a tour or offer must follow is checked here and broken rules come back as a ToolError
saying what was wrong and what is allowed. "My" means the LOGGED_IN_USER; dates go through the
task's CURRENT_DATE, so "tomorrow" and "next Friday" work and nothing reads the wall clock.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, tool
from toolgym.envs.apps.homes.rules import (
    MAX_TOUR_DAYS_AHEAD,
    MIN_OFFER_PERCENT,
    TOUR_SLOTS,
    busy_times,
    free_slots,
    min_offer,
    open_offer,
    parse_time,
    price_per_sqft,
    taken_slots,
    upcoming_tour_of,
)

MAX_RESULTS = 20
HomeType = Literal["house", "condo", "townhouse", "multi_family"]
SortKey = Literal["price", "price_desc", "newest", "sqft", "price_per_sqft"]

_LISTING_SQL = (
    "SELECT l.*, c.name AS city, c.state FROM listings l JOIN cities c ON c.id = l.city_id"
)


# ---------------------------------------------------------------- shared validation


def _me(ctx: ToolContext) -> dict[str, Any]:
    username = ctx.env.require_user()
    row = ctx.one("SELECT id, username, name FROM users WHERE username=?", (username,))
    if row is None:
        raise ToolError(f"the logged-in user {username!r} has no account in the homes app")
    return row


def _city(ctx: ToolContext, text: str) -> dict[str, Any]:
    """A city by name, case-insensitive; 'Austin, TX' works too."""
    wanted = " ".join(text.split(",")[0].split())
    row = ctx.one("SELECT id, name, state FROM cities WHERE lower(name)=lower(?)", (wanted,))
    if row is None:
        known = ", ".join(r["name"] for r in ctx.query("SELECT name FROM cities ORDER BY name"))
        raise ToolError(f"argument 'city': no listings in {text!r}; cities with listings: {known}")
    return row


def _listing(ctx: ToolContext, listing_id: int) -> dict[str, Any]:
    row = ctx.one(f"{_LISTING_SQL} WHERE l.id=?", (listing_id,))
    if row is None:
        raise ToolError(f"argument 'listing_id': no listing with id {listing_id}; use search_listings to find one")
    return row


def _date_arg(ctx: ToolContext, name: str, text: str) -> str:
    try:
        return ctx.env.date(text)
    except ToolError as exc:
        raise ToolError(f"argument '{name}': {exc}") from None


def _tour_date(ctx: ToolContext, text: str) -> str:
    """A tour day: after today and at most MAX_TOUR_DAYS_AHEAD days ahead."""
    day = _date_arg(ctx, "date", text)
    today = ctx.env.today
    if day <= today.isoformat():
        raise ToolError(f"argument 'date' ({day}) must be after today ({today.isoformat()}); tours are for later days")
    last = (today + dt.timedelta(days=MAX_TOUR_DAYS_AHEAD)).isoformat()
    if day > last:
        raise ToolError(f"argument 'date' ({day}) is too far ahead; tours can be booked up to {last}")
    return day


def _require_active(listing: dict[str, Any], action: str) -> None:
    if listing["status"] != "active":
        state = "under contract (pending)" if listing["status"] == "pending" else "sold"
        raise ToolError(f"{listing['address']} is {state}; {action} only for active listings")


def _number(value: float) -> int | float:
    """2.0 -> 2, 2.5 -> 2.5: half baths read naturally."""
    return int(value) if float(value).is_integer() else value


def _summary(row: dict[str, Any], with_city: bool = True) -> dict[str, Any]:
    """The fields of a listing that matter when comparing homes."""
    view: dict[str, Any] = {"listing_id": row["id"], "address": row["address"]}
    if with_city:
        view["city"] = row["city"]
    view.update(
        price=row["price"], beds=row["beds"], baths=_number(row["baths"]), sqft=row["sqft"],
        price_per_sqft=price_per_sqft(row["price"], row["sqft"]), home_type=row["home_type"], status=row["status"],
        listed_on=row["listed_on"],
    )
    if row["sold_price"] is not None:
        view["sold_price"] = row["sold_price"]
    return view


# ---------------------------------------------------------------- listings and agents


@tool
def search_listings(
    ctx: ToolContext, city: str, max_price: int | None = None, min_beds: int | None = None,
    home_type: HomeType | None = None, status: Literal["active", "pending", "sold", "any"] = "active",
    address: str | None = None, sort_by: SortKey = "price",
) -> dict:
    """Find homes in a city; by default only active (for sale) listings, cheapest first, up to 20.

    Args:
        city: City name, e.g. 'Austin' or 'Seattle'.
        max_price: Only listings asking at most this many US dollars.
        min_beds: Only listings with at least this many bedrooms.
        home_type: 'house', 'condo', 'townhouse' or 'multi_family'.
        status: 'active' (for sale, default), 'pending' (under contract), 'sold', or 'any'.
        address: Part of the street address to match, e.g. '4120 Maple'.
        sort_by: 'price' (lowest first), 'price_desc', 'newest' (latest listed first), 'sqft' (largest first)
            or 'price_per_sqft' (lowest first).
    """
    place = _city(ctx, city)
    if max_price is not None and max_price < 1:
        raise ToolError(f"argument 'max_price' must be a positive number of US dollars; got {max_price}")
    if min_beds is not None and not 0 <= min_beds <= 10:
        raise ToolError(f"argument 'min_beds' must be between 0 and 10; got {min_beds}")
    where, params = ["l.city_id=?"], [place["id"]]
    if max_price is not None:
        where.append("l.price<=?")
        params.append(max_price)
    if min_beds is not None:
        where.append("l.beds>=?")
        params.append(min_beds)
    if home_type is not None:
        where.append("l.home_type=?")
        params.append(home_type)
    if address is not None and address.strip():
        where.append("lower(l.address) LIKE '%' || lower(?) || '%'")
        params.append(" ".join(address.split(",")[0].split()))
    any_status = " AND ".join(where)
    if status != "any":
        where.append("l.status=?")
        params.append(status)
    order = {
        "price": "l.price, l.id", "price_desc": "l.price DESC, l.id", "newest": "l.listed_on DESC, l.id",
        "sqft": "l.sqft DESC, l.id", "price_per_sqft": "(2 * l.price + l.sqft) / (2 * l.sqft), l.id",  # = price_per_sqft()
    }[sort_by]
    found = ctx.query(
        "SELECT l.id, l.address, l.price, l.beds, l.baths, l.sqft, l.home_type, l.status, l.listed_on, l.sold_price, "
        f"COUNT(*) OVER () AS total FROM listings l WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?",
        [*params, MAX_RESULTS])
    rows = [_summary(r, with_city=False) for r in found]
    result: dict[str, Any] = {"city": f"{place['name']}, {place['state']}", "status": status, "sort_by": sort_by,
                              "total_matches": found[0]["total"] if found else 0, "listings": rows}
    if not rows and status != "any":
        others = ctx.one(f"SELECT COUNT(*) AS n FROM listings l WHERE {any_status}", params[: len(params) - 1])
        if others and others["n"]:
            result["note"] = f"{others['n']} listing(s) with other statuses match; pass status='any' to see them"
    if not rows and "note" not in result and address is not None and address.strip():
        result["note"] = (f"no address in {place['name']} contains {address!r}; try a shorter part, "
                          "e.g. the house number and street name without the suffix")
    return result


@tool
def get_listing(ctx: ToolContext, listing_id: int) -> dict:
    """Show one listing: price, size, price per sqft, HOA fee, year built, status, listing agent and price history.

    Args:
        listing_id: The listing_id from search_listings.
    """
    row = _listing(ctx, listing_id)
    agent = ctx.one("SELECT id, name, brokerage FROM agents WHERE id=?", (row["agent_id"],))
    assert agent is not None
    history = ctx.query("SELECT date, event, price FROM price_history WHERE listing_id=? ORDER BY date, id",
                        (listing_id,))
    result = {
        **_summary(row), "city": f"{row['city']}, {row['state']}", "zip": row["zip"],
        "year_built": row["year_built"], "hoa_fee_monthly": row["hoa_fee"], "description": row["description"],
        "listing_agent": {"agent_id": agent["id"], "name": agent["name"], "brokerage": agent["brokerage"]},
        "price_history": history,
    }
    if row["status"] == "active":
        result["days_on_market"] = (ctx.env.today - dt.date.fromisoformat(row["listed_on"])).days
    else:
        result["status_since"] = row["status_changed_on"]
    return result


@tool
def get_agent(ctx: ToolContext, agent_id: int) -> dict:
    """Show a real-estate agent: brokerage, rating, contact details and their active listings.

    Args:
        agent_id: The agent_id shown as listing_agent by get_listing.
    """
    agent = ctx.one("SELECT a.*, c.name AS city FROM agents a JOIN cities c ON c.id = a.city_id WHERE a.id=?",
                    (agent_id,))
    if agent is None:
        raise ToolError(f"argument 'agent_id': no agent with id {agent_id}; get_listing shows a listing's agent")
    listings = ctx.query(
        "SELECT id AS listing_id, address, price, beds, home_type FROM listings WHERE agent_id=? AND status='active' "
        "ORDER BY price, id", (agent_id,))
    sold = ctx.one("SELECT COUNT(*) AS n FROM listings WHERE agent_id=? AND status='sold'", (agent_id,))
    return {
        "agent_id": agent["id"], "name": agent["name"], "brokerage": agent["brokerage"], "city": agent["city"],
        "rating": agent["rating"], "rating_scale": "out of 5", "review_count": agent["review_count"],
        "years_experience": agent["years_experience"], "phone": agent["phone"], "email": agent["email"],
        "active_listings": listings[:10], "active_listing_count": len(listings),
        "recently_sold_count": sold["n"] if sold else 0,
    }


# ---------------------------------------------------------------- saved homes and searches


@tool
def save_home(ctx: ToolContext, listing_id: int) -> dict:
    """Add a listing to the logged-in user's saved homes (favorites).

    Args:
        listing_id: The listing to save.
    """
    me = _me(ctx)
    listing = _listing(ctx, listing_id)
    if ctx.one("SELECT id FROM saved_homes WHERE user_id=? AND listing_id=?", (me["id"], listing_id)):
        raise ToolError(f"{listing['address']} is already in your saved homes")
    ctx.db.execute("INSERT INTO saved_homes(user_id, listing_id, saved_on) VALUES (?, ?, ?)",
                   (me["id"], listing_id, ctx.env.today.isoformat()))
    count = ctx.one("SELECT COUNT(*) AS n FROM saved_homes WHERE user_id=?", (me["id"],))
    return {"saved": True, "listing_id": listing_id, "address": listing["address"], "city": listing["city"],
            "price": listing["price"], "status": listing["status"], "saved_homes_total": count["n"] if count else 0}


@tool
def unsave_home(ctx: ToolContext, listing_id: int) -> dict:
    """Remove a listing from the logged-in user's saved homes.

    Args:
        listing_id: A listing in your saved homes.
    """
    me = _me(ctx)
    listing = _listing(ctx, listing_id)
    saved = ctx.one("SELECT id FROM saved_homes WHERE user_id=? AND listing_id=?", (me["id"], listing_id))
    if saved is None:
        raise ToolError(f"argument 'listing_id': {listing['address']} is not in your saved homes; see list_saved_homes")
    ctx.db.execute("DELETE FROM saved_homes WHERE id=?", (saved["id"],))
    return {"removed": True, "listing_id": listing_id, "address": listing["address"]}


@tool
def list_saved_homes(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the logged-in user's saved homes with their current price and status, most recently saved first."""
    me = _me(ctx)
    rows = ctx.query(
        "SELECT l.*, c.name AS city, c.state, s.saved_on FROM saved_homes s JOIN listings l ON l.id = s.listing_id "
        "JOIN cities c ON c.id = l.city_id WHERE s.user_id=? ORDER BY s.saved_on DESC, s.id DESC", (me["id"],))
    return [{**_summary(r), "saved_on": r["saved_on"]} for r in rows[:30]]


def _search_matches(ctx: ToolContext, search: dict[str, Any]) -> int:
    row = ctx.one(
        "SELECT COUNT(*) AS n FROM listings WHERE city_id=? AND status='active' AND (? IS NULL OR price<=?) "
        "AND (? IS NULL OR beds>=?) AND (? IS NULL OR home_type=?)",
        (search["city_id"], search["max_price"], search["max_price"], search["min_beds"], search["min_beds"],
         search["home_type"], search["home_type"]))
    return row["n"] if row else 0


@tool
def create_saved_search(
    ctx: ToolContext, city: str, max_price: int | None = None, min_beds: int | None = None,
    home_type: HomeType | None = None, name: str | None = None,
) -> dict:
    """Save a search for the logged-in user so new matching listings can be followed; shows today's matches.

    Args:
        city: City name, e.g. 'Denver'.
        max_price: Highest asking price in US dollars; leave out for no limit.
        min_beds: Fewest bedrooms (1-8); leave out for any.
        home_type: 'house', 'condo', 'townhouse' or 'multi_family'; leave out for all types.
        name: Optional label for the search; a name is made from the filters if left out.
    """
    me = _me(ctx)
    place = _city(ctx, city)
    if max_price is not None and max_price < 10_000:
        raise ToolError(f"argument 'max_price' must be at least 10000 US dollars; got {max_price}")
    if min_beds is not None and not 1 <= min_beds <= 8:
        raise ToolError(f"argument 'min_beds' must be between 1 and 8; got {min_beds}")
    duplicate = ctx.one(
        "SELECT id FROM saved_searches WHERE user_id=? AND city_id=? AND max_price IS ? AND min_beds IS ? "
        "AND home_type IS ?", (me["id"], place["id"], max_price, min_beds, home_type))
    if duplicate is not None:
        raise ToolError(f"you already have this saved search (search_id {duplicate['id']}); see list_saved_searches")
    label = (name or "").strip()
    if not label:
        label = f"{place['name']} {home_type.replace('_', '-') + 's' if home_type else 'homes'}"
        label += f", {min_beds}+ beds" if min_beds else ""
        label += f", up to ${max_price}" if max_price else ""
    if len(label) > 80:
        raise ToolError(f"argument 'name' must be at most 80 characters; got {len(label)}")
    cur = ctx.db.execute(
        "INSERT INTO saved_searches(user_id, name, city_id, max_price, min_beds, home_type, created_on) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (me["id"], label, place["id"], max_price, min_beds, home_type, ctx.env.today.isoformat()))
    search = {"city_id": place["id"], "max_price": max_price, "min_beds": min_beds, "home_type": home_type}
    return {"search_id": cur.lastrowid, "name": label, "city": place["name"], "max_price": max_price,
            "min_beds": min_beds, "home_type": home_type, "active_matches": _search_matches(ctx, search)}


@tool
def list_saved_searches(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the logged-in user's saved searches with how many active listings match each today."""
    me = _me(ctx)
    rows = ctx.query(
        "SELECT s.*, c.name AS city FROM saved_searches s JOIN cities c ON c.id = s.city_id WHERE s.user_id=? "
        "ORDER BY s.created_on, s.id", (me["id"],))
    return [{"search_id": r["id"], "name": r["name"], "city": r["city"], "max_price": r["max_price"],
             "min_beds": r["min_beds"], "home_type": r["home_type"], "created_on": r["created_on"],
             "active_matches": _search_matches(ctx, r)} for r in rows]


@tool
def delete_saved_search(ctx: ToolContext, search_id: int) -> dict:
    """Delete one of the logged-in user's saved searches.

    Args:
        search_id: The search_id from list_saved_searches.
    """
    me = _me(ctx)
    row = ctx.one("SELECT id, name FROM saved_searches WHERE id=? AND user_id=?", (search_id, me["id"]))
    if row is None:
        raise ToolError(f"argument 'search_id': you have no saved search {search_id}; see list_saved_searches")
    ctx.db.execute("DELETE FROM saved_searches WHERE id=?", (search_id,))
    return {"deleted": True, "search_id": search_id, "name": row["name"]}


# ---------------------------------------------------------------- tours


@tool
def list_tour_slots(ctx: ToolContext, listing_id: int, date: str) -> dict:
    """Show which tour times of an active listing are free on a day (tours start on the hour, 09:00-17:00).

    Args:
        listing_id: The listing to tour.
        date: The day: YYYY-MM-DD, 'tomorrow' or a weekday like 'next Friday'; after today.
    """
    listing = _listing(ctx, listing_id)
    _require_active(listing, "tours are available")
    day = _tour_date(ctx, date)
    result: dict[str, Any] = {"listing_id": listing_id, "address": listing["address"], "date": day,
                              "free_slots": free_slots(ctx, listing_id, day),
                              "taken_slots": taken_slots(ctx, listing_id, day)}
    if ctx.env.user:
        me = _me(ctx)
        result["your_other_tours_at"] = busy_times(ctx, me["id"], day)
    return result


def _tour_view(row: dict[str, Any], today: str) -> dict[str, Any]:
    status = row["status"]
    if status == "scheduled" and row["date"] < today:
        status = "completed"
    return {"tour_id": row["id"], "listing_id": row["listing_id"], "address": row["address"], "city": row["city"],
            "date": row["date"], "time": row["time"], "status": status}


@tool
def schedule_tour(ctx: ToolContext, listing_id: int, date: str, time: str) -> dict:
    """Book an in-person tour of an active listing for the logged-in user in a free slot.

    Args:
        listing_id: The listing to tour.
        date: The day: YYYY-MM-DD, 'tomorrow' or a weekday like 'next Friday'; after today, at most 60 days ahead.
        time: Start time on the hour from 09:00 to 17:00, e.g. '14:00' or '2 pm'.
    """
    me = _me(ctx)
    listing = _listing(ctx, listing_id)
    _require_active(listing, "tours are available")
    day = _tour_date(ctx, date)
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


def _my_tours(ctx: ToolContext, user_id: int, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    return ctx.query(
        "SELECT t.*, l.address, c.name AS city FROM tours t JOIN listings l ON l.id = t.listing_id "
        f"JOIN cities c ON c.id = l.city_id WHERE t.user_id=? AND {where} ORDER BY t.date, t.time, t.id",
        (user_id, *params))


@tool
def list_my_tours(ctx: ToolContext, upcoming_only: bool = False) -> dict:
    """List the logged-in user's home tours, earliest first (status scheduled, completed or cancelled).

    Args:
        upcoming_only: True for only scheduled tours from today on.
    """
    me = _me(ctx)
    today = ctx.env.today.isoformat()
    if upcoming_only:
        rows = _my_tours(ctx, me["id"], "t.status='scheduled' AND t.date>=?", (today,))
    else:
        rows = _my_tours(ctx, me["id"])
    return {"today": today, "tours": [_tour_view(r, today) for r in rows][:30]}


@tool
def cancel_tour(ctx: ToolContext, tour_id: int) -> dict:
    """Cancel one of the logged-in user's scheduled tours; only tours on a later day than today can be cancelled.

    Args:
        tour_id: The tour_id from list_my_tours.
    """
    me = _me(ctx)
    rows = _my_tours(ctx, me["id"], "t.id=?", (tour_id,))
    if not rows:
        raise ToolError(f"argument 'tour_id': you have no tour {tour_id}; see list_my_tours")
    tour = rows[0]
    today = ctx.env.today.isoformat()
    if tour["status"] == "cancelled":
        raise ToolError(f"tour {tour_id} of {tour['address']} is already cancelled")
    if tour["date"] <= today:
        raise ToolError(f"tour {tour_id} was on {tour['date']} (today is {today}); only later tours can be cancelled")
    ctx.db.execute("UPDATE tours SET status='cancelled', cancelled_on=? WHERE id=?", (today, tour_id))
    return {**_tour_view(tour, today), "status": "cancelled"}


# ---------------------------------------------------------------- offers


def _offer_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"offer_id": row["id"], "listing_id": row["listing_id"], "address": row["address"], "city": row["city"],
            "amount": row["amount"], "asking_price": row["price"], "listing_status": row["listing_status"],
            "status": row["status"], "offered_on": row["offered_on"]}


def _my_offers(ctx: ToolContext, user_id: int, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    return ctx.query(
        "SELECT o.*, l.address, l.price, l.status AS listing_status, c.name AS city FROM offers o "
        "JOIN listings l ON l.id = o.listing_id JOIN cities c ON c.id = l.city_id "
        f"WHERE o.buyer_id=? AND {where} ORDER BY o.offered_on DESC, o.id DESC", (user_id, *params))


@tool
def make_offer(ctx: ToolContext, listing_id: int, amount: int) -> dict:
    """Make a purchase offer on an active listing for the logged-in user (at least 90% of the asking price).

    Args:
        listing_id: The listing to make an offer on.
        amount: Offer in whole US dollars, e.g. 415000.
    """
    me = _me(ctx)
    listing = _listing(ctx, listing_id)
    _require_active(listing, "offers can be made")
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
    me = _me(ctx)
    rows = _my_offers(ctx, me["id"], "o.id=?", (offer_id,))
    if not rows:
        raise ToolError(f"argument 'offer_id': you have no offer {offer_id}; see list_my_offers")
    offer = rows[0]
    if offer["status"] != "open":
        raise ToolError(f"offer {offer_id} on {offer['address']} is {offer['status']}; only open offers can be withdrawn")
    ctx.db.execute("UPDATE offers SET status='withdrawn', closed_on=? WHERE id=?", (ctx.env.today.isoformat(), offer_id))
    return {**_offer_view(offer), "status": "withdrawn"}


@tool
def list_my_offers(ctx: ToolContext, status: Literal["open", "accepted", "rejected", "withdrawn", "all"] = "all") -> list[dict]:
    """List the logged-in user's offers, newest first, with each listing's asking price and status.

    Args:
        status: 'open', 'accepted', 'rejected', 'withdrawn' or 'all' (default).
    """
    me = _me(ctx)
    rows = _my_offers(ctx, me["id"]) if status == "all" else _my_offers(ctx, me["id"], "o.status=?", (status,))
    return [_offer_view(r) for r in rows[:30]]


TOOLS = [
    search_listings, get_listing, get_agent, save_home, unsave_home, list_saved_homes, create_saved_search,
    list_saved_searches, delete_saved_search, list_tour_slots, schedule_tour, cancel_tour, list_my_tours,
    make_offer, withdraw_offer, list_my_offers,
]
