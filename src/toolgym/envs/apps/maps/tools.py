"""Tools of the maps app: find places, read hours and reviews, get directions, keep lists, read the timeline.

A place can be named by its place_id, its exact name, a meeting-room name inside the office
('Room 4A'), or 'work'; directions and nearby searches also accept 'home'. Broken rules (a second
review, a list name taken, someone else's list) come back as a ToolError that says what is allowed.
"My" means LOGGED_IN_USER; dates go through CURRENT_DATE and nothing reads the wall clock.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.maps.rules import (
    CITIES,
    MAX_RADIUS_KM,
    PRICE_SIGNS,
    WEEKDAY_NAMES,
    day_status,
    hours_text,
    hydrate,
    nearby_light,
    parse_time,
    route,
    search,
)

MAX_RESULTS = 15
MAX_TIMELINE_DAYS = 31
MAX_NAME = 40
MAX_REVIEW = 1000
HOME_WORDS = ("home", "my home", "house", "my house", "my place")
WORK_WORDS = ("work", "my work", "office", "my office", "workplace", "my workplace")
Category = Literal["restaurant", "cafe", "bakery", "bar", "museum", "park", "pharmacy", "gas_station",
                   "supermarket", "gym", "library", "office"]
Mode = Literal["drive", "walk", "bike", "transit"]


# ---------------------------------------------------------------- shared validation


@dataclass(frozen=True)
class Endpoint:
    """Where a route starts or ends: a place, or the user's home (which is not a public place)."""

    label: str
    address: str
    lat: float
    lon: float
    place_id: int | None = None


def _me(ctx: ToolContext) -> dict[str, Any]:
    return kit.logged_in_user(ctx, "the maps app", "*")


def _day_arg(ctx: ToolContext, name: str, text: str) -> dt.date:
    return dt.date.fromisoformat(kit.date_arg(ctx, name, text))


def _time_arg(name: str, text: str) -> str:
    try:
        return parse_time(text)
    except ValueError:
        raise ToolError(f"argument '{name}': cannot read time {text!r}; use HH:MM (24-hour) like '09:00' or "
                        "'21:30', or '9am' / '9:30pm'") from None


def _when(ctx: ToolContext, open_on: str | None, open_at: str | None) -> tuple[dt.date | None, str | None]:
    """The day and time an 'open' filter means; a time alone means today."""
    at = _time_arg("open_at", open_at) if open_at is not None else None
    if open_on is not None:
        return _day_arg(ctx, "open_on", open_on), at
    return (ctx.env.today, at) if at is not None else (None, None)


def _place(ctx: ToolContext, name: str, ref: int | str) -> dict[str, Any]:
    """A place by id, exact name, meeting-room alias, or 'work'; the error names the argument and suggests."""
    digits = str(ref).strip()
    if isinstance(ref, int) or (digits.isascii() and digits.isdigit()):
        # 19+ digits name no place: past SQLite's integer range (and int() refuses 4,300+ digits)
        place_id = ref if isinstance(ref, int) else int(digits) if len(digits) < 19 else -1
        row = ctx.one("SELECT * FROM places WHERE id=?", (place_id,))
        if row is None:
            raise ToolError(f"argument '{name}': no place with place_id {ref}; use search_places to find one")
        return row
    text = " ".join(str(ref).split())
    if not text:
        raise ToolError(f"argument '{name}' is empty; give a place_id or a place name")
    if text.lower() in WORK_WORDS:
        work = ctx.one("SELECT p.* FROM places p JOIN users u ON u.work_place_id = p.id WHERE u.username=?",
                       (ctx.env.require_user(),))
        if work is None:
            raise ToolError(f"argument '{name}': you have no workplace saved")
        return work
    if text.lower() in HOME_WORDS:
        raise ToolError(f"argument '{name}': your home is not a public place; use it only as a directions or "
                        "nearby starting point, or see get_my_home_and_work")
    row = ctx.one("SELECT * FROM places WHERE name = ? COLLATE NOCASE", (text,))
    if row is None:
        row = ctx.one("SELECT p.* FROM places p JOIN place_aliases a ON a.place_id = p.id WHERE a.alias = ?", (text,))
    if row is not None:
        return row
    similar = ctx.query("SELECT name FROM places WHERE name LIKE ? ORDER BY name LIMIT 6", (f"%{text}%",))
    hint = f"; did you mean: {', '.join(r['name'] for r in similar)}" if similar else ""
    raise ToolError(f"argument '{name}': no place named {text!r} on the map{hint}. Use search_places to find "
                    "places and their place_id")


def _endpoint(ctx: ToolContext, name: str, ref: int | str) -> Endpoint:
    if isinstance(ref, str) and " ".join(ref.split()).lower() in HOME_WORDS:
        me = _me(ctx)
        return Endpoint("Home", me["home_address"], me["home_lat"], me["home_lon"])
    place = _place(ctx, name, ref)
    return Endpoint(place["name"], place["address"], place["lat"], place["lon"], place["id"])


def _price(level: int | None) -> str | None:
    return PRICE_SIGNS.get(level) if level is not None else None


def _summary(place: dict[str, Any]) -> dict[str, Any]:
    view = {"place_id": place["id"], "name": place["name"], "category": place["category"]}
    if place["cuisine"]:
        view["cuisine"] = place["cuisine"]
    view.update(address=place["address"], neighborhood=place["neighborhood"], rating=place["rating"],
                review_count=place["review_count"])
    if place["price_level"] is not None:
        view["price"] = _price(place["price_level"])
    return view


def _with_day(ctx: ToolContext, view: dict[str, Any], day: dt.date | None) -> dict[str, Any]:
    if day is not None:
        view["hours_that_day"] = day_status(ctx, view["place_id"], day)["hours"]
    return view


def _positive_rating(min_rating: float | None) -> None:
    if min_rating is not None and not 1 <= min_rating <= 5:
        raise ToolError(f"argument 'min_rating' must be between 1 and 5; got {min_rating}")


def _my_list(ctx: ToolContext, user_id: int, list_name: str) -> dict[str, Any]:
    wanted = " ".join(list_name.split())
    row = ctx.one("SELECT * FROM saved_lists WHERE user_id=? AND name=?", (user_id, wanted))
    if row is None:
        mine = [r["name"] for r in ctx.query("SELECT name FROM saved_lists WHERE user_id=? ORDER BY id", (user_id,))]
        raise ToolError(f"argument 'list_name': you have no list named {list_name!r}; you can only use your own "
                        f"lists: {', '.join(repr(n) for n in mine) or 'none yet'}")
    return row


# ---------------------------------------------------------------- places


@tool
def search_places(
    ctx: ToolContext, query: str | None = None, category: Category | None = None, city: str | None = None,
    open_on: str | None = None, open_at: str | None = None, min_rating: float | None = None,
    max_price_level: int | None = None,
) -> dict:
    """Search places by words, category and city, optionally only those open on a day (and at a time); best-rated first.

    Args:
        query: Words to match in the name, cuisine or neighborhood, e.g. 'thai', 'Bluebird', 'Davis Square'.
        category: Kind of place: restaurant, cafe, bakery, bar, museum, park, pharmacy, gas_station,
            supermarket, gym, library or office.
        city: Boston, Cambridge, Somerville or Brookline.
        open_on: Only places open on this day: YYYY-MM-DD, 'today', 'tomorrow', 'Saturday', 'next Friday'.
        open_at: Only places open at this time of day, 'HH:MM' (24-hour) or '9am'; alone it means today.
        min_rating: Only places rated at least this (1-5).
        max_price_level: Only places with at most this price level (1 = $, 4 = $$$$).
    """
    if city is not None:
        match = [c for c in CITIES if c.lower() == " ".join(city.split()).lower()]
        if not match:
            raise ToolError(f"argument 'city': unknown city {city!r}; the map covers {', '.join(CITIES)}")
        city = match[0]
    _positive_rating(min_rating)
    if max_price_level is not None and not 1 <= max_price_level <= 4:
        raise ToolError(f"argument 'max_price_level' must be 1-4; got {max_price_level}")
    day, at = _when(ctx, open_on, open_at)
    count, rows = search(ctx, query, category, city, day, at, min_rating, max_price_level, limit=MAX_RESULTS)
    result: dict[str, Any] = {"count": count, "places": [_with_day(ctx, _summary(r), day) for r in rows]}
    if day is not None:
        result["open_on"] = f"{WEEKDAY_NAMES[day.weekday()]} {day.isoformat()}" + (f" at {at}" if at else "")
    if count > MAX_RESULTS:
        result["note"] = f"showing the {MAX_RESULTS} best-rated of {count}; add filters to narrow it down"
    if not rows:
        result["note"] = "no place matches every filter"
    return result


@tool
def get_place(ctx: ToolContext, place: int | str, date: str | None = None) -> dict:
    """Show one place: address, phone, rating, price, opening hours for every weekday and upcoming closures.

    Args:
        place: The place_id (from search_places) or the exact place name; 'work' is your office.
        date: Optional day to check: YYYY-MM-DD, 'today', 'tomorrow' or a weekday like 'Saturday'.
    """
    row = _place(ctx, "place", place)
    week = {r["weekday"]: r for r in ctx.query(
        "SELECT weekday, opens, closes FROM opening_hours WHERE place_id=? ORDER BY weekday", (row["id"],))}
    today = ctx.env.today
    result = {**_summary(row), "city": row["city"], "phone": row["phone"],
              "hours": {WEEKDAY_NAMES[d]: hours_text(week[d]["opens"], week[d]["closes"]) if d in week else "closed"
                        for d in range(7)}}
    closures = ctx.query(
        "SELECT date, reason FROM closures WHERE place_id=? AND date >= ? AND date <= ? ORDER BY date",
        (row["id"], today.isoformat(), (today + dt.timedelta(days=30)).isoformat()))
    if closures:
        result["closed_on"] = closures
    rooms = ctx.query("SELECT alias AS room, detail FROM place_aliases WHERE place_id=? ORDER BY id", (row["id"],))
    if rooms:
        result["rooms_inside"] = rooms
    if date is not None:
        result["on_date"] = day_status(ctx, row["id"], _day_arg(ctx, "date", date))
    return result


@tool
def nearby_places(
    ctx: ToolContext, place: int | str, category: Category | None = None, radius_km: float = 1.0,
    open_on: str | None = None, open_at: str | None = None, min_rating: float | None = None,
    sort_by: Literal["distance", "rating"] = "distance",
) -> dict:
    """Places within a straight-line radius of a place or of your home, nearest first (or best-rated first).

    Args:
        place: Starting point: a place_id, an exact place name, 'home' or 'work'.
        category: Only this kind of place, e.g. 'cafe' or 'pharmacy'.
        radius_km: Search radius in km (straight line), 0.1-10; default 1.
        open_on: Only places open on this day: YYYY-MM-DD, 'today', 'tomorrow', 'Saturday', 'next Friday'.
        open_at: Only places open at this time, 'HH:MM' (24-hour) or '9am'; alone it means today.
        min_rating: Only places rated at least this (1-5).
        sort_by: 'distance' (nearest first, default) or 'rating' (best-rated first, then nearest).
    """
    start = _endpoint(ctx, "place", place)
    if not 0.1 <= radius_km <= MAX_RADIUS_KM:
        raise ToolError(f"argument 'radius_km' must be between 0.1 and {MAX_RADIUS_KM:g}; got {radius_km}")
    _positive_rating(min_rating)
    day, at = _when(ctx, open_on, open_at)
    found = nearby_light(ctx, start.lat, start.lon, radius_km, category, day, at, min_rating, start.place_id)
    if sort_by == "rating":
        found = sorted(found, key=lambda r: (-r["rating"], r["exact_km"], r["id"]))
    rows = hydrate(ctx, found[:MAX_RESULTS])
    places = [_with_day(ctx, {**_summary(r), "distance_km": r["distance_km"]}, day) for r in rows]
    result: dict[str, Any] = {"from": {"name": start.label, "address": start.address}, "radius_km": radius_km,
                              "count": len(found), "places": places}
    if day is not None:
        result["open_on"] = f"{WEEKDAY_NAMES[day.weekday()]} {day.isoformat()}" + (f" at {at}" if at else "")
    if not found:
        result["note"] = "nothing matches within this radius; try a larger radius_km"
    return result


@tool
def get_directions(ctx: ToolContext, origin: int | str, destination: int | str, mode: Mode = "drive") -> dict:
    """Route distance (km) and travel time (minutes) between two places by car, on foot, by bike or by transit.

    Args:
        origin: Start: a place_id, an exact place name, a meeting room like 'Room 4A', 'home' or 'work'.
        destination: End, given the same way as origin.
        mode: 'drive' (default), 'walk', 'bike' or 'transit'.
    """
    start, end = _endpoint(ctx, "origin", origin), _endpoint(ctx, "destination", destination)
    if (start.place_id, start.label) == (end.place_id, end.label):
        raise ToolError("arguments 'origin' and 'destination' are the same place")
    distance, minutes = route(start.lat, start.lon, end.lat, end.lon, mode)
    return {"origin": {"name": start.label, "address": start.address},
            "destination": {"name": end.label, "address": end.address},
            "mode": mode, "distance_km": distance, "duration_min": minutes}


# ---------------------------------------------------------------- reviews


@tool
def list_reviews(
    ctx: ToolContext, place: int | str, sort_by: Literal["newest", "highest", "lowest"] = "newest", limit: int = 5
) -> dict:
    """Read the reviews people wrote about a place.

    Args:
        place: The place_id or exact place name.
        sort_by: 'newest' (default), 'highest' or 'lowest' stars first.
        limit: How many reviews to show, 1-20; default 5.
    """
    row = _place(ctx, "place", place)
    if not 1 <= limit <= 20:
        raise ToolError(f"argument 'limit' must be between 1 and 20; got {limit}")
    order = {"newest": "r.created_on DESC, r.id DESC", "highest": "r.stars DESC, r.created_on DESC, r.id DESC",
             "lowest": "r.stars ASC, r.created_on DESC, r.id DESC"}[sort_by]
    reviews = ctx.query(
        "SELECT r.stars, r.text, r.created_on AS date, u.name AS author FROM reviews r "
        "JOIN users u ON u.id = r.user_id "
        f"WHERE r.place_id=? AND r.created_on <= ? ORDER BY {order} LIMIT ?",
        (row["id"], ctx.env.today.isoformat(), limit))
    return {"place_id": row["id"], "name": row["name"], "rating": row["rating"], "review_count": row["review_count"],
            "reviews": reviews}


@tool
def list_my_reviews(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the reviews the logged-in user has written, newest first (each place can be reviewed once)."""
    me = _me(ctx)
    return ctx.query(
        "SELECT r.id AS review_id, r.place_id, p.name AS place, r.stars, r.text, r.created_on AS date FROM reviews r "
        "JOIN places p ON p.id = r.place_id WHERE r.user_id=? ORDER BY r.created_on DESC, r.id DESC", (me["id"],))


@tool
def write_review(ctx: ToolContext, place: int | str, stars: int, text: str) -> dict:
    """Post the logged-in user's review of a place, dated today; a user can review each place only once.

    Args:
        place: The place_id or exact place name.
        stars: Rating from 1 (worst) to 5 (best).
        text: What the user wants to say, as they said it.
    """
    me = _me(ctx)
    row = _place(ctx, "place", place)
    if not 1 <= stars <= 5:
        raise ToolError(f"argument 'stars' must be between 1 and 5; got {stars}")
    words = text.strip()
    if not words or len(words) > MAX_REVIEW:
        raise ToolError(f"argument 'text' must be 1-{MAX_REVIEW} characters; got {len(words)}")
    earlier = ctx.one("SELECT stars, created_on FROM reviews WHERE place_id=? AND user_id=?", (row["id"], me["id"]))
    if earlier is not None:
        raise ToolError(f"you already reviewed {row['name']} on {earlier['created_on']} ({earlier['stars']} stars); "
                        "each user can review a place only once")
    cur = ctx.db.execute("INSERT INTO reviews(place_id, user_id, stars, text, created_on) VALUES (?, ?, ?, ?, ?)",
                         (row["id"], me["id"], stars, words, ctx.env.today.isoformat()))
    return {"review_id": cur.lastrowid, "place_id": row["id"], "place": row["name"], "stars": stars, "text": words,
            "date": ctx.env.today.isoformat()}


# ---------------------------------------------------------------- saved lists


@tool
def list_my_lists(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the logged-in user's saved lists with the places in each."""
    me = _me(ctx)
    lists = ctx.query("SELECT id, name, description FROM saved_lists WHERE user_id=? ORDER BY id", (me["id"],))
    out = []
    for entry in lists:
        places = ctx.query(
            "SELECT p.id AS place_id, p.name, p.category, s.note FROM saved_places s "
            "JOIN places p ON p.id = s.place_id "
            "WHERE s.list_id=? ORDER BY s.saved_on, s.id", (entry["id"],))
        out.append({"list_id": entry["id"], "name": entry["name"], "description": entry["description"],
                    "count": len(places), "places": places[:25]})
    return out


@tool
def create_list(ctx: ToolContext, name: str, description: str = "") -> dict:
    """Create a new saved list for the logged-in user; list names are unique per user (ignoring case).

    Args:
        name: Name of the new list, 1-40 characters.
        description: Optional short description.
    """
    me = _me(ctx)
    title = " ".join(name.split())
    if not 1 <= len(title) <= MAX_NAME:
        raise ToolError(f"argument 'name' must be 1-{MAX_NAME} characters; got {len(title)}")
    taken = ctx.one("SELECT name FROM saved_lists WHERE user_id=? AND name=?", (me["id"], title))
    if taken is not None:
        raise ToolError(f"argument 'name': you already have a list named {taken['name']!r}; list names must be unique")
    cur = ctx.db.execute("INSERT INTO saved_lists(user_id, name, description, created_on) VALUES (?, ?, ?, ?)",
                         (me["id"], title, description.strip(), ctx.env.today.isoformat()))
    return {"list_id": cur.lastrowid, "name": title, "description": description.strip(), "count": 0}


@tool
def save_place(ctx: ToolContext, list_name: str, place: int | str, note: str = "") -> dict:
    """Save a place to one of the logged-in user's lists (a place appears in a list once).

    Args:
        list_name: Name of one of your lists, e.g. 'Favorites'.
        place: The place_id or exact place name.
        note: Optional note shown with the saved place.
    """
    me = _me(ctx)
    saved_list = _my_list(ctx, me["id"], list_name)
    row = _place(ctx, "place", place)
    if ctx.one("SELECT 1 AS x FROM saved_places WHERE list_id=? AND place_id=?", (saved_list["id"], row["id"])):
        raise ToolError(f"{row['name']} is already in your list {saved_list['name']!r}")
    ctx.db.execute("INSERT INTO saved_places(list_id, place_id, note, saved_on) VALUES (?, ?, ?, ?)",
                   (saved_list["id"], row["id"], note.strip(), ctx.env.today.isoformat()))
    count = ctx.one("SELECT COUNT(*) AS n FROM saved_places WHERE list_id=?", (saved_list["id"],))
    return {"list": saved_list["name"], "place_id": row["id"], "place": row["name"], "note": note.strip(),
            "count": count["n"] if count else 0}


@tool
def remove_saved_place(ctx: ToolContext, list_name: str, place: int | str) -> dict:
    """Remove a place from one of the logged-in user's lists.

    Args:
        list_name: Name of one of your lists.
        place: The place_id or exact place name to remove from it.
    """
    me = _me(ctx)
    saved_list = _my_list(ctx, me["id"], list_name)
    row = _place(ctx, "place", place)
    cur = ctx.db.execute("DELETE FROM saved_places WHERE list_id=? AND place_id=?", (saved_list["id"], row["id"]))
    if cur.rowcount == 0:
        raise ToolError(f"{row['name']} is not in your list {saved_list['name']!r}")
    return {"list": saved_list["name"], "removed": row["name"]}


# ---------------------------------------------------------------- me


@tool
def get_my_timeline(ctx: ToolContext, date: str, end_date: str | None = None) -> dict:
    """The places the logged-in user visited on a past day (or from date to end_date), in order.

    Args:
        date: The day: YYYY-MM-DD, 'yesterday', 'last Friday', '3 days ago' or 'today'.
        end_date: Optional last day of a range (at most 31 days), given the same way.
    """
    me = _me(ctx)
    first = _day_arg(ctx, "date", date)
    last = _day_arg(ctx, "end_date", end_date) if end_date is not None else first
    today = ctx.env.today
    for name, day in (("date", first), ("end_date", last)):
        if day > today:
            raise ToolError(f"argument '{name}': {day.isoformat()} is in the future (today is {today.isoformat()}); "
                            "the timeline only has past days")
    if last < first:
        raise ToolError(f"argument 'end_date' ({last.isoformat()}) is before 'date' ({first.isoformat()})")
    if (last - first).days >= MAX_TIMELINE_DAYS:
        raise ToolError(f"a timeline range can be at most {MAX_TIMELINE_DAYS} days")
    visits = ctx.query(
        "SELECT v.date, v.arrived, v.departed, p.id AS place_id, p.name, p.category, p.address FROM visits v "
        "JOIN places p ON p.id = v.place_id WHERE v.user_id=? AND v.date BETWEEN ? AND ? "
        "ORDER BY v.date, v.arrived, v.id", (me["id"], first.isoformat(), last.isoformat()))
    result: dict[str, Any] = {"from": first.isoformat(), "to": last.isoformat(), "visits": visits[:60]}
    if not visits:
        result["note"] = "no visits recorded on these days"
    return result


@tool
def get_my_home_and_work(ctx: ToolContext) -> dict:
    """The logged-in user's home address and workplace ('home' and 'work' in directions mean these)."""
    me = _me(ctx)
    work = ctx.one("SELECT * FROM places WHERE id=?", (me["work_place_id"],))
    return {"name": me["name"], "home": {"address": me["home_address"], "neighborhood": me["home_neighborhood"]},
            "work": {"place_id": work["id"], "name": work["name"], "address": work["address"]} if work else None}


TOOLS = [
    search_places, get_place, nearby_places, get_directions, list_reviews, list_my_reviews, write_review,
    list_my_lists, create_list, save_place, remove_saved_place, get_my_timeline, get_my_home_and_work,
]
