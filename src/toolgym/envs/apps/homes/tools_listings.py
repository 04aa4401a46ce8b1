"""Homes tools over listings: search, details, agents, saved homes and saved searches."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.homes.tool_common import (
    MAX_RESULTS,
    HomeType,
    SortKey,
    current_user,
    find_city,
    find_listing,
    search_matches,
    summary,
)
from toolgym.envs.kit.lookups import row_by_id


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
    place = find_city(ctx, city)
    if max_price is not None and max_price < 1:
        raise ToolError(f"argument 'max_price' must be a positive number of US dollars; got {max_price}")
    if min_beds is not None and not 0 <= min_beds <= 10:
        raise ToolError(f"argument 'min_beds' must be between 0 and 10; got {min_beds}")
    where = kit.Where("l.city_id=?", params=[place["id"]])
    where.when(max_price, "l.price<=?").when(min_beds, "l.beds>=?").when(home_type, "l.home_type=?")
    if address is not None and address.strip():
        where.add("lower(l.address) LIKE '%' || lower(?) || '%'", " ".join(address.split(",")[0].split()))
    any_status, any_status_params = where.sql, list(where.params)
    if status != "any":
        where.add("l.status=?", status)
    order = {
        "price": "l.price, l.id", "price_desc": "l.price DESC, l.id", "newest": "l.listed_on DESC, l.id",
        "sqft": "l.sqft DESC, l.id", "price_per_sqft": "(2 * l.price + l.sqft) / (2 * l.sqft), l.id",  # = price_per_sqft()
    }[sort_by]
    found = ctx.query(
        "SELECT l.id, l.address, l.price, l.beds, l.baths, l.sqft, l.home_type, l.status, l.listed_on, l.sold_price, "
        f"COUNT(*) OVER () AS total FROM listings l WHERE {where.sql} ORDER BY {order} LIMIT ?",
        [*where.params, MAX_RESULTS])
    rows = [summary(r, with_city=False) for r in found]
    result: dict[str, Any] = {"city": f"{place['name']}, {place['state']}", "status": status, "sort_by": sort_by,
                              "total_matches": found[0]["total"] if found else 0, "listings": rows}
    if not rows and status != "any":
        others = ctx.one(f"SELECT COUNT(*) AS n FROM listings l WHERE {any_status}", any_status_params)
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
    row = find_listing(ctx, listing_id)
    agent = ctx.one("SELECT id, name, brokerage FROM agents WHERE id=?", (row["agent_id"],))
    assert agent is not None
    history = ctx.query("SELECT date, event, price FROM price_history WHERE listing_id=? ORDER BY date, id",
                        (listing_id,))
    result = {
        **summary(row), "city": f"{row['city']}, {row['state']}", "zip": row["zip"],
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
    agent = row_by_id(
        ctx, "SELECT a.*, c.name AS city FROM agents a JOIN cities c ON c.id = a.city_id WHERE a.id=?",
        "agent_id", agent_id, "agent", "get_listing shows a listing's agent")
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


@tool
def save_home(ctx: ToolContext, listing_id: int) -> dict:
    """Add a listing to the logged-in user's saved homes (favorites).

    Args:
        listing_id: The listing to save.
    """
    me = current_user(ctx)
    listing = find_listing(ctx, listing_id)
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
    me = current_user(ctx)
    listing = find_listing(ctx, listing_id)
    saved = ctx.one("SELECT id FROM saved_homes WHERE user_id=? AND listing_id=?", (me["id"], listing_id))
    if saved is None:
        raise ToolError(f"argument 'listing_id': {listing['address']} is not in your saved homes; see list_saved_homes")
    ctx.db.execute("DELETE FROM saved_homes WHERE id=?", (saved["id"],))
    return {"removed": True, "listing_id": listing_id, "address": listing["address"]}


@tool
def list_saved_homes(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the logged-in user's saved homes with their current price and status, most recently saved first."""
    me = current_user(ctx)
    rows = ctx.query(
        "SELECT l.*, c.name AS city, c.state, s.saved_on FROM saved_homes s JOIN listings l ON l.id = s.listing_id "
        "JOIN cities c ON c.id = l.city_id WHERE s.user_id=? ORDER BY s.saved_on DESC, s.id DESC", (me["id"],))
    return [{**summary(r), "saved_on": r["saved_on"]} for r in rows[:30]]


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
    me = current_user(ctx)
    place = find_city(ctx, city)
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
            "min_beds": min_beds, "home_type": home_type, "active_matches": search_matches(ctx, search)}


@tool
def list_saved_searches(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the logged-in user's saved searches with how many active listings match each today."""
    me = current_user(ctx)
    rows = ctx.query(
        "SELECT s.*, c.name AS city FROM saved_searches s JOIN cities c ON c.id = s.city_id WHERE s.user_id=? "
        "ORDER BY s.created_on, s.id", (me["id"],))
    return [{"search_id": r["id"], "name": r["name"], "city": r["city"], "max_price": r["max_price"],
             "min_beds": r["min_beds"], "home_type": r["home_type"], "created_on": r["created_on"],
             "active_matches": search_matches(ctx, r)} for r in rows]


@tool
def delete_saved_search(ctx: ToolContext, search_id: int) -> dict:
    """Delete one of the logged-in user's saved searches.

    Args:
        search_id: The search_id from list_saved_searches.
    """
    me = current_user(ctx)
    row = ctx.one("SELECT id, name FROM saved_searches WHERE id=? AND user_id=?", (search_id, me["id"]))
    if row is None:
        raise ToolError(f"argument 'search_id': you have no saved search {search_id}; see list_saved_searches")
    ctx.db.execute("DELETE FROM saved_searches WHERE id=?", (search_id,))
    return {"deleted": True, "search_id": search_id, "name": row["name"]}
