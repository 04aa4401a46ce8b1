"""Maps rules shared by the seed, the tools and the task generators, so all three agree exactly.

Distances are great-circle kilometres between coordinates; a route is that distance times a
per-mode detour factor, and its time follows from a per-mode speed plus a fixed overhead (parking,
waiting for a train). Opening hours are per weekday; a place is open at a time when
`opens <= time < closes` on that weekday and it has no closure on that date.

Anything with a `query(sql, params)` method works as `source`: a ToolContext (episode state) or
a World (the seed, read-only).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from typing import Any, Protocol

from toolgym.envs.kit.dates import WEEKDAY_NAMES
from toolgym.envs.kit.sql import Where

EARTH_RADIUS_KM = 6371.0
CATEGORIES: tuple[str, ...] = (
    "restaurant", "cafe", "bakery", "bar", "museum", "park", "pharmacy", "gas_station", "supermarket",
    "gym", "library", "office",
)
CITIES: tuple[str, ...] = ("Boston", "Brookline", "Cambridge", "Somerville")
PRICE_SIGNS = {1: "$", 2: "$$", 3: "$$$", 4: "$$$$"}
MAX_RADIUS_KM = 10.0
ALL_DAY = ("00:00", "24:00")


class Source(Protocol):
    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Mode:
    """How a travel mode turns straight-line distance into a route: detour factor, speed, fixed minutes."""

    detour: float
    kmh: float
    overhead_min: float


MODES: dict[str, Mode] = {
    "drive": Mode(detour=1.3, kmh=28.0, overhead_min=3.0),
    "walk": Mode(detour=1.2, kmh=4.8, overhead_min=0.0),
    "bike": Mode(detour=1.25, kmh=15.0, overhead_min=0.0),
    "transit": Mode(detour=1.4, kmh=20.0, overhead_min=8.0),
}


def round_half_up(value: float, digits: int = 0) -> float:
    """Rounding people expect (2.25 -> 2.3), not banker's rounding."""
    scale = 10**digits
    return math.floor(value * scale + 0.5 + 1e-9) / scale


def straight_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in kilometres (haversine)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(a))


def route(lat1: float, lon1: float, lat2: float, lon2: float, mode: str) -> tuple[float, int]:
    """(distance_km rounded to 0.1, duration in whole minutes) of the route between two points."""
    spec = MODES[mode]
    distance = round_half_up(straight_km(lat1, lon1, lat2, lon2) * spec.detour, 1)
    minutes = int(round_half_up(distance / spec.kmh * 60 + spec.overhead_min))
    return distance, max(1, minutes)


# ---------------------------------------------------------------- time of day

_CLOCK = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?$")


def parse_time(text: str) -> str:
    """'9', '9am', '9:30 pm', '21:30', 'noon' -> 'HH:MM' (24-hour); ValueError when unreadable."""
    phrase = " ".join(text.strip().lower().split())
    if phrase == "noon":
        return "12:00"
    if phrase == "midnight":
        return "00:00"
    match = _CLOCK.match(phrase)
    if not match:
        raise ValueError(text)
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    suffix = (match.group(3) or "").replace(".", "")
    if suffix:
        if not 1 <= hour <= 12:
            raise ValueError(text)
        hour = hour % 12 + (12 if suffix == "pm" else 0)
    if hour > 23 or minute > 59:
        raise ValueError(text)
    return f"{hour:02d}:{minute:02d}"


def hours_text(opens: str, closes: str) -> str:
    return "open 24 hours" if (opens, closes) == ALL_DAY else f"{opens}-{closes}"


# ---------------------------------------------------------------- opening hours


def day_status(source: Source, place_id: int, day: dt.date) -> dict[str, Any]:
    """Hours of one place on one date: {'date', 'weekday', 'hours', 'opens'?, 'closes'?, 'closure'?}."""
    status: dict[str, Any] = {"date": day.isoformat(), "weekday": WEEKDAY_NAMES[day.weekday()]}
    closure = source.query("SELECT reason FROM closures WHERE place_id=? AND date=?", (place_id, day.isoformat()))
    if closure:
        status.update(hours="closed", closure=closure[0]["reason"])
        return status
    rows = source.query("SELECT opens, closes FROM opening_hours WHERE place_id=? AND weekday=?",
                        (place_id, day.weekday()))
    if not rows:
        status["hours"] = "closed"
        return status
    status.update(hours=hours_text(rows[0]["opens"], rows[0]["closes"]), opens=rows[0]["opens"],
                  closes=rows[0]["closes"])
    return status


# ---------------------------------------------------------------- search and nearby


def search_text(place: dict[str, Any], rooms: list[str]) -> str:
    """What a query word is matched against: name, category, cuisine, neighborhood, city, rooms inside."""
    parts = [place["name"], place["category"], place["category"].replace("_", " "), place.get("cuisine") or "",
             place["neighborhood"], place["city"], *rooms]
    return " ".join(p for p in parts if p).casefold()


def query_words(query: str | None) -> list[str]:
    return [w for w in re.split(r"[^\w'&.-]+", (query or "").casefold()) if w]


def _open_filter(where: Where, day: dt.date | None, at: str | None) -> Where:
    """'Open on day (at time)', when a day is given: hours that weekday cover the time, and no closure that date."""
    if day is None:
        return where
    hours = "SELECT place_id FROM opening_hours WHERE weekday=?" + (" AND opens <= ? AND closes > ?" if at is not None else "")
    return where.add(f"id IN ({hours}) AND id NOT IN (SELECT place_id FROM closures WHERE date=?)",
                     day.weekday(), *((at, at) if at is not None else ()), day.isoformat())


def _search_where(
    query: str | None, category: str | None, city: str | None, day: dt.date | None, at: str | None,
    min_rating: float | None, max_price_level: int | None,
) -> tuple[str, list[Any]]:
    where = Where("1=1")
    for word in query_words(query):
        where.add("instr(search_text, ?) > 0", word)
    where.when(category, "category=?").when(city, "city=?").when(min_rating, "rating >= ?")
    where.when(max_price_level, "price_level IS NOT NULL AND price_level <= ?")
    _open_filter(where, day, at)
    return where.sql, where.params


def search(
    source: Source, query: str | None = None, category: str | None = None, city: str | None = None,
    day: dt.date | None = None, at: str | None = None, min_rating: float | None = None,
    max_price_level: int | None = None, limit: int | None = None,
) -> tuple[int, list[dict[str, Any]]]:
    """(how many places match every filter, the first `limit` of them best-rated first).

    A query matches when each of its words occurs somewhere in the place's `search_text`.
    """
    where, params = _search_where(query, category, city, day, at, min_rating, max_price_level)
    count = source.query(f"SELECT COUNT(*) AS n FROM places WHERE {where}", params)[0]["n"]
    rows = source.query(f"SELECT * FROM places WHERE {where} ORDER BY rating DESC, review_count DESC, id"
                        + (f" LIMIT {int(limit)}" if limit is not None else ""), params)
    return count, rows


def nearby_light(
    source: Source, lat: float, lon: float, radius_km: float, category: str | None = None,
    day: dt.date | None = None, at: str | None = None, min_rating: float | None = None,
    exclude_id: int | None = None,
) -> list[dict[str, Any]]:
    """Ids, ratings and distances of places within `radius_km` (straight line) of a point, nearest first.

    A bounding box in SQL keeps far places out; the exact great-circle test decides.
    """
    dlat = radius_km / 110.0
    dlon = radius_km / (110.0 * math.cos(math.radians(lat)))
    where = Where("lat BETWEEN ? AND ? AND lon BETWEEN ? AND ?",
                      params=[lat - dlat, lat + dlat, lon - dlon, lon + dlon])
    where.when(category, "category=?").when(min_rating, "rating >= ?").when(exclude_id, "id != ?")
    _open_filter(where, day, at)
    found = []
    for row in source.query(f"SELECT id, lat, lon, rating FROM places WHERE {where.sql} ORDER BY id", where.params):
        exact = straight_km(lat, lon, row["lat"], row["lon"])
        if exact <= radius_km:
            found.append({"id": row["id"], "rating": row["rating"], "exact_km": exact,
                          "distance_km": round_half_up(exact, 2)})
    return sorted(found, key=lambda r: (r["exact_km"], r["id"]))


def hydrate(source: Source, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Full place rows for light items, in the items' order, keeping their distance fields."""
    if not items:
        return []
    marks = ", ".join("?" * len(items))
    rows = {r["id"]: r for r in source.query(f"SELECT * FROM places WHERE id IN ({marks}) ORDER BY id",
                                             [i["id"] for i in items])}
    return [{**rows[i["id"]], **i} for i in items]


def nearby(
    source: Source, lat: float, lon: float, radius_km: float, category: str | None = None,
    day: dt.date | None = None, at: str | None = None, min_rating: float | None = None,
    exclude_id: int | None = None,
) -> list[dict[str, Any]]:
    """Full rows of every place within the radius, nearest first, each with `exact_km` and `distance_km`."""
    return hydrate(source, nearby_light(source, lat, lon, radius_km, category, day, at, min_rating, exclude_id))
