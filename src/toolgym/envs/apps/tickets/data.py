"""Seed data of the tickets app: eight cities' venues, fictional performers on tour, and the shared population's orders.

Everything comes from the seeded `fake` and `rng`, so the database (and every task built on it) is
identical on every machine. Performers, teams and venues are invented, so no model "knows" a price
or a date. Some sections and whole events are sold out, some events are cancelled, and some orders
have pending transfers: the states that impossible and follow-up tasks need are real data.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from dataclasses import dataclass

from faker import Faker

from toolgym.envs import kit
from toolgym.envs.apps.tickets.rules import order_code, seat_at, transfer_code

TEXTS = kit.module_texts(__file__)

SEASON_START = dt.date(2026, 3, 2)
SEASON_END = dt.date(2026, 9, 27)
FIRST_ORDER_DAY = dt.date(2026, 1, 10)
ACTIVE_USERS = 90


@dataclass(frozen=True)
class VenueSeed:
    name: str
    kind: str
    city: str
    state: str
    capacity: int


VENUES: tuple[VenueSeed, ...] = (
    VenueSeed("Hudson River Arena", "arena", "New York", "NY", 18500),
    VenueSeed("Broadway Crown Theatre", "theater", "New York", "NY", 1750),
    VenueSeed("The Bowery Room", "club", "New York", "NY", 650),
    VenueSeed("Queens Park Stadium", "stadium", "New York", "NY", 41000),
    VenueSeed("Lakeshore Arena", "arena", "Chicago", "IL", 17200),
    VenueSeed("Wabash Playhouse", "theater", "Chicago", "IL", 1500),
    VenueSeed("The Maple Room", "club", "Chicago", "IL", 700),
    VenueSeed("Southside Ballpark", "stadium", "Chicago", "IL", 38000),
    VenueSeed("Figueroa Arena", "arena", "Los Angeles", "CA", 19000),
    VenueSeed("Sunset Pavilion", "amphitheater", "Los Angeles", "CA", 12000),
    VenueSeed("Hollywood Lantern Theatre", "theater", "Los Angeles", "CA", 2100),
    VenueSeed("The Echo Loft", "club", "Los Angeles", "CA", 800),
    VenueSeed("Congress Avenue Hall", "theater", "Austin", "TX", 1300),
    VenueSeed("Lone Star Amphitheater", "amphitheater", "Austin", "TX", 14000),
    VenueSeed("The Red River Room", "club", "Austin", "TX", 550),
    VenueSeed("Front Range Arena", "arena", "Denver", "CO", 16000),
    VenueSeed("Red Mesa Amphitheater", "amphitheater", "Denver", "CO", 9500),
    VenueSeed("Larimer Theatre", "theater", "Denver", "CO", 1400),
    VenueSeed("Puget Sound Arena", "arena", "Seattle", "WA", 17500),
    VenueSeed("Elliott Bay Theatre", "theater", "Seattle", "WA", 1600),
    VenueSeed("The Pike Loft", "club", "Seattle", "WA", 500),
    VenueSeed("Cascade Field", "stadium", "Seattle", "WA", 45000),
    VenueSeed("Harborview Arena", "arena", "Boston", "MA", 17800),
    VenueSeed("Beacon Street Theatre", "theater", "Boston", "MA", 1500),
    VenueSeed("The Back Bay Room", "club", "Boston", "MA", 600),
    VenueSeed("Cumberland Arena", "arena", "Nashville", "TN", 15500),
    VenueSeed("Riverfront Hall", "theater", "Nashville", "TN", 2200),
    VenueSeed("The Honky Tonk Loft", "club", "Nashville", "TN", 450),
)

# (name, tier, rows, seats per row, price factor) per venue kind, best seats first.
LAYOUTS = TEXTS["LAYOUTS"]

# Invented performers: (name, genre, popularity 1-3). Popular acts play big rooms and sell out more.
CONCERT_ACTS = TEXTS["CONCERT_ACTS"]
TOUR_NAMES = ("Afterglow", "Long Way Home", "Paper Satellites", "Wildfire", "Neon Nights", "Open Roads",
              "Golden Hour", "Echoes", "Heartland", "Midnight Run", "Blue Skies", "Static Bloom")
# (team, sport, home venue)
TEAMS = TEXTS["TEAMS"]
SHOWS = TEXTS["SHOWS"]
COMEDIANS = TEXTS["COMEDIANS"]
FAMILY_SHOWS = TEXTS["FAMILY_SHOWS"]
BASE_PRICE = {"concert": 62, "sports": 38, "theater": 74, "comedy": 36, "family": 28}


def seed_tickets(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    """Fill every table; the order of draws is fixed, so the result is a pure function of the seeds."""
    with kit.named_rows(db):
        user_ids = kit.insert_population(db)
        _seed_venues(db, fake)
        _seed_performers(db)
        _seed_events(db, rng)
        active = sorted(rng.sample(user_ids, ACTIVE_USERS))
        cards = kit.insert_cards(db, rng, active, second_card=0.4)
        _seed_orders(db, rng, active, cards, user_ids)


def _seed_venues(db: sqlite3.Connection, fake: Faker) -> None:
    for venue in VENUES:
        db.execute(
            "INSERT INTO venues(name, kind, city, state, address, capacity) VALUES (?, ?, ?, ?, ?, ?)",
            (venue.name, venue.kind, venue.city, venue.state, fake.street_address(), venue.capacity),
        )


def _seed_performers(db: sqlite3.Connection) -> None:
    rows = [(name, "concert", genre) for name, genre, _ in CONCERT_ACTS]
    rows += [(team, "sports", sport) for team, sport, _ in TEAMS]
    rows += [(name, "theater", genre) for name, genre in SHOWS]
    rows += [(name, "comedy", "stand-up") for name, _ in COMEDIANS]
    rows += [(name, "family", genre) for name, genre in FAMILY_SHOWS]
    names = [r[0].lower() for r in rows]
    for name in names:  # "performer" searches are substring searches: no name may hide inside another
        assert not any(name != other and name in other for other in names), name
    db.executemany("INSERT INTO performers(name, category, genre) VALUES (?, ?, ?)", rows)


@dataclass
class _Planned:
    performer: str
    category: str
    title: str
    venue: str
    date: dt.date
    start_time: str
    popularity: int
    max_per_order: int
    away: str | None = None


class _Calendar:
    """Who and where is busy on which day: one event per venue, performer and team per day."""

    def __init__(self) -> None:
        self.busy: set[tuple[str, dt.date]] = set()

    def free(self, keys: list[str], day: dt.date) -> bool:
        return all((k, day) not in self.busy for k in keys)

    def take(self, keys: list[str], day: dt.date) -> None:
        self.busy.update((k, day) for k in keys)


def _place(
    rng: random.Random, calendar: _Calendar, keys: list[str], first: dt.date | None = None
) -> dt.date | None:
    """A day on which every key (venue, performer, teams) is free, or None after a few tries."""
    for _ in range(40):
        day = first if first is not None else kit.random_day(rng, SEASON_START, SEASON_END)
        if calendar.free(keys, day):
            calendar.take(keys, day)
            return day
        first = None
    return None


def _plan_events(rng: random.Random) -> list[_Planned]:
    venues_by_kind: dict[str, list[VenueSeed]] = {}
    for venue in VENUES:
        venues_by_kind.setdefault(venue.kind, []).append(venue)
    calendar = _Calendar()
    plans: list[_Planned] = []

    for name, _genre, popularity in CONCERT_ACTS:
        kinds = {3: ["arena", "amphitheater"], 2: ["amphitheater", "theater", "arena"], 1: ["club", "theater"]}[popularity]
        tour = rng.choice(TOUR_NAMES)
        limit = rng.choice([4, 6]) if popularity == 3 else rng.choice([6, 8])
        for _ in range(rng.randint(3, 6)):
            venue = rng.choice(venues_by_kind[rng.choice(kinds)])
            day = _place(rng, calendar, [venue.name, name])
            if day is None:
                continue
            start = rng.choice(["19:00", "19:30", "20:00", "20:30"])
            plans.append(_Planned(name, "concert", f"{name}: {tour} Tour", venue.name, day, start, popularity, limit))
            if rng.random() < 0.2:  # a second night at the same venue
                second = day + dt.timedelta(days=1)
                if second <= SEASON_END and _place(rng, calendar, [venue.name, name], second) == second:
                    plans.append(_Planned(name, "concert", f"{name}: {tour} Tour", venue.name, second, start,
                                          popularity, limit))

    for team, sport, home in TEAMS:
        rivals = [t for t in TEAMS if t[1] == sport and t[0] != team]
        for _ in range(rng.randint(5, 7)):
            away = rng.choice(rivals)[0]
            day = _place(rng, calendar, [home, team, away])
            if day is None:
                continue
            if sport == "baseball":
                start = rng.choice(["13:05", "18:40", "19:10"])
            else:
                start = "19:00" if sport == "hockey" else "19:30"
            plans.append(_Planned(team, "sports", f"{team} vs {away}", home, day, start, 2, rng.choice([8, 10]), away))

    for show, _genre in SHOWS:
        for venue in rng.sample(venues_by_kind["theater"], rng.randint(1, 2)):
            run_start = kit.random_day(rng, SEASON_START, SEASON_END - dt.timedelta(days=30))
            for offset in sorted(rng.sample(range(0, 28), rng.randint(3, 5))):
                day = _place(rng, calendar, [venue.name, show], run_start + dt.timedelta(days=offset))
                if day is None or day > SEASON_END:
                    continue
                start = "14:00" if day.weekday() >= 5 and rng.random() < 0.5 else "19:30"
                plans.append(_Planned(show, "theater", show, venue.name, day, start, 2, rng.choice([6, 8])))

    for name, special in COMEDIANS:
        for _ in range(rng.randint(2, 4)):
            venue = rng.choice(venues_by_kind[rng.choice(["club", "theater"])])
            day = _place(rng, calendar, [venue.name, name])
            if day is not None:
                plans.append(_Planned(name, "comedy", f"{name}: {special}", venue.name, day,
                                      rng.choice(["19:00", "21:30"]), 1, rng.choice([4, 6])))

    for name, _genre in FAMILY_SHOWS:
        for _ in range(rng.randint(2, 4)):
            venue = rng.choice(venues_by_kind[rng.choice(["arena", "theater"])])
            day = _place(rng, calendar, [venue.name, name])
            if day is not None:
                plans.append(_Planned(name, "family", name, venue.name, day, rng.choice(["11:00", "15:00", "18:30"]),
                                      1, 8))
    return sorted(plans, key=lambda p: (p.date, p.start_time, p.title))


def _seed_events(db: sqlite3.Connection, rng: random.Random) -> None:
    """Events in date order (ids grow with the date); each gets priced sections and a sold count."""
    performer_ids = {r["name"]: r["id"] for r in db.execute("SELECT id, name FROM performers ORDER BY id")}
    venues = {r["name"]: r for r in db.execute("SELECT * FROM venues ORDER BY id")}
    for plan in _plan_events(rng):
        venue = venues[plan.venue]
        roll = rng.random()
        status = "cancelled" if roll < 0.1 else "sold_out" if roll < 0.14 + 0.03 * plan.popularity else "on_sale"
        cur = db.execute(
            "INSERT INTO events(title, performer_id, venue_id, date, start_time, status, max_per_order) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (plan.title, performer_ids[plan.performer], venue["id"], plan.date.isoformat(), plan.start_time, status,
             plan.max_per_order),
        )
        layout = LAYOUTS[venue["kind"]]
        keep = len(layout) if len(layout) <= 3 else rng.randint(len(layout) - 1, len(layout))
        chosen = sorted(rng.sample(range(len(layout)), keep))
        demand = min(1.0, rng.uniform(0.3, 0.8) + 0.08 * plan.popularity)
        prices: set[int] = set()
        total_left = 0
        for index in chosen:
            name, tier, rows, per_row, factor = layout[index]
            price = int(BASE_PRICE[plan.category] * factor * (0.8 + 0.2 * plan.popularity) * rng.uniform(0.9, 1.12))
            while price in prices:
                price += 1
            prices.add(price)
            capacity = rows * per_row
            if status == "sold_out":
                left = 0
            else:
                sold_share = demand * rng.uniform(0.55, 1.3)
                left = 0 if sold_share >= 0.97 else round(capacity * (1 - sold_share))
                if left > 0 and rng.random() < 0.08:
                    left = rng.randint(1, 3)  # the last few seats of a section
                left = max(0, min(left, capacity - 8))  # every section has sold some seats to someone
            total_left += left
            db.execute(
                "INSERT INTO sections(event_id, name, price_tier, price, row_count, seats_per_row, capacity, "
                "seats_available) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (cur.lastrowid, name, tier, price, rows, per_row, capacity, left),
            )
        if status == "on_sale" and total_left == 0:
            db.execute("UPDATE events SET status='sold_out' WHERE id=?", (cur.lastrowid,))


@dataclass
class _Order:
    user_id: int
    event: sqlite3.Row
    section: sqlite3.Row
    quantity: int
    ordered_on: dt.date
    refunded_on: dt.date | None


def _draw_order(
    rng: random.Random, user_id: int, event: sqlite3.Row, sections: list[sqlite3.Row], taken: dict[int, int],
) -> _Order | None:
    """An order of 1-4 seats in a section that has sold at least that many seats not yet given to an order."""
    quantity = min(rng.choices([1, 2, 3, 4], weights=[2, 5, 2, 2])[0], event["max_per_order"])
    fits = [s for s in sections if s["capacity"] - s["seats_available"] - taken.get(s["id"], 0) >= quantity]
    if not fits:
        return None
    section = rng.choice(fits)
    taken[section["id"]] = taken.get(section["id"], 0) + quantity
    day = dt.date.fromisoformat(event["date"])
    ordered_on = max(FIRST_ORDER_DAY, day - dt.timedelta(days=rng.randint(6, 100)))
    refunded_on = None
    if event["status"] == "cancelled" and rng.random() < 0.35:
        refunded_on = min(day, ordered_on + dt.timedelta(days=rng.randint(3, 30)))
    return _Order(user_id, event, section, quantity, ordered_on, refunded_on)


def _seed_orders(
    db: sqlite3.Connection, rng: random.Random, active: list[int], cards: dict[int, int], everyone: list[int],
) -> None:
    """Orders (2-5 per active user, more on cancelled events), their tickets, and transfers of some of them."""
    events = db.execute("SELECT * FROM events ORDER BY id").fetchall()
    sections = {e["id"]: db.execute("SELECT * FROM sections WHERE event_id=? ORDER BY id", (e["id"],)).fetchall()
                for e in events}
    taken: dict[int, int] = {}
    drawn: list[_Order] = []
    for user_id in active:
        for event in rng.sample(events, rng.randint(2, 5)):
            order = _draw_order(rng, user_id, event, sections[event["id"]], taken)
            if order is not None:
                drawn.append(order)
    for event in events:  # cancelled shows have many ticket holders waiting for refunds
        if event["status"] == "cancelled":
            for user_id in rng.sample(active, rng.randint(3, 6)):
                order = _draw_order(rng, user_id, event, sections[event["id"]], taken)
                if order is not None:
                    drawn.append(order)
    drawn.sort(key=lambda o: (o.ordered_on, o.event["id"], o.user_id))
    allocated: dict[int, int] = {}
    transfers: list[tuple] = []
    for order_id, order in enumerate(drawn, start=1):
        total = order.section["price"] * order.quantity
        db.execute(
            "INSERT INTO orders(id, code, user_id, event_id, section_id, quantity, unit_price, total_price, "
            "payment_method_id, status, ordered_on, refunded_on) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (order_id, order_code(order_id), order.user_id, order.event["id"], order.section["id"], order.quantity,
             order.section["price"], total, cards[order.user_id],
             "refunded" if order.refunded_on else "confirmed", order.ordered_on.isoformat(),
             order.refunded_on.isoformat() if order.refunded_on else None),
        )
        first = allocated.get(order.section["id"], 0)
        allocated[order.section["id"]] = first + order.quantity
        for index in range(first, first + order.quantity):
            row, seat = seat_at(index, order.section["seats_per_row"])
            db.execute(
                "INSERT INTO tickets(order_id, section_id, row_number, seat_number, holder_id, status) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (order_id, order.section["id"], row, seat, order.user_id,
                 "refunded" if order.refunded_on else "valid"),
            )
        transfer = _draw_transfer(rng, order_id, order, everyone)
        if transfer is not None:
            transfers.append(transfer)
    _insert_transfers(db, transfers)


def _draw_transfer(rng: random.Random, order_id: int, order: _Order, everyone: list[int]) -> tuple | None:
    """Some multi-ticket orders of live events send part (or all) of the tickets to someone else."""
    if order.quantity < 2 or order.event["status"] == "cancelled" or rng.random() > 0.5:
        return None
    day = dt.date.fromisoformat(order.event["date"])
    span = (day - order.ordered_on).days - 1
    if span < 2:
        return None
    created = order.ordered_on + dt.timedelta(days=rng.randint(1, span - 1))
    count = order.quantity if rng.random() < 0.25 else rng.randint(1, order.quantity - 1)
    to_user = rng.choice([u for u in everyone if u != order.user_id])
    status = rng.choices(["pending", "accepted", "cancelled"], weights=[55, 33, 12])[0]
    responded = None if status == "pending" else min(day - dt.timedelta(days=1),
                                                      created + dt.timedelta(days=rng.randint(0, 6)))
    return (created.isoformat(), order_id, order.user_id, to_user, count, status,
            responded.isoformat() if responded else None)


def _insert_transfers(db: sqlite3.Connection, transfers: list[tuple]) -> None:
    """Transfers in creation order; their tickets (the order's first ones) follow their status."""
    for transfer_id, (created, order_id, from_user, to_user, count, status, responded) in enumerate(
            sorted(transfers), start=1):
        db.execute(
            "INSERT INTO transfers(id, code, order_id, from_user_id, to_user_id, ticket_count, status, created_on, "
            "responded_on) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (transfer_id, transfer_code(transfer_id), order_id, from_user, to_user, count, status, created, responded),
        )
        ids = [r["id"] for r in db.execute(
            "SELECT id FROM tickets WHERE order_id=? ORDER BY id LIMIT ?", (order_id, count))]
        marks = ", ".join("?" for _ in ids)
        if status == "accepted":
            db.execute(f"UPDATE tickets SET holder_id=?, transfer_id=? WHERE id IN ({marks})", (to_user, transfer_id, *ids))
        elif status == "pending":
            db.execute(f"UPDATE tickets SET status='transfer_pending', transfer_id=? WHERE id IN ({marks})",
                       (transfer_id, *ids))
