"""Tour task families: book a named home, cancel a tour, tour the cheapest match, refused tours, my tours."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.homes.rules import can_tour, free_slots, spoken_time, upcoming_tour_of
from toolgym.envs.apps.homes.task_common import (
    TYPE_WORDS,
    active_users,
    free_user_for_tour,
    listing_lookup,
    listings,
    pick_slot,
    tour_booked,
    tour_booking_calls,
)
from toolgym.envs.context import WEEKDAYS, resolve_date
from toolgym.schema import ExpectedChange, FieldEquals

TEXTS = kit.module_texts(__file__)


def _tour_prompt(templates: tuple[str, ...], phrasing: int, home: dict[str, Any], date: str, slot: str) -> str:
    return templates[phrasing].format(address=home["address"], city=home["city"], date=date, human=kit.human_date(date),
                                      time=slot, spoken=spoken_time(slot))


def schedule_named_tour(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: a tour of the named active home at a free date and time."""
    home = rng.choice(listings(world, "l.status='active'"))
    today = kit.random_day(rng)
    date = kit.iso(today + dt.timedelta(days=rng.randint(1, 21)))
    slot = pick_slot(rng)
    user = free_user_for_tour(rng, world, home["id"], date, slot, kit.iso(today))
    if user is None:
        return None
    phrasing = rng.randrange(len(TEXTS["BOOK_TOUR"]))
    return TaskDraft(
        prompt=_tour_prompt(TEXTS["BOOK_TOUR"], phrasing, home, date, slot),
        checks=tour_booked(user["id"], home["id"], date, slot, [date, slot], "answer gives the tour date and time"),
        reference_solution=[listing_lookup(home), *tour_booking_calls(home["id"], date, slot)],
        env_variables=kit.env_for(user, today),
        expected_answer=f"Your tour of {home['address']} in {home['city']} is booked for {date} at {slot}.",
        difficulty=1,
        metadata={"phrasing": phrasing, "listing_id": home["id"]},
    )


def _user_tours(world: World) -> list[dict[str, Any]]:
    """Scheduled tours of the seed, with what prompts and checks need."""
    return world.query(
        "SELECT t.*, l.address, l.status AS listing_status, c.id AS city_id, c.name AS city FROM tours t "
        "JOIN listings l ON l.id = t.listing_id JOIN cities c ON c.id = l.city_id "
        "WHERE t.status='scheduled' AND t.date > ? ORDER BY t.id", (kit.iso(kit.FIRST_DAY + dt.timedelta(days=1)),))


def _day_before(rng: random.Random, tour: dict[str, Any], lead_days: int = 30) -> dt.date | None:
    """A CURRENT_DATE after the tour was requested and before its day."""
    return kit.today_before(rng, kit.day_of(tour["date"]), lead_days,
                            earliest=kit.day_of(tour["requested_on"]) + dt.timedelta(days=1))


def _upcoming_in_city(world: World, user_id: int, city_id: int, today: str) -> list[dict[str, Any]]:
    return world.query(
        "SELECT t.* FROM tours t JOIN listings l ON l.id = t.listing_id WHERE t.user_id=? AND l.city_id=? "
        "AND t.status='scheduled' AND t.date>=? ORDER BY t.date, t.time, t.id", (user_id, city_id, today))


def cancel_my_tour(rng: random.Random, world: World) -> TaskDraft | None:
    """Find the user's upcoming tour from what they say about it and cancel it."""
    tour = rng.choice(_user_tours(world))
    today = _day_before(rng, tour)
    if today is None:
        return None
    phrasing = rng.randrange(len(TEXTS["CANCEL_TOUR"]))
    if phrasing == 3:  # "my <city> tour on <date>" must mean exactly one tour
        same_day = [t for t in _upcoming_in_city(world, tour["user_id"], tour["city_id"], kit.iso(today))
                    if t["date"] == tour["date"]]
        if len(same_day) != 1:
            return None
    prompt = TEXTS["CANCEL_TOUR"][phrasing].format(address=tour["address"], city=tour["city"], date=tour["date"],
                                                   human=kit.human_date(tour["date"]), time=tour["time"])
    return TaskDraft(
        prompt=prompt,
        checks=[
            FieldEquals(table="tours", where={"id": tour["id"]}, field="status", value="cancelled", weight=3.0,
                        label=f"tour {tour['id']} cancelled"),
            kit.diff_only([ExpectedChange(table="tours", op="update", where={"id": tour["id"]},
                                      fields=["status", "cancelled_on"])]),
            kit.answer_has([tour["address"]], label="answer names the home"),
        ],
        reference_solution=[kit.call("list_my_tours", upcoming_only=True), kit.call("cancel_tour", tour_id=tour["id"])],
        env_variables=kit.env_for(kit.user_by_id(world, tour["user_id"]), today),
        expected_answer=f"Cancelled your tour of {tour['address']} on {tour['date']} at {tour['time']}.",
        difficulty=2,
        metadata={"phrasing": phrasing, "tour_id": tour["id"]},
    )


def tour_cheapest(rng: random.Random, world: World) -> TaskDraft | None:
    """Search a city for homes with enough bedrooms, choose the cheapest, tour it tomorrow (or the day after)."""
    city = rng.choice(world.query("SELECT id, name FROM cities ORDER BY id"))
    beds = rng.randint(2, 4)
    home_type = rng.choice(["house", "condo", "townhouse", None, None])
    rows = listings(world, "l.city_id=? AND l.status='active' AND l.beds>=? AND (? IS NULL OR l.home_type=?)",
                    (city["id"], beds, home_type, home_type))
    best = kit.unique_best(rows, "price")
    if best is None or len(rows) < 2:
        return None
    today = kit.random_day(rng)
    when = "tomorrow" if rng.random() < 0.7 else "the day after tomorrow"
    date = kit.iso(resolve_date(when, today))
    slot = pick_slot(rng)
    user = free_user_for_tour(rng, world, best["id"], date, slot, kit.iso(today))
    if user is None:
        return None
    noun = TYPE_WORDS[home_type] if home_type else "home"
    what = f"{beds}+ bedroom {noun}"
    phrasing, prompt = kit.phrase(
        rng, TEXTS["CHEAPEST_TOUR"], what=what, city=city["name"], when=when, When=when.capitalize(), time=slot,
        spoken=spoken_time(slot))
    return TaskDraft(
        prompt=prompt,
        checks=tour_booked(user["id"], best["id"], date, slot, [best["address"], date],
                           "answer names the home and the tour date"),
        reference_solution=[kit.call("search_listings", city=city["name"], min_beds=beds, home_type=home_type),
                            *tour_booking_calls(best["id"], when, slot)],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"The cheapest {what} in {city['name']} is {best['address']} at ${best['price']}; your "
                         f"tour is booked for {date} at {slot}."),
        difficulty=2,
        metadata={"phrasing": phrasing, "listing_id": best["id"]},
    )


def tour_off_market_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The home is pending or sold: no tour can be booked, so the agent must refuse and change nothing."""
    home = rng.choice(listings(world, "l.status != 'active'"))
    today = kit.random_day(rng)
    date = kit.iso(today + dt.timedelta(days=rng.randint(1, 14)))
    slot = pick_slot(rng)
    phrasing = rng.randrange(len(TEXTS["OFF_MARKET_TOUR"]))
    state = "under contract (pending)" if home["status"] == "pending" else "already sold"
    return TaskDraft(
        prompt=_tour_prompt(TEXTS["OFF_MARKET_TOUR"], phrasing, home, date, slot),
        checks=kit.impossible_checks("schedule_tour"),
        reference_solution=[listing_lookup(home), kit.call("get_listing", listing_id=home["id"])],
        env_variables=kit.env_for(rng.choice(active_users(world)), today),
        expected_answer=(f"I cannot book a tour of {home['address']}: the home is {state}, and tours are only "
                         "available for active listings."),
        difficulty=2,
        metadata={"phrasing": phrasing, "listing_id": home["id"], "listing_status": home["status"]},
    )


def tour_slot_taken_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The only time the user accepts is already taken by someone else's tour: refuse, book nothing."""
    tour = rng.choice([t for t in _user_tours(world) if t["listing_status"] == "active"])
    today = _day_before(rng, tour, lead_days=20)  # the blocking tour was already requested by then
    if today is None:
        return None
    user = rng.choice(active_users(world))
    if user["id"] == tour["user_id"] or upcoming_tour_of(world, user["id"], tour["listing_id"], kit.iso(today)):
        return None
    home = {"address": tour["address"], "city": tour["city"], "status": "active"}
    free = free_slots(world, tour["listing_id"], tour["date"])
    phrasing = rng.randrange(len(TEXTS["TAKEN_SLOT"]))
    return TaskDraft(
        prompt=_tour_prompt(TEXTS["TAKEN_SLOT"], phrasing, home, tour["date"], tour["time"]),
        checks=kit.impossible_checks("schedule_tour"),
        reference_solution=[listing_lookup(home),
                            kit.call("list_tour_slots", listing_id=tour["listing_id"], date=tour["date"])],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"I cannot book {tour['time']} on {tour['date']} at {tour['address']}: that slot is "
                         f"already taken. Free times that day: {', '.join(free) or 'none'}."),
        difficulty=2,
        metadata={"phrasing": phrasing, "listing_id": tour["listing_id"], "date": tour["date"], "time": tour["time"]},
    )


def tour_saved_home(rng: random.Random, world: World) -> TaskDraft | None:
    """'The home I saved in X', 'next Friday': LOGGED_IN_USER and CURRENT_DATE decide what is meant."""
    saved = world.query(
        "SELECT s.user_id, l.id, l.address, l.status, c.id AS city_id, c.name AS city, "
        "(SELECT COUNT(*) FROM saved_homes s2 JOIN listings l2 ON l2.id = s2.listing_id "
        " WHERE s2.user_id = s.user_id AND l2.city_id = l.city_id) AS saved_in_city "
        "FROM saved_homes s JOIN listings l ON l.id = s.listing_id JOIN cities c ON c.id = l.city_id "
        "WHERE l.status='active' ORDER BY s.id")
    home = rng.choice([s for s in saved if s["saved_in_city"] == 1])
    today = kit.random_day(rng)
    when = "tomorrow" if rng.random() < 0.2 else f"next {rng.choice(WEEKDAYS[:6]).capitalize()}"
    date = kit.iso(resolve_date(when, today))
    slot = pick_slot(rng)
    if not can_tour(world, home["user_id"], home["id"], date, slot, kit.iso(today)):
        return None
    phrasing, prompt = kit.phrase(
        rng, TEXTS["SAVED_TOUR"], city=home["city"], when=when, When=when[0].upper() + when[1:], time=slot,
        spoken=spoken_time(slot))
    return TaskDraft(
        prompt=prompt,
        checks=tour_booked(home["user_id"], home["id"], date, slot, [home["address"], date],
                           "answer names the home and the resolved date"),
        reference_solution=[kit.call("list_saved_homes"), *tour_booking_calls(home["id"], when, slot)],
        env_variables=kit.env_for(kit.user_by_id(world, home["user_id"]), today),
        expected_answer=f"Your tour of {home['address']} in {home['city']} is booked for {date} at {slot}.",
        difficulty=2,
        metadata={"phrasing": phrasing, "listing_id": home["id"], "when": when},
    )


def my_tour_lookup(rng: random.Random, world: World) -> TaskDraft | None:
    """The user's upcoming tour by address, or their next one in a city: depends on who is asking and when."""
    tour = rng.choice(_user_tours(world))
    today = _day_before(rng, tour)
    if today is None:
        return None
    kind = "address" if rng.random() < 0.5 else "next"
    if kind == "next":
        upcoming = _upcoming_in_city(world, tour["user_id"], tour["city_id"], kit.iso(today))
        if not upcoming or upcoming[0]["id"] != tour["id"]:
            return None
    values = [tour["date"], tour["time"]] if kind == "address" else [tour["address"], tour["date"], tour["time"]]
    phrasing = rng.randrange(len(TEXTS["MY_TOUR"][kind]))
    return TaskDraft(
        prompt=TEXTS["MY_TOUR"][kind][phrasing].format(address=tour["address"], city=tour["city"]),
        checks=kit.lookup_checks(values),
        reference_solution=[kit.call("list_my_tours", upcoming_only=True)],
        env_variables=kit.env_for(kit.user_by_id(world, tour["user_id"]), today),
        expected_answer=f"Your tour of {tour['address']} in {tour['city']} is on {tour['date']} at {tour['time']}.",
        difficulty=2,
        metadata={"phrasing": f"{kind}{phrasing}", "tour_id": tour["id"]},
    )

