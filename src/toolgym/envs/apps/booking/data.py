"""Seed data of the booking app: twelve real cities, a schedule of fictional airlines, hotels, and trips.

Everything comes from the seeded `fake` and `rng`, so the database (and every task built on it) is
identical on every machine. Some room types are deliberately sold out for a few nights so that
"the hotel is full" is a real state of the world, not a special case in a tool.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import sqlite3
from dataclasses import dataclass

from faker import Faker

from toolgym.envs import kit
from toolgym.envs.apps.booking.rules import confirmation_code, stay_nights

TEXTS = kit.module_texts(__file__)


@dataclass(frozen=True)
class CitySeed:
    name: str
    country: str
    code: str
    airport: str
    lat: float
    lon: float
    hotel_price_factor: float


CITIES: tuple[CitySeed, ...] = (
    CitySeed("New York", "United States", "JFK", "John F. Kennedy International Airport", 40.64, -73.78, 1.5),
    CitySeed("Los Angeles", "United States", "LAX", "Los Angeles International Airport", 33.94, -118.41, 1.25),
    CitySeed("Chicago", "United States", "ORD", "O'Hare International Airport", 41.97, -87.91, 1.1),
    CitySeed("San Francisco", "United States", "SFO", "San Francisco International Airport", 37.62, -122.38, 1.4),
    CitySeed("Seattle", "United States", "SEA", "Seattle-Tacoma International Airport", 47.45, -122.31, 1.1),
    CitySeed("Miami", "United States", "MIA", "Miami International Airport", 25.79, -80.29, 1.2),
    CitySeed("Boston", "United States", "BOS", "Logan International Airport", 42.36, -71.01, 1.3),
    CitySeed("Denver", "United States", "DEN", "Denver International Airport", 39.86, -104.67, 1.0),
    CitySeed("Austin", "United States", "AUS", "Austin-Bergstrom International Airport", 30.19, -97.67, 0.95),
    CitySeed("Toronto", "Canada", "YYZ", "Toronto Pearson International Airport", 43.68, -79.63, 1.05),
    CitySeed("London", "United Kingdom", "LHR", "Heathrow Airport", 51.47, -0.45, 1.5),
    CitySeed("Paris", "France", "CDG", "Charles de Gaulle Airport", 49.01, 2.55, 1.4),
)

# Undirected city pairs that have service; every other pair has no flights at all.
ROUTES = TEXTS["ROUTES"]

# (code, name, price factor): fictional airlines, so no model "knows" their real fares.
AIRLINES = TEXTS["AIRLINES"]

ROOM_CATALOG = TEXTS["ROOM_CATALOG"]
STAR_BASE_PRICE = {2: 85, 3: 125, 4: 185, 5: 290}
AMENITIES = ("wifi", "breakfast", "pool", "gym", "spa", "parking", "airport shuttle", "pet friendly",
             "restaurant", "bar", "laundry", "rooftop terrace")
NAME_ADJECTIVES = ("Grand", "Royal", "Silver", "Golden", "Harbor", "Union", "Park", "Central", "Riverside",
                   "Maple", "Liberty", "Beacon")
NAME_NOUNS = ("Plaza", "Lodge", "Crown", "Palms", "Lantern", "Meridian", "Pier", "Gardens", "Terrace",
              "Arms", "Court", "Station")

GOOD_COMMENTS = TEXTS["GOOD_COMMENTS"]
MIXED_COMMENTS = TEXTS["MIXED_COMMENTS"]
BAD_COMMENTS = TEXTS["BAD_COMMENTS"]

SEASON_START = dt.date(2026, 3, 2)
SEASON_END = dt.date(2026, 9, 25)
ACTIVE_USERS = 84
SOLD_OUT_BLOCKS = 26


def _miles(a: CitySeed, b: CitySeed) -> float:
    """Great-circle distance; drives flight duration and fare."""
    lat1, lon1, lat2, lon2 = map(math.radians, (a.lat, a.lon, b.lat, b.lon))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 3959 * 2 * math.asin(math.sqrt(h))



def _hhmm(minutes: int) -> str:
    minutes %= 24 * 60
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def seed_booking(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    """Fill every table; the order of draws is fixed, so the result is a pure function of the seeds."""
    with kit.named_rows(db):
        _seed_all(db, fake, rng)


def _seed_all(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    user_ids = kit.insert_population(db)
    cities = _seed_cities(db)
    _seed_flights(db, rng, cities)
    _seed_hotels(db, fake, rng, cities)
    active = sorted(rng.sample(user_ids, ACTIVE_USERS))
    cards = kit.insert_cards(db, rng, active, second_card=0.35)
    occupancy: dict[tuple[int, str], int] = {}
    _seed_sold_out_blocks(db, rng, active, cards, occupancy)
    _seed_trips(db, rng, active, cards, occupancy)
    _seed_reviews(db, rng, active)


def _seed_cities(db: sqlite3.Connection) -> dict[str, CitySeed]:
    for index, city in enumerate(CITIES, start=1):
        db.execute(
            "INSERT INTO cities(id, name, country, airport_code, airport_name) VALUES (?, ?, ?, ?, ?)",
            (index, city.name, city.country, city.code, city.airport),
        )
    return {c.code: c for c in CITIES}


def _seed_flights(db: sqlite3.Connection, rng: random.Random, cities: dict[str, CitySeed]) -> None:
    """Per route pair: a fixed timetable per direction and a handful of trips (out, then back days later)."""
    used_numbers: set[str] = set()
    rows: list[tuple] = []
    for a, b in ROUTES:
        miles = _miles(cities[a], cities[b])
        duration = int(round((miles / 500 + 0.6) * 60 / 5) * 5)
        base_fare = 250 + 0.09 * miles if miles > 2800 else 60 + 0.11 * miles
        carriers = rng.sample(AIRLINES, rng.randint(2, 3))
        timetable: dict[tuple[str, str], list[tuple[str, str, float, int]]] = {}
        for origin, destination in ((a, b), (b, a)):
            slots = sorted(rng.sample(range(6 * 12, 22 * 12), 5))  # 5-minute slots, 06:00-21:55
            entries = []
            for slot in slots:
                code, airline, factor = carriers[rng.randrange(len(carriers))]
                number = f"{code}{rng.randint(100, 2999)}"
                while number in used_numbers:
                    number = f"{code}{rng.randint(100, 2999)}"
                used_numbers.add(number)
                entries.append((number, airline, factor, slot * 5))
            timetable[(origin, destination)] = entries
        for _ in range(5):
            out_leg = (a, b) if rng.random() < 0.5 else (b, a)
            out_day = kit.random_day(rng, SEASON_START, SEASON_END - dt.timedelta(days=11))
            back_day = out_day + dt.timedelta(days=rng.randint(2, 10))
            for (origin, destination), day in ((out_leg, out_day), ((out_leg[1], out_leg[0]), back_day)):
                entries = rng.sample(timetable[(origin, destination)], rng.randint(2, 4))
                prices: set[int] = set()
                for number, airline, factor, depart in sorted(entries, key=lambda e: e[3]):
                    price = int(base_fare * factor * rng.uniform(0.8, 1.35))
                    while price in prices:
                        price += rng.randint(1, 9)
                    prices.add(price)
                    seats = rng.choices([0, rng.randint(1, 3), rng.randint(4, 60)], weights=[5, 15, 80])[0]
                    rows.append((number, airline, origin, destination, day.isoformat(), _hhmm(depart),
                                 _hhmm(depart + duration), duration, price, price + round(price * 0.3), seats))
    seen: set[tuple[str, str]] = set()
    for row in sorted(rows, key=lambda r: (r[4], r[5], r[0])):
        if (row[0], row[4]) in seen:  # two trips of one route may share a day: keep the first copy
            continue
        seen.add((row[0], row[4]))
        db.execute(
            "INSERT INTO flights(flight_number, airline, origin, destination, date, depart_time, arrive_time, "
            "duration_min, price, refundable_price, seats_left) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            row,
        )


def _hotel_name(fake: Faker, rng: random.Random, city: CitySeed, used: set[str]) -> str:
    while True:
        pattern = rng.randrange(6)
        if pattern == 0:
            name = f"The {fake.last_name()} Hotel"
        elif pattern == 1:
            name = f"{fake.last_name()} House {city.name}"
        elif pattern == 2:
            name = f"Hotel {fake.last_name()}"
        elif pattern == 3:
            name = f"{city.name} {rng.choice(NAME_NOUNS)} Inn"
        elif pattern == 4:
            name = f"The {rng.choice(NAME_ADJECTIVES)} {rng.choice(NAME_NOUNS)}"
        else:
            name = f"{rng.choice(NAME_ADJECTIVES)} {rng.choice(NAME_NOUNS)} Suites {city.name}"
        if name not in used:
            used.add(name)
            return name


def _seed_hotels(db: sqlite3.Connection, fake: Faker, rng: random.Random, cities: dict[str, CitySeed]) -> None:
    used: set[str] = set()
    for city_id, city in enumerate(CITIES, start=1):
        ratings = sorted(rng.sample(range(62, 97), rng.randint(4, 5)))  # distinct within a city
        stars_list = sorted(rng.choices([2, 3, 4, 5], weights=[2, 4, 4, 2], k=len(ratings)))
        for rating, stars in zip(ratings, stars_list, strict=True):
            cur = db.execute(
                "INSERT INTO hotels(city_id, name, address, stars, rating, review_count, amenities) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (city_id, _hotel_name(fake, rng, city, used), fake.street_address(), stars, rating / 10,
                 rng.randint(40, 2400), ", ".join(sorted(rng.sample(AMENITIES, rng.randint(3, 6))))),
            )
            hotel_id = cur.lastrowid
            catalog = sorted(rng.sample(ROOM_CATALOG, rng.randint(2, 4)), key=lambda r: r[2])
            prices: set[int] = set()
            for name, max_guests, factor in catalog:
                price = int(STAR_BASE_PRICE[stars] * city.hotel_price_factor * factor * rng.uniform(0.9, 1.1))
                while price in prices:
                    price += 3
                prices.add(price)
                db.execute(
                    "INSERT INTO room_types(hotel_id, name, max_guests, price_per_night, "
                    "refundable_price_per_night, total_rooms) VALUES (?, ?, ?, ?, ?, ?)",
                    (hotel_id, name, max_guests, price, price + round(price * 0.15), rng.randint(1, 4)),
                )


def _room_is_free(occupancy: dict[tuple[int, str], int], room: sqlite3.Row, check_in: str, check_out: str) -> bool:
    return all(occupancy.get((room["id"], night), 0) < room["total_rooms"] for night in stay_nights(check_in, check_out))


def _occupy(occupancy: dict[tuple[int, str], int], room_id: int, check_in: str, check_out: str) -> None:
    for night in stay_nights(check_in, check_out):
        occupancy[(room_id, night)] = occupancy.get((room_id, night), 0) + 1


@dataclass
class _Pending:
    """A booking drawn but not yet inserted: rows go in ordered by booking date, so ids grow with time."""

    table: str
    booked_on: str
    values: dict


def _status(rng: random.Random, booked_on: dt.date, starts: dt.date) -> tuple[str, str | None]:
    if rng.random() < 0.14:
        cancelled = booked_on + dt.timedelta(days=rng.randint(1, max(1, (starts - booked_on).days - 1)))
        return "cancelled", min(cancelled, starts - dt.timedelta(days=1)).isoformat()
    return "confirmed", None


def _hotel_booking(
    rng: random.Random, user_id: int, card: int, room: sqlite3.Row, check_in: dt.date, nights: int, guests: int,
    confirmed: bool = False,
) -> _Pending:
    refundable = rng.random() < 0.5
    booked_on = check_in - dt.timedelta(days=rng.randint(4, 70))
    status, cancelled_on = ("confirmed", None) if confirmed else _status(rng, booked_on, check_in)
    price = room["refundable_price_per_night"] if refundable else room["price_per_night"]
    return _Pending("hotel_reservations", booked_on.isoformat(), {
        "user_id": user_id, "hotel_id": room["hotel_id"], "room_type_id": room["id"],
        "check_in": check_in.isoformat(), "check_out": (check_in + dt.timedelta(days=nights)).isoformat(),
        "nights": nights, "guests": guests, "refundable": int(refundable), "total_price": price * nights,
        "payment_method_id": card, "status": status, "booked_on": booked_on.isoformat(),
        "cancelled_on": cancelled_on,
    })


def _seed_sold_out_blocks(
    db: sqlite3.Connection, rng: random.Random, active: list[int], cards: dict[int, int],
    occupancy: dict[tuple[int, str], int],
) -> None:
    """Fill every room of some room types for a few nights (an event in town): the 'hotel full' state."""
    rooms = db.execute("SELECT * FROM room_types ORDER BY id").fetchall()
    pending: list[_Pending] = []
    for room in rng.sample(rooms, SOLD_OUT_BLOCKS):
        check_in = kit.random_day(rng, dt.date(2026, 4, 6), dt.date(2026, 9, 5))
        nights = rng.randint(3, 6)
        for _ in range(room["total_rooms"]):
            user_id = rng.choice(active)
            guests = rng.randint(1, room["max_guests"])
            pending.append(_hotel_booking(rng, user_id, cards[user_id], room, check_in, nights, guests, confirmed=True))
            _occupy(occupancy, room["id"], check_in.isoformat(), (check_in + dt.timedelta(days=nights)).isoformat())
    _insert_pending(db, pending)


def _seed_trips(
    db: sqlite3.Connection, rng: random.Random, active: list[int], cards: dict[int, int],
    occupancy: dict[tuple[int, str], int],
) -> None:
    """Each active user flies somewhere 1-3 times, often with a hotel at the destination."""
    flights = db.execute("SELECT * FROM flights ORDER BY id").fetchall()
    city_of = {r["airport_code"]: r["id"] for r in db.execute("SELECT id, airport_code FROM cities ORDER BY id")}
    rooms_by_city: dict[int, list[sqlite3.Row]] = {}
    for room in db.execute(
        "SELECT r.*, h.city_id FROM room_types r JOIN hotels h ON h.id = r.hotel_id ORDER BY r.id"
    ).fetchall():
        rooms_by_city.setdefault(room["city_id"], []).append(room)
    pending: list[_Pending] = []
    for user_id in active:
        for _ in range(rng.randint(1, 3)):
            flight = rng.choice(flights)
            passengers = rng.choices([1, 2, 3], weights=[6, 3, 1])[0]
            day = dt.date.fromisoformat(flight["date"])
            refundable = rng.random() < 0.5
            booked_on = day - dt.timedelta(days=rng.randint(3, 60))
            status, cancelled_on = _status(rng, booked_on, day)
            pending.append(_Pending("flight_bookings", booked_on.isoformat(), {
                "user_id": user_id, "flight_id": flight["id"], "passengers": passengers,
                "refundable": int(refundable),
                "total_price": (flight["refundable_price"] if refundable else flight["price"]) * passengers,
                "payment_method_id": cards[user_id], "status": status, "booked_on": booked_on.isoformat(),
                "cancelled_on": cancelled_on,
            }))
            if rng.random() < 0.65:
                options = [r for r in rooms_by_city[city_of[flight["destination"]]] if r["max_guests"] >= passengers]
                room = rng.choice(options)
                nights = rng.randint(1, 5)
                check_out = (day + dt.timedelta(days=nights)).isoformat()
                if _room_is_free(occupancy, room, day.isoformat(), check_out):
                    booking = _hotel_booking(rng, user_id, cards[user_id], room, day, nights, passengers)
                    pending.append(booking)
                    if booking.values["status"] == "confirmed":
                        _occupy(occupancy, room["id"], day.isoformat(), check_out)
    _insert_pending(db, pending)


def _insert_pending(db: sqlite3.Connection, pending: list[_Pending]) -> None:
    for table in ("flight_bookings", "hotel_reservations"):
        rows = sorted((p for p in pending if p.table == table), key=lambda p: p.booked_on)
        start = db.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0]
        prefix = "F" if table == "flight_bookings" else "H"
        for offset, item in enumerate(rows, start=1):
            rowid = start + offset
            values = {"id": rowid, "code": confirmation_code(prefix, rowid), **item.values}
            columns = ", ".join(values)
            marks = ", ".join("?" for _ in values)
            db.execute(f"INSERT INTO {table}({columns}) VALUES ({marks})", tuple(values.values()))


def _seed_reviews(db: sqlite3.Connection, rng: random.Random, active: list[int]) -> None:
    """Reviews of earlier stays (before this season), written in the months before it."""
    hotels = [r[0] for r in db.execute("SELECT id FROM hotels ORDER BY id")]
    seen: set[tuple[int, int]] = set()
    rows = []
    for _ in range(90):
        hotel_id, user_id = rng.choice(hotels), rng.choice(active)
        if (hotel_id, user_id) in seen:
            continue
        seen.add((hotel_id, user_id))
        rating = rng.choices([5, 4, 3, 2, 1], weights=[35, 35, 15, 10, 5])[0]
        pool = GOOD_COMMENTS if rating >= 4 else MIXED_COMMENTS if rating == 3 else BAD_COMMENTS
        created = kit.random_day(rng, dt.date(2025, 10, 1), dt.date(2026, 3, 20)).isoformat()
        rows.append((hotel_id, user_id, rating, rng.choice(pool), created))
    for row in sorted(rows, key=lambda r: (r[4], r[0], r[1])):
        db.execute("INSERT INTO reviews(hotel_id, user_id, rating, comment, created_on) VALUES (?, ?, ?, ?, ?)", row)
