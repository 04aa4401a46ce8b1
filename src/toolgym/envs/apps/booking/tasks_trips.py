"""Multi-step trip planning: a flight and a hotel that must fit one budget together."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.booking.task_common import (
    active_users,
    city_names,
    flight_booking_checks,
    flights_on,
    hotel_booking_checks,
    next_code,
    route_day_ahead,
)
from toolgym.envs.apps.booking.tasks_hotels import cheapest_stay

TEXTS = kit.module_texts(__file__)

TRIP_BUDGET = TEXTS["TRIP_BUDGET"]


def trip_within_budget(rng: random.Random, world: World) -> TaskDraft | None:
    """Cheapest flight, then the best-rated hotel whose cheapest free room keeps the trip within budget."""
    picked = route_day_ahead(rng, world)
    if picked is None:
        return None
    group, today = picked
    people = rng.choices([1, 2], weights=[3, 2])[0]
    nights = rng.randint(2, 4)
    flight = kit.unique_best([f for f in flights_on(world, group["origin"], group["destination"], group["date"])
                          if f["seats_left"] >= people], "price")
    if flight is None:
        return None
    city = world.one("SELECT id, name FROM cities WHERE airport_code=?", (group["destination"],))
    assert city is not None
    check_out = kit.iso(kit.day_of(group["date"]) + dt.timedelta(days=nights))
    offers = cheapest_stay(world, city["id"], group["date"], check_out, people)
    fare = flight["price"] * people
    totals = [fare + o["room"]["price_per_night"] * nights for o in offers]
    choices = []
    for index, total in enumerate(totals):
        better = totals[:index]
        if all(total < t for t in better):
            choices.append((index, min(better) - 1 if better else total + 200))
    if not choices:
        return None
    constrained = [c for c in choices if c[0] > 0] or choices
    index, ceiling = rng.choice(constrained)
    budget = totals[index]
    rounded = -(-budget // 50) * 50
    if rounded <= ceiling:
        budget = rounded
    offer = offers[index]
    users = active_users(world)
    user = rng.choice(users)
    names = city_names(world)
    phrasing, prompt = kit.phrase(
        rng, TRIP_BUDGET, party="me" if people == 1 else "two of us",
        company="on my own" if people == 1 else "two of us", o=names[group["origin"]],
        d=names[group["destination"]], oc=group["origin"], dc=group["destination"], date=group["date"],
        human=kit.human_date(group["date"], year=True), nights=kit.plural(nights, "night"), budget=budget,
        check_out=check_out, guests=kit.plural(people, "guest"))
    flight_code = next_code(world, "flight_bookings")
    hotel_code = next_code(world, "hotel_reservations")
    flight_checks, flight_expected = flight_booking_checks(user["id"], flight, people, False, weight=2.0)
    hotel_checks, hotel_expected = hotel_booking_checks(user["id"], offer["room"], group["date"], check_out, people,
                                                        False, weight=2.0)
    return TaskDraft(
        prompt=prompt,
        checks=[*flight_checks, *hotel_checks, kit.diff_only(flight_expected + hotel_expected),
                kit.answer_has([flight_code, hotel_code], label="answer gives both confirmation codes")],
        reference_solution=[
            kit.call("search_flights", origin=group["origin"], destination=group["destination"], date=group["date"]),
            kit.call("book_flight", flight_id=flight["id"], passengers=people),
            kit.call("search_hotels", city=city["name"], check_in=group["date"], check_out=check_out, guests=people),
            kit.call("get_hotel", hotel_id=offer["hotel"]["id"], check_in=group["date"], check_out=check_out),
            kit.call("book_hotel", hotel_id=offer["hotel"]["id"], room_type_id=offer["room"]["id"],
                 check_in=group["date"], check_out=check_out, guests=people),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"Flight {flight['flight_number']} on {flight['date']} (${fare}), code {flight_code}; "
                         f"{offer['hotel']['name']} (rating {offer['hotel']['rating']:.1f}), {offer['room']['name']} "
                         f"{group['date']} to {check_out} (${offer['room']['price_per_night'] * nights}), code "
                         f"{hotel_code}. Total ${totals[index]} of your ${budget} budget."),
        difficulty=3,
        metadata={"phrasing": phrasing, "flight_id": flight["id"], "hotel_id": offer["hotel"]["id"],
                  "budget": budget, "total": totals[index]},
    )
