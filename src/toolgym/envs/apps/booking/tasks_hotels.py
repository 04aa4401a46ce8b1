"""Hotel task families: hotel facts, booking a named room, best-rated within a budget, full hotels, reviews."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.booking.rules import available_room_types, free_rooms
from toolgym.envs.apps.booking.task_common import active_users, hotel_booking_checks, next_code
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, only

TEXTS = kit.module_texts(__file__)

HOTEL_FACTS = {tuple(key.split()): value for key, value in TEXTS["HOTEL_FACTS"].items()}


def hotel_rooms(world: World, hotel_id: int) -> list[dict[str, Any]]:
    return world.query("SELECT * FROM room_types WHERE hotel_id=? ORDER BY price_per_night, id", (hotel_id,))


def hotel_facts(rng: random.Random, world: World) -> TaskDraft | None:
    """Find a hotel by name and city, answer two of: guest rating, cheapest nightly price, address."""
    hotels = world.query("SELECT h.*, c.name AS city FROM hotels h JOIN cities c ON c.id = h.city_id ORDER BY h.id")
    hotel = rng.choice(hotels)
    asked = sorted(HOTEL_FACTS)[rng.randrange(len(HOTEL_FACTS))]
    templates = HOTEL_FACTS[asked]
    phrasing = rng.randrange(len(templates))
    cheapest = hotel_rooms(world, hotel["id"])[0]
    facts = {"rating": f"{hotel['rating']:.1f}", "price": str(cheapest["price_per_night"]), "address": hotel["address"]}
    users = active_users(world)
    today = kit.random_day(rng)
    return TaskDraft(
        prompt=templates[phrasing].format(hotel=hotel["name"], city=hotel["city"]),
        checks=kit.lookup_checks([facts[k] for k in asked]),
        reference_solution=[kit.call("search_hotels", city=hotel["city"]), kit.call("get_hotel", hotel_id=hotel["id"])],
        env_variables=kit.env_for(rng.choice(users), today),
        expected_answer=(f"{hotel['name']} ({hotel['address']}, {hotel['city']}) has a guest rating of "
                         f"{facts['rating']}/10; its cheapest room is the {cheapest['name']} at "
                         f"${cheapest['price_per_night']} per night."),
        difficulty=1,
        metadata={"phrasing": "-".join(asked) + str(phrasing), "hotel_id": hotel["id"]},
    )


def _random_stay(rng: random.Random, max_nights: int = 5) -> tuple[str, str, int]:
    start = dt.date(2026, 4, 6) + dt.timedelta(days=rng.randint(0, 160))
    nights = rng.randint(1, max_nights)
    return kit.iso(start), kit.iso(start + dt.timedelta(days=nights)), nights


BOOK_ROOM = TEXTS["BOOK_ROOM"]


def book_hotel_room(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: the named room type at a named hotel for given dates and guests."""
    rooms = world.query(
        "SELECT r.*, h.name AS hotel, c.name AS city FROM room_types r JOIN hotels h ON h.id = r.hotel_id "
        "JOIN cities c ON c.id = h.city_id ORDER BY r.id")
    room = rng.choice(rooms)
    check_in, check_out, nights = _random_stay(rng)
    if free_rooms(world, room["id"], room["total_rooms"], check_in, check_out) < 1:
        return None
    today = kit.today_before(rng, kit.day_of(check_in))
    if today is None:
        return None
    guests = rng.randint(1, room["max_guests"])
    refundable = rng.random() < 0.3
    users = active_users(world)
    user = rng.choice(users)
    phrasing, prompt = kit.phrase(
        rng, BOOK_ROOM, room=room["name"], hotel=room["hotel"], city=room["city"], ci=check_in, co=check_out,
        ci_h=kit.human_date(check_in, year=True), co_h=kit.human_date(check_out, year=True),
        nights=kit.plural(nights, "night"), guests=kit.plural(guests, "guest"),
        rate=" at the refundable rate" if refundable else "")
    code = next_code(world, "hotel_reservations")
    checks, expected = hotel_booking_checks(user["id"], room, check_in, check_out, guests, refundable)
    price = room["refundable_price_per_night"] if refundable else room["price_per_night"]
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected), kit.answer_has([code], label="answer gives the confirmation code")],
        reference_solution=[
            kit.call("search_hotels", city=room["city"], check_in=check_in, check_out=check_out, guests=guests),
            kit.call("get_hotel", hotel_id=room["hotel_id"], check_in=check_in, check_out=check_out),
            kit.call("book_hotel", hotel_id=room["hotel_id"], room_type_id=room["id"], check_in=check_in,
                 check_out=check_out, guests=guests, refundable=refundable),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"Reserved a {room['name']} at {room['hotel']} from {check_in} to {check_out} "
                         f"({kit.plural(nights, 'night')}, {kit.plural(guests, 'guest')}), ${price * nights} in total. "
                         f"Confirmation code: {code}."),
        difficulty=1,
        metadata={"phrasing": phrasing, "room_type_id": room["id"]},
    )


TOP_RATED = TEXTS["TOP_RATED"]


def cheapest_stay(world: World, city_id: int, check_in: str, check_out: str, guests: int) -> list[dict[str, Any]]:
    """Every hotel of a city with a free room for the stay, with its cheapest such room; best-rated first."""
    offers = []
    for hotel in world.query("SELECT * FROM hotels WHERE city_id=? ORDER BY rating DESC, id", (city_id,)):
        rooms = available_room_types(world, hotel["id"], check_in, check_out, guests)
        if rooms:
            offers.append({"hotel": hotel, "room": rooms[0] | {"hotel_id": hotel["id"]}})
    return offers


def _best_rated_under_cap(
    rng: random.Random, world: World, city_id: int, check_in: str, check_out: str, guests: int
) -> tuple[dict[str, Any], dict[str, Any], int] | None:
    """(hotel, room, nightly cap) where the cap makes `hotel` the best-rated choice with a free room.

    Prefers a cap that rules out a better-rated but pricier hotel, so the budget matters.
    """
    offers = cheapest_stay(world, city_id, check_in, check_out, guests)
    choices = []
    for index, offer in enumerate(offers):
        price = offer["room"]["price_per_night"]
        better_prices = [o["room"]["price_per_night"] for o in offers[:index]]
        if all(price < p for p in better_prices):
            ceiling = min(better_prices) - 1 if better_prices else price + 60
            choices.append((offer, ceiling, index))
    if not choices:
        return None
    constrained = [c for c in choices if c[2] > 0] or choices
    offer, ceiling, _ = rng.choice(constrained)
    cap = offer["room"]["price_per_night"]
    rounded = -(-cap // 10) * 10  # round up to a multiple of 10 when that still rules the better ones out
    if rounded <= ceiling:
        cap = rounded
    return offer["hotel"], offer["room"], cap


def book_top_rated_hotel(rng: random.Random, world: World) -> TaskDraft | None:
    """Search a city for dates, keep hotels with a room within the nightly cap, book the best-rated one."""
    cities = world.query("SELECT id, name FROM cities ORDER BY id")
    city = rng.choice(cities)
    check_in, check_out, nights = _random_stay(rng, 4)
    guests = rng.choices([1, 2, 3], weights=[3, 4, 1])[0]
    picked = _best_rated_under_cap(rng, world, city["id"], check_in, check_out, guests)
    today = kit.today_before(rng, kit.day_of(check_in))
    if picked is None or today is None:
        return None
    hotel, room, cap = picked
    users = active_users(world)
    user = rng.choice(users)
    phrasing, prompt = kit.phrase(
        rng, TOP_RATED, city=city["name"], cap=cap, ci=check_in, co=check_out,
        ci_h=kit.human_date(check_in, year=True), co_h=kit.human_date(check_out, year=True),
        guests=kit.plural(guests, "guest"))
    code = next_code(world, "hotel_reservations")
    checks, expected = hotel_booking_checks(user["id"], room, check_in, check_out, guests, False)
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected), kit.answer_has([code], label="answer gives the confirmation code")],
        reference_solution=[
            kit.call("search_hotels", city=city["name"], check_in=check_in, check_out=check_out, guests=guests,
                 max_price=cap),
            kit.call("get_hotel", hotel_id=hotel["id"], check_in=check_in, check_out=check_out),
            kit.call("book_hotel", hotel_id=hotel["id"], room_type_id=room["id"], check_in=check_in,
                 check_out=check_out, guests=guests),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"Booked {hotel['name']} (guest rating {hotel['rating']:.1f}), {room['name']} at "
                         f"${room['price_per_night']}/night, {check_in} to {check_out}: "
                         f"${room['price_per_night'] * nights} total. Confirmation code: {code}."),
        difficulty=2,
        metadata={"phrasing": phrasing, "hotel_id": hotel["id"], "room_type_id": room["id"], "cap": cap},
    )


HOTEL_FULL = TEXTS["HOTEL_FULL"]


def hotel_full_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The requested room type is taken on at least one night of the stay: nothing can be booked."""
    blocks = world.query(
        "SELECT r.room_type_id, r.check_in, r.check_out, t.name AS room, t.total_rooms, t.max_guests, "
        "h.id AS hotel_id, h.name AS hotel, c.name AS city FROM hotel_reservations r "
        "JOIN room_types t ON t.id = r.room_type_id JOIN hotels h ON h.id = r.hotel_id "
        "JOIN cities c ON c.id = h.city_id WHERE r.status = 'confirmed' AND r.check_in >= '2026-04-03' "
        "ORDER BY r.id")
    block = rng.choice(blocks)
    start = kit.day_of(block["check_in"]) + dt.timedelta(days=rng.randint(-2, 1))
    end = start + dt.timedelta(days=rng.randint(2, 4))
    check_in, check_out = kit.iso(start), kit.iso(end)
    if end > kit.LAST_DAY + dt.timedelta(days=30):
        return None
    if free_rooms(world, block["room_type_id"], block["total_rooms"], check_in, check_out) > 0:
        return None
    today = kit.today_before(rng, start)
    if today is None:
        return None
    guests = rng.randint(1, block["max_guests"])
    users = active_users(world)
    phrasing, prompt = kit.phrase(
        rng, HOTEL_FULL, room=block["room"], hotel=block["hotel"], city=block["city"], ci=check_in,
        co=check_out, ci_h=kit.human_date(check_in, year=True), co_h=kit.human_date(check_out, year=True),
        guests=kit.plural(guests, "guest"), nights=kit.plural((end - start).days, "night"))
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("book_hotel"),
        reference_solution=[
            kit.call("search_hotels", city=block["city"], check_in=check_in, check_out=check_out, guests=guests),
            kit.call("get_hotel", hotel_id=block["hotel_id"], check_in=check_in, check_out=check_out),
        ],
        env_variables=kit.env_for(rng.choice(users), today),
        expected_answer=(f"I cannot book it: no {block['room']} is free at {block['hotel']} for every night from "
                         f"{check_in} to {check_out}."),
        difficulty=2,
        metadata={"phrasing": phrasing, "room_type_id": block["room_type_id"]},
    )


REVIEW_OPENINGS = {int(key): value for key, value in TEXTS["REVIEW_OPENINGS"].items()}
REVIEW_DETAILS = {int(key): value for key, value in TEXTS["REVIEW_DETAILS"].items()}
REVIEW = TEXTS["REVIEW"]


def review_past_stay(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write after a completed stay: the review row with the user's rating and words."""
    stays = world.query(
        "SELECT r.id, r.user_id, r.hotel_id, r.check_out, h.name AS hotel, h.city_id, c.name AS city "
        "FROM hotel_reservations r JOIN hotels h ON h.id = r.hotel_id JOIN cities c ON c.id = h.city_id "
        "WHERE r.status = 'confirmed' AND r.check_out BETWEEN '2026-03-25' AND '2026-08-30' ORDER BY r.id")
    stay = rng.choice(stays)
    checked_out = kit.day_of(stay["check_out"])
    today = kit.day_in_window(rng, checked_out + dt.timedelta(days=1), checked_out + dt.timedelta(days=25))
    if today is None:
        return None
    if world.one("SELECT id FROM reviews WHERE user_id=? AND hotel_id=?", (stay["user_id"], stay["hotel_id"])):
        return None
    past_in_city = world.query(
        "SELECT DISTINCT r.hotel_id FROM hotel_reservations r JOIN hotels h ON h.id = r.hotel_id "
        "WHERE r.user_id=? AND h.city_id=? AND r.status='confirmed' AND r.check_out<=? ORDER BY r.hotel_id",
        (stay["user_id"], stay["city_id"], kit.iso(today)))
    phrasing = rng.randrange(len(REVIEW))
    if phrasing == 2 and len(past_in_city) != 1:  # "my stay in <city>" must name exactly one hotel
        return None
    rating = rng.choices([5, 4, 3, 2, 1], weights=[3, 4, 2, 1, 1])[0]
    comment = f"{rng.choice(REVIEW_OPENINGS[rating])} {rng.choice(REVIEW_DETAILS[rating])}."
    user = kit.user_by_id(world, stay["user_id"])
    where = {"hotel_id": stay["hotel_id"], "user_id": stay["user_id"]}
    return TaskDraft(
        prompt=REVIEW[phrasing].format(rating=rating, hotel=stay["hotel"], city=stay["city"], comment=comment),
        checks=[
            has_row("reviews", {**where, "rating": rating},
                    f"{rating}-star review of hotel {stay['hotel_id']}", weight=3.0, count=1),
            field_is("reviews", where, "comment", comment, "review text as given", weight=1.0),
            only("no other changes", [inserted("reviews", where)], weight=2.0),
        ],
        reference_solution=[
            kit.call("list_my_bookings", kind="hotel"),
            kit.call("review_hotel", hotel_id=stay["hotel_id"], rating=rating, comment=comment),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=f"Your {rating}-star review of {stay['hotel']} is posted.",
        difficulty=2,
        metadata={"phrasing": phrasing, "reservation_id": stay["id"]},
    )
