"""Seed data of the homes app: ten US cities, their agents and listings, and what the shared users did.

Everything comes from the seeded `fake` and `rng`, so the database (and every task built on it) is
identical on every machine. Listings were listed before 2026-04-01 (the first task date) and their
status history ends by then; tours spread over March to September, so whether one is past or
upcoming depends on the task's CURRENT_DATE. A few open-house days fill most slots of a listing,
so "that time is taken" is a real state of the world.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from dataclasses import dataclass

from faker import Faker

from toolgym.envs import kit
from toolgym.envs.apps.homes.rules import TOUR_SLOTS, min_offer


@dataclass(frozen=True)
class CitySeed:
    name: str
    state: str
    zip_prefix: str
    price_per_sqft: int  # typical asking price per square foot


CITIES: tuple[CitySeed, ...] = (
    CitySeed("Austin", "TX", "787", 290),
    CitySeed("Denver", "CO", "802", 330),
    CitySeed("Seattle", "WA", "981", 460),
    CitySeed("Portland", "OR", "972", 340),
    CitySeed("Nashville", "TN", "372", 300),
    CitySeed("Raleigh", "NC", "276", 250),
    CitySeed("Phoenix", "AZ", "850", 260),
    CitySeed("Minneapolis", "MN", "554", 220),
    CitySeed("Columbus", "OH", "432", 200),
    CitySeed("Sacramento", "CA", "958", 310),
)

# (name, email domain): fictional brokerages, so no model "knows" their agents.
BROKERAGES: tuple[tuple[str, str], ...] = (
    ("Keystone Realty", "keystonerealty.com"),
    ("Summit Home Group", "summithomegroup.com"),
    ("Blue Door Properties", "bluedoorproperties.com"),
    ("Hearthstone Realtors", "hearthstonerealtors.com"),
    ("Northgate Real Estate", "northgatere.com"),
    ("Cedar & Pine Realty", "cedarpinerealty.com"),
    ("Lighthouse Homes", "lighthousehomes.com"),
    ("Open Gate Realty", "opengaterealty.com"),
)

# home_type: (weight, sqft range, beds range, year range, price factor)
TYPES: dict[str, tuple[int, tuple[int, int], tuple[int, int], tuple[int, int], float]] = {
    "house": (50, (1100, 3800), (2, 6), (1925, 2025), 1.0),
    "condo": (22, (550, 1600), (1, 3), (1965, 2025), 1.05),
    "townhouse": (20, (1100, 2400), (2, 4), (1980, 2025), 0.95),
    "multi_family": (8, (1800, 4200), (3, 8), (1910, 2015), 0.85),
}
TREE_STREETS = ("Maple", "Oak", "Cedar", "Elm", "Willow", "Birch", "Aspen", "Juniper", "Magnolia", "Sycamore",
                "Hickory", "Spruce", "Laurel", "Chestnut", "Dogwood", "Cypress")
SUFFIXES = ("St", "Ave", "Rd", "Ln", "Dr", "Ct", "Way", "Blvd", "Pl", "Ter")
FEATURES = ("an updated kitchen", "hardwood floors", "a fenced backyard", "a two-car garage", "vaulted ceilings",
            "a sunny deck", "new windows", "a finished basement", "quartz countertops", "a walk-in closet",
            "mountain views", "a covered patio", "solar panels", "an open floor plan", "a home office")
TYPE_WORDS = {"house": "home", "condo": "condo", "townhouse": "townhouse", "multi_family": "multi-family property"}

LISTINGS_PER_CITY = (22, 28)
AGENTS_PER_CITY = 4
ACTIVE_USERS = 84
SEASON_START = dt.date(2026, 3, 2)  # first seeded tour
SEASON_END = dt.date(2026, 9, 28)  # last seeded tour
HISTORY_END = dt.date(2026, 3, 31)  # every listing event, save, search and offer happened by then
OPEN_HOUSE_DAYS = 30



def seed_homes(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    """Fill every table; the order of draws is fixed, so the result is a pure function of the seeds."""
    with kit.named_rows(db):
        _seed_all(db, fake, rng)


def _seed_all(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    user_ids = kit.insert_population(db)
    _seed_cities(db)
    agents = _seed_agents(db, fake, rng)
    listings = _seed_listings(db, fake, rng, agents)
    active = sorted(rng.sample(user_ids, ACTIVE_USERS))
    targets = {u: sorted(rng.sample(range(1, len(CITIES) + 1), rng.choice([1, 1, 2]))) for u in active}
    _seed_saved_homes(db, rng, active, targets, listings)
    _seed_saved_searches(db, rng, active, targets)
    _seed_tours(db, rng, active, targets, listings)
    _seed_offers(db, rng, active, targets, listings)


def _seed_cities(db: sqlite3.Connection) -> None:
    for index, city in enumerate(CITIES, start=1):
        db.execute("INSERT INTO cities(id, name, state) VALUES (?, ?, ?)", (index, city.name, city.state))


def _seed_agents(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> dict[int, list[int]]:
    """Four agents per city, each with a brokerage, a 1-5 rating and contact details."""
    by_city: dict[int, list[int]] = {}
    used_emails: set[str] = set()
    for city_id in range(1, len(CITIES) + 1):
        for _ in range(AGENTS_PER_CITY):
            first, last = fake.first_name(), fake.last_name()
            brokerage, domain = BROKERAGES[rng.randrange(len(BROKERAGES))]
            email = f"{first}.{last}@{domain}".lower().replace("'", "")
            while email in used_emails:
                email = f"{first}.{last}{rng.randint(2, 99)}@{domain}".lower().replace("'", "")
            used_emails.add(email)
            cur = db.execute(
                "INSERT INTO agents(name, brokerage, city_id, phone, email, rating, review_count, years_experience) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (f"{first} {last}", brokerage, city_id,
                 f"+1-{rng.randint(200, 989)}-{rng.randint(200, 989)}-{rng.randint(1000, 9999)}", email,
                 round(rng.uniform(3.5, 5.0), 1), rng.randint(3, 260), rng.randint(1, 32)),
            )
            by_city.setdefault(city_id, []).append(int(cur.lastrowid))
    return by_city


def _address(fake: Faker, rng: random.Random, home_type: str, used: set[str]) -> str:
    while True:
        street = rng.choice(TREE_STREETS) if rng.random() < 0.5 else fake.last_name()
        address = f"{rng.randint(100, 9899)} {street} {rng.choice(SUFFIXES)}"
        if home_type == "condo":
            address += f" Unit {rng.randint(1, 24)}{rng.choice('ABCD')}"
        if address not in used:
            used.add(address)
            return address


def _baths(beds: int, rng: random.Random) -> float:
    return max(1.0, min(5.0, round((beds * 0.75 + rng.choice([-0.5, 0, 0, 0.5])) * 2) / 2))


def _seed_listings(
    db: sqlite3.Connection, fake: Faker, rng: random.Random, agents: dict[int, list[int]]
) -> list[dict]:
    """Listings per city with distinct prices, and their price history (listed, cuts, pending, sold)."""
    used_addresses: set[str] = set()
    names = list(TYPES)
    weights = [TYPES[t][0] for t in names]
    listings: list[dict] = []
    for city_id, city in enumerate(CITIES, start=1):
        prices: set[int] = set()
        city_agents = agents[city_id]
        agent_weights = [rng.randint(1, 4) for _ in city_agents]
        for _ in range(rng.randint(*LISTINGS_PER_CITY)):
            home_type = rng.choices(names, weights=weights)[0]
            _, (lo, hi), (min_beds, max_beds), (old, new), factor = TYPES[home_type]
            sqft = rng.randint(lo // 10, hi // 10) * 10
            beds = max(min_beds, min(max_beds, round(sqft / 600 + rng.uniform(-0.7, 0.7))))
            ppsf = city.price_per_sqft * factor * rng.uniform(0.75, 1.3)
            price = round(sqft * ppsf / 1000) * 1000
            while price in prices:
                price += 1000
            prices.add(price)
            status = rng.choices(["active", "pending", "sold"], weights=[70, 14, 16])[0]
            pending_on = sold_on = sold_price = None
            if status == "sold":
                listed = kit.random_day(rng, dt.date(2025, 11, 3), dt.date(2026, 2, 10))
                pending_on = listed + dt.timedelta(days=rng.randint(14, 60))
                sold_on = min(pending_on + dt.timedelta(days=rng.randint(20, 45)), HISTORY_END)
            elif status == "pending":
                listed = kit.random_day(rng, dt.date(2026, 1, 5), dt.date(2026, 3, 20))
                pending_on = min(listed + dt.timedelta(days=rng.randint(7, 50)), HISTORY_END - dt.timedelta(days=1))
            else:
                listed = kit.random_day(rng, dt.date(2026, 1, 5), dt.date(2026, 3, 25))
            history = [(listed, "listed", price)]
            cut_day = listed + dt.timedelta(days=rng.randint(10, 40))
            if rng.random() < 0.35 and cut_day < (pending_on or HISTORY_END):
                old_price = price
                price = round(price * rng.uniform(0.93, 0.98) / 1000) * 1000
                while price in prices:
                    price -= 1000
                prices.discard(old_price)
                prices.add(price)
                history.append((cut_day, "price_change", price))
            if pending_on is not None:
                history.append((pending_on, "pending", price))
            if sold_on is not None:
                sold_price = round(price * rng.uniform(0.96, 1.04) / 1000) * 1000
                history.append((sold_on, "sold", sold_price))
            changed = sold_on or pending_on
            features = rng.sample(FEATURES, 2)
            description = (f"{rng.choice(['Bright', 'Charming', 'Spacious', 'Updated', 'Cozy', 'Modern'])} "
                           f"{beds}-bedroom {TYPE_WORDS[home_type]} with {features[0]} and {features[1]}.")
            hoa = {"condo": rng.randint(18, 65) * 10, "townhouse": rng.randint(8, 35) * 10}.get(home_type, 0)
            if home_type == "house" and rng.random() < 0.3:
                hoa = rng.randint(2, 12) * 10
            cur = db.execute(
                "INSERT INTO listings(address, city_id, zip, price, beds, baths, sqft, home_type, year_built, hoa_fee, "
                "status, listed_on, status_changed_on, sold_price, agent_id, description) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (_address(fake, rng, home_type, used_addresses), city_id, f"{city.zip_prefix}{rng.randint(1, 99):02d}",
                 price, beds, _baths(beds, rng), sqft, home_type, rng.randint(old, new), hoa, status,
                 listed.isoformat(), changed.isoformat() if changed else None, sold_price,
                 rng.choices(city_agents, weights=agent_weights)[0], description),
            )
            listing_id = int(cur.lastrowid)
            for day, event, amount in history:
                db.execute("INSERT INTO price_history(listing_id, date, event, price) VALUES (?, ?, ?, ?)",
                           (listing_id, day.isoformat(), event, amount))
            listings.append({"id": listing_id, "city_id": city_id, "price": price, "status": status,
                             "listed_on": listed, "pending_on": pending_on, "changed_on": changed})
    return listings


def _in_cities(listings: list[dict], cities: list[int], status: str | None = None) -> list[dict]:
    return [x for x in listings if x["city_id"] in cities and (status is None or x["status"] == status)]


def _seed_saved_homes(
    db: sqlite3.Connection, rng: random.Random, active: list[int], targets: dict[int, list[int]], listings: list[dict]
) -> None:
    rows = []
    for user in active:
        near = _in_cities(listings, targets[user])
        picked: dict[int, dict] = {}
        for _ in range(rng.randint(1, 6)):
            home = rng.choice(near) if rng.random() < 0.85 else rng.choice(listings)
            picked[home["id"]] = home
        for listing_id in sorted(picked):
            home = picked[listing_id]
            start = max(home["listed_on"], dt.date(2026, 1, 10))
            end = min(home["changed_on"] or HISTORY_END, HISTORY_END)
            rows.append((kit.random_day(rng, start, end).isoformat(), user, listing_id))
    for saved_on, user, listing_id in sorted(rows):
        db.execute("INSERT INTO saved_homes(user_id, listing_id, saved_on) VALUES (?, ?, ?)",
                   (user, listing_id, saved_on))


def _seed_saved_searches(
    db: sqlite3.Connection, rng: random.Random, active: list[int], targets: dict[int, list[int]]
) -> None:
    rows = []
    for user in active:
        if rng.random() > 0.55:
            continue
        for city_id in targets[user][: rng.randint(1, 2)]:
            city = CITIES[city_id - 1]
            max_price = None if rng.random() < 0.2 else round(city.price_per_sqft * rng.uniform(1300, 2600) / 25000) * 25000
            min_beds = None if rng.random() < 0.25 else rng.randint(1, 4)
            home_type = None if rng.random() < 0.6 else rng.choice(list(TYPES))
            name = f"{city.name} {TYPE_WORDS[home_type] + 's' if home_type else 'homes'}"
            if min_beds:
                name += f", {min_beds}+ beds"
            if max_price:
                name += f", up to ${max_price}"
            rows.append((kit.random_day(rng, dt.date(2026, 1, 15), HISTORY_END).isoformat(), user, name, city_id, max_price,
                         min_beds, home_type))
    for created_on, user, name, city_id, max_price, min_beds, home_type in sorted(rows, key=lambda r: (r[0], r[1])):
        db.execute(
            "INSERT INTO saved_searches(user_id, name, city_id, max_price, min_beds, home_type, created_on) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", (user, name, city_id, max_price, min_beds, home_type, created_on))


@dataclass
class _TourBook:
    """The seed's view of the tour rules while drawing: taken slots, busy users, one tour per home and user."""

    slots: set[tuple[int, str, str]]
    busy: set[tuple[int, str, str]]
    toured: set[tuple[int, int]]
    rows: list[tuple[str, int, int, str, str, str, str | None]]

    def add(self, rng: random.Random, user: int, listing_id: int, day: dt.date, slot: str, cancel_rate: float) -> bool:
        date = day.isoformat()
        if (listing_id, date, slot) in self.slots or (user, date, slot) in self.busy or (user, listing_id) in self.toured:
            return False
        requested = max(day - dt.timedelta(days=rng.randint(2, 40)), dt.date(2026, 2, 20))
        if requested >= day:
            return False
        if rng.random() < cancel_rate:
            cancelled = kit.random_day(rng, requested + dt.timedelta(days=1), day - dt.timedelta(days=1))
            self.rows.append((requested.isoformat(), listing_id, user, date, slot, "cancelled", cancelled.isoformat()))
            return True
        self.slots.add((listing_id, date, slot))
        self.busy.add((user, date, slot))
        self.toured.add((user, listing_id))
        self.rows.append((requested.isoformat(), listing_id, user, date, slot, "scheduled", None))
        return True


def _seed_tours(
    db: sqlite3.Connection, rng: random.Random, active: list[int], targets: dict[int, list[int]], listings: list[dict]
) -> None:
    book = _TourBook(set(), set(), set(), [])
    for user in active:
        # past showings, of homes that were on the market that day
        for _ in range(rng.randint(0, 2)):
            day = kit.random_day(rng, SEASON_START, HISTORY_END)
            open_then = [x for x in _in_cities(listings, targets[user])
                         if x["listed_on"] < day and (x["pending_on"] is None or day < x["pending_on"])]
            if open_then:
                book.add(rng, user, rng.choice(open_then)["id"], day, rng.choice(TOUR_SLOTS), 0.0)
        # the season's tours of homes still for sale
        for _ in range(rng.randint(1, 4)):
            near = _in_cities(listings, targets[user], "active")
            if near:
                day = kit.random_day(rng, dt.date(2026, 4, 2), SEASON_END)
                book.add(rng, user, rng.choice(near)["id"], day, rng.choice(TOUR_SLOTS), 0.15)
    # open-house Saturdays: most slots of one listing on one day are taken
    active_listings = [x for x in listings if x["status"] == "active"]
    saturdays = [dt.date(2026, 4, 4) + dt.timedelta(weeks=w) for w in range(26)]
    for listing in rng.sample(active_listings, OPEN_HOUSE_DAYS):
        day = rng.choice(saturdays)
        for slot in rng.sample(TOUR_SLOTS, rng.randint(4, 7)):
            for _ in range(5):
                if book.add(rng, rng.choice(active), listing["id"], day, slot, 0.0):
                    break
    for requested, listing_id, user, date, slot, status, cancelled in sorted(book.rows):
        db.execute(
            "INSERT INTO tours(listing_id, user_id, date, time, status, requested_on, cancelled_on) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", (listing_id, user, date, slot, status, requested, cancelled))


def _offer_amount(rng: random.Random, price: int) -> int:
    floor = min_offer(price)
    return max(floor, round(price * rng.uniform(0.9, 1.02) / 1000) * 1000)


def _seed_offers(
    db: sqlite3.Connection, rng: random.Random, active: list[int], targets: dict[int, list[int]], listings: list[dict]
) -> None:
    rows = []
    # homes under contract or sold: some of them to a user of the app
    for home in listings:
        if home["status"] == "active" or rng.random() > (0.6 if home["status"] == "pending" else 0.25):
            continue
        pending_on = home["pending_on"]
        offered = kit.random_day(rng, home["listed_on"] + dt.timedelta(days=1), pending_on - dt.timedelta(days=1))
        rows.append((offered.isoformat(), home["id"], rng.choice(active), _offer_amount(rng, home["price"]),
                     "accepted", pending_on.isoformat()))
    # offers on homes still for sale: open, rejected or withdrawn
    open_pairs: set[tuple[int, int]] = set()
    for user in active:
        if rng.random() > 0.5:
            continue
        for _ in range(rng.randint(1, 2)):
            near = _in_cities(listings, targets[user], "active")
            if not near:
                continue
            home = rng.choice(near)
            offered = kit.random_day(rng, home["listed_on"] + dt.timedelta(days=1), HISTORY_END)
            status = rng.choices(["open", "rejected", "withdrawn"], weights=[65, 20, 15])[0]
            if status == "open":
                if (user, home["id"]) in open_pairs:
                    continue
                open_pairs.add((user, home["id"]))
                closed = None
            else:
                closed = min(offered + dt.timedelta(days=rng.randint(1, 6)), HISTORY_END).isoformat()
            rows.append((offered.isoformat(), home["id"], user, _offer_amount(rng, home["price"]), status, closed))
    for offered_on, listing_id, buyer, amount, status, closed in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        db.execute(
            "INSERT INTO offers(listing_id, buyer_id, amount, status, offered_on, closed_on) VALUES (?, ?, ?, ?, ?, ?)",
            (listing_id, buyer, amount, status, offered_on, closed))
