"""What the homes tools share: the logged-in user, lookups of cities and listings that name the argument
on failure, tour-date and number checks, and the summaries tools return."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit
from toolgym.envs.apps.homes.rules import MAX_TOUR_DAYS_AHEAD, price_per_sqft
from toolgym.envs.kit.lookups import row_by_id

MAX_RESULTS = 20
HomeType = Literal["house", "condo", "townhouse", "multi_family"]
SortKey = Literal["price", "price_desc", "newest", "sqft", "price_per_sqft"]


_LISTING_SQL = (
    "SELECT l.*, c.name AS city, c.state FROM listings l JOIN cities c ON c.id = l.city_id"
)


def current_user(ctx: ToolContext) -> dict[str, Any]:
    return kit.logged_in_user(ctx, "the homes app")


def find_city(ctx: ToolContext, text: str) -> dict[str, Any]:
    """A city by name, case-insensitive; 'Austin, TX' works too."""
    wanted = " ".join(text.split(",")[0].split())
    row = ctx.one("SELECT id, name, state FROM cities WHERE lower(name)=lower(?)", (wanted,))
    if row is None:
        known = ", ".join(r["name"] for r in ctx.query("SELECT name FROM cities ORDER BY name"))
        raise ToolError(f"argument 'city': no listings in {text!r}; cities with listings: {known}")
    return row


def find_listing(ctx: ToolContext, listing_id: int) -> dict[str, Any]:
    return row_by_id(ctx, f"{_LISTING_SQL} WHERE l.id=?", "listing_id", listing_id, "listing",
                     "use search_listings to find one")


def tour_date(ctx: ToolContext, text: str) -> str:
    """A tour day: after today and at most MAX_TOUR_DAYS_AHEAD days ahead."""
    day = kit.date_arg(ctx, "date", text)
    today = ctx.env.today
    if day <= today.isoformat():
        raise ToolError(f"argument 'date' ({day}) must be after today ({today.isoformat()}); tours are for later days")
    last = (today + dt.timedelta(days=MAX_TOUR_DAYS_AHEAD)).isoformat()
    if day > last:
        raise ToolError(f"argument 'date' ({day}) is too far ahead; tours can be booked up to {last}")
    return day


def require_active(listing: dict[str, Any], action: str) -> None:
    if listing["status"] != "active":
        state = "under contract (pending)" if listing["status"] == "pending" else "sold"
        raise ToolError(f"{listing['address']} is {state}; {action} only for active listings")


def _number(value: float) -> int | float:
    """2.0 -> 2, 2.5 -> 2.5: half baths read naturally."""
    return int(value) if float(value).is_integer() else value


def summary(row: dict[str, Any], with_city: bool = True) -> dict[str, Any]:
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


def search_matches(ctx: ToolContext, search: dict[str, Any]) -> int:
    row = ctx.one(
        "SELECT COUNT(*) AS n FROM listings WHERE city_id=? AND status='active' AND (? IS NULL OR price<=?) "
        "AND (? IS NULL OR beds>=?) AND (? IS NULL OR home_type=?)",
        (search["city_id"], search["max_price"], search["max_price"], search["min_beds"], search["min_beds"],
         search["home_type"], search["home_type"]))
    return row["n"] if row else 0


def tour_view(row: dict[str, Any], today: str) -> dict[str, Any]:
    status = row["status"]
    if status == "scheduled" and row["date"] < today:
        status = "completed"
    return {"tour_id": row["id"], "listing_id": row["listing_id"], "address": row["address"], "city": row["city"],
            "date": row["date"], "time": row["time"], "status": status}


def my_tours(ctx: ToolContext, user_id: int, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    return ctx.query(
        "SELECT t.*, l.address, c.name AS city FROM tours t JOIN listings l ON l.id = t.listing_id "
        f"JOIN cities c ON c.id = l.city_id WHERE t.user_id=? AND {where} ORDER BY t.date, t.time, t.id",
        (user_id, *params))


def only_mine(rows: list[dict[str, Any]], thing: str, row_id: int, listed_by: str) -> dict[str, Any]:
    """The logged-in user's `thing` asked for by id (`rows` holds it, or nothing when it is not theirs)."""
    if not rows:
        raise ToolError(f"argument '{thing}_id': you have no {thing} {row_id}; see {listed_by}")
    return rows[0]


def offer_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"offer_id": row["id"], "listing_id": row["listing_id"], "address": row["address"], "city": row["city"],
            "amount": row["amount"], "asking_price": row["price"], "listing_status": row["listing_status"],
            "status": row["status"], "offered_on": row["offered_on"]}


def my_offers(ctx: ToolContext, user_id: int, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    return ctx.query(
        "SELECT o.*, l.address, l.price, l.status AS listing_status, c.name AS city FROM offers o "
        "JOIN listings l ON l.id = o.listing_id JOIN cities c ON c.id = l.city_id "
        f"WHERE o.buyer_id=? AND {where} ORDER BY o.offered_on DESC, o.id DESC", (user_id, *params))
