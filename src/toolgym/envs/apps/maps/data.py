"""Seed data of the maps app: ~190 places in four cities, their hours and closures, and the shared people's
homes, reviews, saved lists and visit timelines.

Everything comes from the seeded `rng` in a fixed call order (names and streets are curated lists in
content.py, so `fake` is not needed), and the database is identical on every build. Visits only happen while a place is open, so a timeline never contradicts
the opening hours. Reviews and saved lists are all dated before 2026-04-01 (the earliest task day),
so no task sees data "from the future"; visits run from March to mid-September and the timeline tool
shows only days up to CURRENT_DATE.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from typing import Any

from faker import Faker

from toolgym.envs.apps.maps.content import (
    BAKERIES,
    BARS,
    CAFE_PREFIXES,
    CAFE_SUFFIXES,
    CUISINE_NAMES,
    CUSTOM_LISTS,
    GAS_BRANDS,
    GYM_BRANDS,
    HQ_ROOMS,
    LIST_NOTES,
    MUSEUMS,
    NEIGHBORHOODS,
    OFFICES,
    PARKS,
    PHARMACY_BRANDS,
    PLACE_COUNTS,
    REVIEW_KIND,
    REVIEW_TEXT,
    SUPERMARKET_BRANDS,
    Neighborhood,
)
from toolgym.envs.apps.maps.rules import search_text, straight_km
from toolgym.envs.people import population

VISIT_START = dt.date(2026, 3, 1)
VISIT_END = dt.date(2026, 9, 12)
VISIT_DAYS_PER_USER = 34
HOLIDAYS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("2026-05-25", "Memorial Day", ("library", "office", "museum")),
    ("2026-07-03", "Independence Day (observed)", ("library", "office")),
    ("2026-07-04", "Independence Day", ("museum", "library", "bakery")),
    ("2026-09-07", "Labor Day", ("library", "office")),
)
CLOSURE_REASONS = ("private event", "staff training", "maintenance", "inventory day", "plumbing repairs",
                   "closed for a wedding")

# (slot, earliest arrival, latest arrival, categories with weights)
SLOTS: tuple[tuple[str, int, int, tuple[tuple[str, int], ...]], ...] = (
    ("morning", 7 * 60, 10 * 60, (("cafe", 5), ("bakery", 2), ("gym", 2), ("gas_station", 1))),
    ("midday", 11 * 60 + 30, 15 * 60, (("restaurant", 5), ("cafe", 2), ("pharmacy", 2), ("supermarket", 2),
                                       ("museum", 1), ("park", 1), ("library", 1))),
    ("evening", 17 * 60 + 30, 21 * 60, (("restaurant", 5), ("bar", 3), ("supermarket", 2), ("gym", 1),
                                        ("pharmacy", 1))),
)
STAY_MINUTES = {
    "cafe": (20, 55), "bakery": (10, 25), "restaurant": (45, 100), "bar": (60, 140), "museum": (80, 170),
    "park": (30, 90), "pharmacy": (10, 20), "supermarket": (20, 45), "gym": (45, 90), "library": (30, 110),
    "gas_station": (5, 15),
}


def hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def minutes_of(text: str) -> int:
    return int(text[:2]) * 60 + int(text[3:])


def _later(time: str, hours: int) -> str:
    return min(hhmm(minutes_of(time) + hours * 60), "24:00")


def weekly_hours(category: str, rng: random.Random) -> dict[int, tuple[str, str]]:
    """Weekday -> (opens, closes) for a kind of place; a missing weekday means closed all day."""
    week: dict[int, tuple[str, str]] = {}
    if category == "restaurant":
        opens, closes = rng.choice(("11:00", "11:30", "12:00", "17:00")), rng.choice(("21:00", "21:30", "22:00"))
        closed = rng.choice(((), (0,), (0,), (0, 1), (6,)))
        for day in range(7):
            week[day] = (opens, _later(closes, 1) if day in (4, 5) else closes)
    elif category == "cafe":
        opens = rng.choice(("06:30", "07:00", "07:30", "08:00"))
        closes = rng.choice(("16:00", "17:00", "18:00", "19:00"))
        closed = rng.choice(((), (), (6,), (0,)))
        for day in range(7):
            week[day] = (_later(opens, 1), closes) if day >= 5 else (opens, closes)
    elif category == "bakery":
        opens, closes = rng.choice(("06:00", "06:30", "07:00")), rng.choice(("14:00", "15:00", "16:00"))
        closed = rng.choice(((0,), (0, 1), ()))
        week = dict.fromkeys(range(7), (opens, closes))
    elif category == "bar":
        opens, closes = rng.choice(("15:00", "16:00", "17:00")), rng.choice(("23:00", "24:00"))
        closed = rng.choice(((), (0,), (0, 1)))
        for day in range(7):
            week[day] = (opens, "24:00") if day in (4, 5) else (opens, closes)
    elif category == "museum":
        opens, closes = rng.choice(("10:00", "10:00", "11:00")), rng.choice(("17:00", "17:00", "18:00"))
        closed = rng.choice(((0,), (0,), (0, 1), (1,), ()))
        late = rng.choice((3, 4))
        for day in range(7):
            week[day] = (opens, rng.choice(("20:00", "21:00"))) if day == late else (opens, closes)
    elif category == "park":
        opens, closes = rng.choice((("06:00", "22:00"), ("05:00", "23:00"), ("07:00", "20:00")))
        closed = ()
        week = dict.fromkeys(range(7), (opens, closes))
    elif category == "pharmacy":
        if rng.random() < 0.2:
            return dict.fromkeys(range(7), ("00:00", "24:00"))
        opens, closes = rng.choice(("08:00", "08:00", "09:00")), rng.choice(("20:00", "21:00", "22:00"))
        sunday = rng.choice((("10:00", "17:00"), ("11:00", "16:00"), None))
        closed = () if sunday else (6,)
        for day in range(7):
            week[day] = (opens, closes) if day < 5 else ("09:00", "18:00") if day == 5 else (sunday or ("", ""))
    elif category == "gas_station":
        if rng.random() < 0.4:
            return dict.fromkeys(range(7), ("00:00", "24:00"))
        closed = ()
        week = dict.fromkeys(range(7), (rng.choice(("05:00", "06:00")), rng.choice(("22:00", "23:00"))))
    elif category == "supermarket":
        closed = ()
        week = dict.fromkeys(range(7), (rng.choice(("07:00", "08:00")), rng.choice(("21:00", "22:00", "23:00"))))
    elif category == "gym":
        opens, closes = rng.choice(("05:00", "05:30", "06:00")), rng.choice(("22:00", "23:00"))
        closed = ()
        for day in range(7):
            week[day] = ("07:00", "20:00") if day >= 5 else (opens, closes)
    elif category == "library":
        closed = rng.choice(((6,), (5, 6)))
        for day in range(7):
            week[day] = ("10:00", "20:00") if day < 4 else ("09:00", "17:00")
    else:  # office
        closed = (5, 6)
        week = dict.fromkeys(range(7), ("07:00", "20:00"))
    return {day: hours for day, hours in week.items() if day not in closed}


class _Seeder:
    """Builds the rows in a fixed order; keeps what later steps need (places, hours, homes) in memory."""

    def __init__(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        self.db, self.fake, self.rng = db, fake, rng
        self.places: list[dict[str, Any]] = []
        self.hours: dict[int, dict[int, tuple[str, str]]] = {}
        self.closed_on: set[tuple[int, str]] = set()
        self.addresses: set[str] = set()
        self.users: list[dict[str, Any]] = []

    # ------------------------------------------------------------ places

    def _address(self, hood: Neighborhood, number: int | None = None, street: str | None = None) -> str:
        while True:
            num = number or self.rng.randint(1, 420)
            road = street or self.rng.choice(hood.streets)
            text = f"{num} {road}, {hood.city}, MA {hood.zip_code}"
            if text not in self.addresses:
                self.addresses.add(text)
                return text
            number = None

    def _point(self, hood: Neighborhood, spread: float = 1.0) -> tuple[float, float]:
        lat = hood.lat + self.rng.uniform(-0.0045, 0.0045) * spread
        lon = hood.lon + self.rng.uniform(-0.006, 0.006) * spread
        return round(lat, 5), round(lon, 5)

    def _add_place(self, name: str, category: str, hood: Neighborhood, cuisine: str | None = None,
                   address: str | None = None, point: tuple[float, float] | None = None) -> dict[str, Any]:
        lat, lon = point or self._point(hood)
        rating = round(self.rng.uniform(3.1, 4.9), 1)
        price = {"restaurant": self.rng.randint(1, 4), "cafe": self.rng.randint(1, 2), "bakery": self.rng.randint(1, 2),
                 "bar": self.rng.randint(2, 3)}.get(category)
        place = {
            "id": len(self.places) + 1, "name": name, "category": category, "cuisine": cuisine,
            "address": address or self._address(hood), "neighborhood": hood.name, "city": hood.city,
            "lat": lat, "lon": lon, "phone": f"+1-617-555-{self.rng.randint(1000, 9999)}", "rating": rating,
            "review_count": self.rng.randint(8, 2400), "price_level": price,
        }
        self.places.append(place)
        return place

    def make_places(self) -> None:
        rng = self.rng
        hoods = {h.name: h for h in NEIGHBORHOODS}
        for name, hood_name, number, street in OFFICES:
            hood = hoods[hood_name]
            self._add_place(name, "office", hood, address=self._address(hood, number, street),
                            point=(round(hood.lat + 0.0004, 5), round(hood.lon - 0.0006, 5)))
        used: set[str] = set()
        pools = {
            "bakery": list(BAKERIES), "bar": list(BARS), "museum": list(MUSEUMS), "park": list(PARKS),
        }
        cafes = [f"{p} {rng.choice(CAFE_SUFFIXES)}" for p in CAFE_PREFIXES]
        cuisines = {k: list(v) for k, v in CUISINE_NAMES.items()}
        museum_hoods = set(rng.sample([h.name for h in NEIGHBORHOODS], len(MUSEUMS)))
        for hood in NEIGHBORHOODS:
            for category, (low, high) in PLACE_COUNTS.items():
                count = 1 if category == "museum" and hood.name in museum_hoods else (
                    0 if category == "museum" else rng.randint(low, high))
                for _ in range(count):
                    cuisine = None
                    if category == "restaurant":
                        open_cuisines = sorted(k for k, v in cuisines.items() if v)
                        if not open_cuisines:
                            continue
                        cuisine = rng.choice(open_cuisines)
                        name = cuisines[cuisine].pop(rng.randrange(len(cuisines[cuisine])))
                    elif category == "cafe":
                        if not cafes:
                            continue
                        name = cafes.pop(rng.randrange(len(cafes)))
                    elif category in pools:
                        if not pools[category]:
                            continue
                        name = pools[category].pop(rng.randrange(len(pools[category])))
                    elif category == "library":
                        name = f"{hood.city} Public Library - {hood.name} Branch"
                    else:
                        brands = {"pharmacy": PHARMACY_BRANDS, "gas_station": GAS_BRANDS,
                                  "supermarket": SUPERMARKET_BRANDS, "gym": GYM_BRANDS}[category]
                        choices = [b for b in brands if f"{b} {hood.name}" not in used]
                        name = f"{rng.choice(choices)} {hood.name}"
                    used.add(name)
                    self._add_place(name, category, hood, cuisine=cuisine)
        for place in self.places:
            rooms = [alias for alias, _ in HQ_ROOMS] if place["id"] == 1 else []
            place["search_text"] = search_text(place, rooms)
        columns = ("id", "name", "category", "cuisine", "address", "neighborhood", "city", "lat", "lon", "phone",
                   "rating", "review_count", "price_level", "search_text")
        self.db.executemany(
            f"INSERT INTO places({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            [tuple(p[c] for c in columns) for p in self.places])
        hq = self.places[0]  # the first office: the meeting rooms of mail invites are inside it
        self.db.executemany("INSERT INTO place_aliases(place_id, alias, detail) VALUES (?, ?, ?)",
                            [(hq["id"], alias, detail) for alias, detail in HQ_ROOMS])

    def make_hours(self) -> None:
        rows = []
        for place in self.places:
            week = weekly_hours(place["category"], self.rng)
            self.hours[place["id"]] = week
            rows += [(place["id"], day, opens, closes) for day, (opens, closes) in sorted(week.items())]
        self.db.executemany("INSERT INTO opening_hours(place_id, weekday, opens, closes) VALUES (?, ?, ?, ?)", rows)
        closures: list[tuple[int, str, str]] = []
        for date, reason, categories in HOLIDAYS:
            for place in self.places:
                if place["category"] in categories and self.rng.random() < 0.85:
                    closures.append((place["id"], date, reason))
        start = dt.date(2026, 4, 1)
        for _ in range(45):
            place = self.places[self.rng.randrange(len(self.places))]
            date = (start + dt.timedelta(days=self.rng.randint(0, 165))).isoformat()
            if (place["id"], date) not in {(c[0], c[1]) for c in closures}:
                closures.append((place["id"], date, self.rng.choice(CLOSURE_REASONS)))
        closures.sort(key=lambda c: (c[1], c[0]))
        self.closed_on = {(c[0], c[1]) for c in closures}
        self.db.executemany("INSERT INTO closures(place_id, date, reason) VALUES (?, ?, ?)", closures)

    # ------------------------------------------------------------ people

    def make_users(self) -> None:
        offices = [p for p in self.places if p["category"] == "office"]
        for index, person in enumerate(population(), start=1):
            hood = self.rng.choice(NEIGHBORHOODS)
            lat, lon = self._point(hood, spread=1.3)
            work = offices[0] if self.rng.random() < 0.7 else offices[1]
            user = {
                "id": index, "username": person.username, "name": person.name, "email": person.email,
                "home_address": self._address(hood), "home_neighborhood": hood.name, "home_city": hood.city,
                "home_lat": lat, "home_lon": lon, "work_place_id": work["id"],
            }
            self.users.append(user)
        columns = tuple(self.users[0])
        self.db.executemany(
            f"INSERT INTO users({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            [tuple(u[c] for c in columns) for u in self.users])

    def make_reviews(self) -> None:
        rows = []
        start = dt.date(2025, 10, 1)
        for place in self.places:
            if place["category"] == "office":
                continue
            authors = self.rng.sample(self.users, self.rng.randint(2, 6))
            for author in sorted(authors, key=lambda u: u["id"]):
                stars = max(1, min(5, round(self.rng.gauss(place["rating"], 0.9))))
                text = self.rng.choice(REVIEW_TEXT[REVIEW_KIND[place["category"]]][stars])
                date = (start + dt.timedelta(days=self.rng.randint(0, 181))).isoformat()
                rows.append((place["id"], author["id"], stars, text, date))
        rows.sort(key=lambda r: (r[4], r[0], r[1]))
        self.db.executemany("INSERT INTO reviews(place_id, user_id, stars, text, created_on) VALUES (?, ?, ?, ?, ?)",
                            rows)

    def _near(self, lat: float, lon: float, categories: tuple[str, ...], count: int) -> list[dict[str, Any]]:
        ranked = sorted((p for p in self.places if p["category"] in categories),
                        key=lambda p: (straight_km(lat, lon, p["lat"], p["lon"]), p["id"]))
        return ranked[:count]

    def make_lists(self) -> None:
        list_rows: list[tuple[int, int, str, str, str]] = []
        place_rows: list[tuple[int, int, str, str]] = []
        everyday = ("restaurant", "cafe", "bakery", "bar", "museum", "park")
        for user in self.users:
            names = ["Favorites"]
            if self.rng.random() < 0.65:
                names.append("Want to go")
            names += self.rng.sample(sorted(CUSTOM_LISTS), self.rng.choice((0, 1, 1, 2)))
            for name in names:
                list_id = len(list_rows) + 1
                created = dt.date(2025, 11, 1) + dt.timedelta(days=self.rng.randint(0, 120))
                description = {"Favorites": "Places I love", "Want to go": "Places to try"}.get(name, "")
                list_rows.append((list_id, user["id"], name, description, created.isoformat()))
                categories = CUSTOM_LISTS.get(name, everyday)
                pool = self._near(user["home_lat"], user["home_lon"], categories, 14)
                if name == "Work lunches":
                    office = self.places[user["work_place_id"] - 1]
                    pool = self._near(office["lat"], office["lon"], categories, 10)
                elif name == "Want to go":
                    pool = [p for p in self.places if p["category"] in everyday]
                for place in sorted(self.rng.sample(pool, min(len(pool), self.rng.randint(2, 6))),
                                    key=lambda p: p["id"]):
                    note = self.rng.choice(LIST_NOTES) if self.rng.random() < 0.3 else ""
                    saved = created + dt.timedelta(days=self.rng.randint(0, (dt.date(2026, 3, 31) - created).days))
                    place_rows.append((list_id, place["id"], note, saved.isoformat()))
        self.db.executemany(
            "INSERT INTO saved_lists(id, user_id, name, description, created_on) VALUES (?, ?, ?, ?, ?)", list_rows)
        self.db.executemany("INSERT INTO saved_places(list_id, place_id, note, saved_on) VALUES (?, ?, ?, ?)",
                            place_rows)

    # ------------------------------------------------------------ timeline

    def _fits(self, place: dict[str, Any], day: dt.date, arrive: int, stay: int) -> bool:
        hours = self.hours[place["id"]].get(day.weekday())
        if hours is None or (place["id"], day.isoformat()) in self.closed_on:
            return False
        return minutes_of(hours[0]) <= arrive and arrive + stay <= minutes_of(hours[1])

    def make_visits(self) -> None:
        rows: list[tuple[int, int, str, str, str]] = []
        span = (VISIT_END - VISIT_START).days + 1
        by_category: dict[str, list[dict[str, Any]]] = {}
        for place in self.places:
            by_category.setdefault(place["category"], []).append(place)
        for user in self.users:
            office = self.places[user["work_place_id"] - 1]
            for offset in sorted(self.rng.sample(range(span), VISIT_DAYS_PER_USER)):
                day = VISIT_START + dt.timedelta(days=offset)
                workday = day.weekday() < 5
                count = self.rng.choice((1, 1, 2, 2, 3))
                slots = sorted(self.rng.sample(range(len(SLOTS)), count))
                busy_until = 0
                for slot_index in slots:
                    _, earliest, latest, weighted = SLOTS[slot_index]
                    near_work = workday and slot_index < 2
                    anchor = (office["lat"], office["lon"]) if near_work else (user["home_lat"], user["home_lon"])
                    category = self.rng.choices([c for c, _ in weighted], weights=[w for _, w in weighted])[0]
                    ranked = sorted(by_category[category],
                                    key=lambda p: (straight_km(anchor[0], anchor[1], p["lat"], p["lon"]), p["id"]))
                    for _attempt in range(6):
                        place = self.rng.choices(ranked[:5], weights=[5, 4, 3, 2, 1][:len(ranked[:5])])[0]
                        arrive = earliest + 5 * self.rng.randint(0, (latest - earliest) // 5)
                        stay = 5 * self.rng.randint(STAY_MINUTES[category][0] // 5, STAY_MINUTES[category][1] // 5)
                        if arrive >= busy_until and self._fits(place, day, arrive, stay):
                            busy_until = arrive + stay + 15
                            rows.append((user["id"], place["id"], day.isoformat(), hhmm(arrive), hhmm(arrive + stay)))
                            break
        self.db.executemany("INSERT INTO visits(user_id, place_id, date, arrived, departed) VALUES (?, ?, ?, ?, ?)",
                            rows)


def seed_maps(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    """Fill every table; the order of calls fixes what `rng` draws, so keep it."""
    seeder = _Seeder(db, fake, rng)
    seeder.make_places()
    seeder.make_hours()
    seeder.make_users()
    seeder.make_reviews()
    seeder.make_lists()
    seeder.make_visits()
