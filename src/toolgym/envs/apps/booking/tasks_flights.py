"""Flight task families: fare lookups, cheapest / earliest bookings, round trips, routes with no flights."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.booking.task_common import (
    active_users,
    city_names,
    flight_booking_checks,
    flights_on,
    next_code,
    route_day_ahead,
    route_days,
)
from toolgym.envs.context import resolve_date

TEXTS = kit.module_texts(__file__)

CHEAPEST_LOOKUP = TEXTS["CHEAPEST_LOOKUP"]
EARLIEST_LOOKUP = TEXTS["EARLIEST_LOOKUP"]


def fare_lookup(rng: random.Random, world: World) -> TaskDraft | None:
    """Look up the cheapest or the earliest flight of a route and day, and answer with its facts."""
    picked = route_day_ahead(rng, world)
    if picked is None:
        return None
    group, today = picked
    flights = flights_on(world, group["origin"], group["destination"], group["date"])
    names = city_names(world)
    cheapest = rng.random() < 0.5
    best = kit.unique_best(flights, "price" if cheapest else "depart_time")
    if best is None or best["seats_left"] == 0:  # a sold-out "cheapest" would make the answer debatable
        return None
    templates = CHEAPEST_LOOKUP if cheapest else EARLIEST_LOOKUP
    phrasing, prompt = kit.phrase(
        rng, templates, o=names[group["origin"]], d=names[group["destination"]], oc=group["origin"],
        dc=group["destination"], date=group["date"], human=kit.human_date(group["date"], year=True))
    users = active_users(world)
    if cheapest:
        values = [best["flight_number"], str(best["price"])]
        answer = (f"The cheapest flight is {best['flight_number']} ({best['airline']}) at ${best['price']} per "
                  f"passenger, departing {best['depart_time']} on {best['date']}.")
    else:
        values = [best["flight_number"], best["depart_time"]]
        answer = (f"The earliest flight is {best['flight_number']} ({best['airline']}), departing at "
                  f"{best['depart_time']} on {best['date']} for ${best['price']}.")
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks(values),
        reference_solution=[kit.call("search_flights", origin=group["origin"], destination=group["destination"],
                                 date=group["date"])],
        env_variables=kit.env_for(rng.choice(users), today),
        expected_answer=answer,
        difficulty=1,
        metadata={"phrasing": ("cheapest", "earliest")[not cheapest] + str(phrasing), "flight_id": best["id"]},
    )


CHEAPEST_BOOK = TEXTS["CHEAPEST_BOOK"]


def _party(passengers: int) -> tuple[str, str]:
    """('2 passengers', 'Two of us are') style wording of a party size."""
    words = {1: "just me", 2: "2 passengers", 3: "3 passengers"}
    caps = {1: "Just me", 2: "Two of us are", 3: "Three of us are"}
    return words[passengers], caps[passengers]


def book_cheapest_flight(rng: random.Random, world: World) -> TaskDraft | None:
    """Search a route and day, pick the cheapest flight with enough seats, book it."""
    picked = route_day_ahead(rng, world)
    if picked is None:
        return None
    group, today = picked
    passengers = rng.choices([1, 2, 3], weights=[5, 3, 2])[0]
    refundable = rng.random() < 0.25
    flights = flights_on(world, group["origin"], group["destination"], group["date"])
    bookable = [f for f in flights if f["seats_left"] >= passengers]
    best = kit.unique_best(bookable, "price")
    if best is None:
        return None
    cheapest_overall = kit.unique_best(flights, "price")
    skips_full = cheapest_overall is not None and cheapest_overall["id"] != best["id"]
    users = active_users(world)
    user = rng.choice(users)
    names = city_names(world)
    party, party_cap = _party(passengers)
    phrasing, prompt = kit.phrase(
        rng, CHEAPEST_BOOK, o=names[group["origin"]], d=names[group["destination"]], oc=group["origin"],
        dc=group["destination"], date=group["date"], human=kit.human_date(group["date"], year=True),
        party=party, party_cap=party_cap, fare=", refundable fare" if refundable else "")
    if phrasing == 2 and passengers == 1:
        prompt = prompt.replace("Just me flying", "I'm flying")
    code = next_code(world, "flight_bookings")
    checks, expected = flight_booking_checks(user["id"], best, passengers, refundable)
    price = best["refundable_price"] if refundable else best["price"]
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected), kit.answer_has([code], label="answer gives the confirmation code")],
        reference_solution=[
            kit.call("search_flights", origin=group["origin"], destination=group["destination"], date=group["date"]),
            kit.call("book_flight", flight_id=best["id"], passengers=passengers, refundable=refundable),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"Booked {best['flight_number']} on {best['date']} at {best['depart_time']} for "
                         f"{kit.plural(passengers, 'passenger')}, ${price * passengers} in total. "
                         f"Confirmation code: {code}."),
        difficulty=3 if skips_full else 2,
        metadata={"phrasing": phrasing, "flight_id": best["id"], "skips_sold_out": skips_full},
    )


EARLIEST_RELATIVE = TEXTS["EARLIEST_RELATIVE"]


def _spoken_flight_day(rng: random.Random, day: dt.date) -> tuple[str, dt.date] | None:
    """A phrase for `day` and a CURRENT_DATE that makes it mean exactly that day."""
    kind = rng.randrange(4)
    if kind == 0:
        phrase, today = "tomorrow", day - dt.timedelta(days=1)
    elif kind == 1:
        phrase, today = "the day after tomorrow", day - dt.timedelta(days=2)
    elif kind == 2:
        days = rng.randint(3, 6)
        phrase, today = f"in {days} days", day - dt.timedelta(days=days)
    else:
        phrase = f"on {day.strftime('%A')}"
        today = day - dt.timedelta(days=rng.randint(1, 6))
    if not kit.FIRST_DAY <= today <= kit.LAST_DAY:
        return None
    assert resolve_date(phrase.removeprefix("on "), today) == day
    return phrase, today


def earliest_flight_relative_day(rng: random.Random, world: World) -> TaskDraft | None:
    """'Tomorrow' / 'on Friday' resolved through CURRENT_DATE, then the earliest flight with seats."""
    groups = route_days(world)
    group = rng.choice(groups)
    day = kit.day_of(group["date"])
    relative = _spoken_flight_day(rng, day)
    if relative is None:
        return None
    when, today = relative
    passengers = rng.choices([1, 2], weights=[3, 1])[0]
    flights = flights_on(world, group["origin"], group["destination"], group["date"])
    best = kit.unique_best([f for f in flights if f["seats_left"] >= passengers], "depart_time")
    if best is None:
        return None
    users = active_users(world)
    user = rng.choice(users)
    names = city_names(world)
    phrasing, prompt = kit.phrase(
        rng, EARLIEST_RELATIVE, o=names[group["origin"]], d=names[group["destination"]], oc=group["origin"],
        dc=group["destination"], when=when, When_cap=when[0].upper() + when[1:],
        party="" if passengers == 1 else " for the two of us",
        party_obj="me" if passengers == 1 else "both of us")
    code = next_code(world, "flight_bookings")
    checks, expected = flight_booking_checks(user["id"], best, passengers, False)
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected), kit.answer_has([code], label="answer gives the confirmation code")],
        reference_solution=[
            kit.call("search_flights", origin=group["origin"], destination=group["destination"],
                 date=when.removeprefix("on ")),
            kit.call("book_flight", flight_id=best["id"], passengers=passengers),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"You're booked on {best['flight_number']}, departing {names[group['origin']]} at "
                         f"{best['depart_time']} on {best['date']} ({kit.plural(passengers, 'passenger')}). "
                         f"Confirmation code: {code}."),
        difficulty=2,
        metadata={"phrasing": phrasing, "relative_day": when, "flight_id": best["id"]},
    )


ROUND_TRIP = TEXTS["ROUND_TRIP"]


def round_trip(rng: random.Random, world: World) -> TaskDraft | None:
    """Two writes with a constraint: the cheapest outbound and the cheapest return, both with seats."""
    pairs = world.query(
        "SELECT a.origin, a.destination, a.date AS out_date, b.date AS back_date FROM "
        "(SELECT DISTINCT origin, destination, date FROM flights) a JOIN "
        "(SELECT DISTINCT origin, destination, date FROM flights) b "
        "ON b.origin = a.destination AND b.destination = a.origin AND b.date > a.date "
        "AND julianday(b.date) - julianday(a.date) <= 14 ORDER BY a.origin, a.destination, a.date, b.date")
    pair = rng.choice(pairs)
    today = kit.today_before(rng, kit.day_of(pair["out_date"]))
    if today is None:
        return None
    passengers = rng.choices([1, 2], weights=[3, 2])[0]
    out_best = kit.unique_best([f for f in flights_on(world, pair["origin"], pair["destination"], pair["out_date"])
                            if f["seats_left"] >= passengers], "price")
    back_best = kit.unique_best([f for f in flights_on(world, pair["destination"], pair["origin"], pair["back_date"])
                             if f["seats_left"] >= passengers], "price")
    if out_best is None or back_best is None:
        return None
    users = active_users(world)
    user = rng.choice(users)
    names = city_names(world)
    phrasing, prompt = kit.phrase(
        rng, ROUND_TRIP, party="me" if passengers == 1 else "two people", o=names[pair["origin"]],
        d=names[pair["destination"]], oc=pair["origin"], dc=pair["destination"], out=pair["out_date"],
        back=pair["back_date"], out_h=kit.human_date(pair["out_date"], year=True),
        back_h=kit.human_date(pair["back_date"], year=True))
    codes = [next_code(world, "flight_bookings", 1), next_code(world, "flight_bookings", 2)]
    out_checks, out_expected = flight_booking_checks(user["id"], out_best, passengers, False, weight=2.0)
    back_checks, back_expected = flight_booking_checks(user["id"], back_best, passengers, False, weight=2.0)
    return TaskDraft(
        prompt=prompt,
        checks=[*out_checks, *back_checks, kit.diff_only(out_expected + back_expected),
                kit.answer_has(codes, label="answer gives both confirmation codes")],
        reference_solution=[
            kit.call("search_flights", origin=pair["origin"], destination=pair["destination"], date=pair["out_date"]),
            kit.call("book_flight", flight_id=out_best["id"], passengers=passengers),
            kit.call("search_flights", origin=pair["destination"], destination=pair["origin"], date=pair["back_date"]),
            kit.call("book_flight", flight_id=back_best["id"], passengers=passengers),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"Outbound: {out_best['flight_number']} on {out_best['date']} at {out_best['depart_time']}, "
                         f"code {codes[0]}. Return: {back_best['flight_number']} on {back_best['date']} at "
                         f"{back_best['depart_time']}, code {codes[1]}."),
        difficulty=3,
        metadata={"phrasing": phrasing, "flight_ids": [out_best["id"], back_best["id"]]},
    )


NO_FLIGHTS = TEXTS["NO_FLIGHTS"]


def no_flights_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """A route/day with no flights (no service that day, or none at all): nothing can be booked."""
    names = city_names(world)
    codes = sorted(names)
    if rng.random() < 0.6:
        served = world.query("SELECT DISTINCT origin, destination FROM flights ORDER BY origin, destination")
        route = rng.choice(served)
        origin, destination = route["origin"], route["destination"]
        dates = [r["date"] for r in world.query(
            "SELECT DISTINCT date FROM flights WHERE origin=? AND destination=? ORDER BY date", (origin, destination))]
        day = kit.day_of(rng.choice(dates)) + dt.timedelta(days=rng.choice([-3, -2, -1, 1, 2, 3, 5]))
    else:
        origin, destination = rng.sample(codes, 2)
        day = dt.date(2026, 4, 10) + dt.timedelta(days=rng.randint(0, 150))
    date = kit.iso(day)
    if flights_on(world, origin, destination, date):
        return None
    today = kit.today_before(rng, day)
    if today is None:
        return None
    users = active_users(world)
    phrasing = rng.randrange(len(NO_FLIGHTS))
    prompt = NO_FLIGHTS[phrasing].format(o=names[origin], d=names[destination], oc=origin, dc=destination,
                                         date=date, human=kit.human_date(date, year=True), party=rng.choice(["me", "two of us"]))
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("book_flight"),
        reference_solution=[kit.call("search_flights", origin=origin, destination=destination, date=date)],
        env_variables=kit.env_for(rng.choice(users), today),
        expected_answer=(f"I cannot book that: there are no flights from {names[origin]} to {names[destination]} "
                         f"on {date}."),
        difficulty=2,
        metadata={"phrasing": phrasing},
    )
