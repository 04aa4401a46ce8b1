"""Task families about the logged-in user's own bookings: look them up, cancel them, or fail to."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.kit.row_checks import field_is, updated
from toolgym.schema import Check

TEXTS = kit.module_texts(__file__)

def my_bookings(world: World, kind: str) -> list[dict[str, Any]]:
    """All bookings of one kind with what prompts and checks need; `starts` and `city` for both kinds."""
    if kind == "flight":
        return world.query(
            "SELECT b.*, f.flight_number, f.origin, f.destination, f.date, f.depart_time, f.seats_left, "
            "f.date AS starts, c.name AS city, c.id AS city_id FROM flight_bookings b "
            "JOIN flights f ON f.id = b.flight_id JOIN cities c ON c.airport_code = f.destination ORDER BY b.id")
    return world.query(
        "SELECT r.*, r.check_in AS starts, h.name AS hotel, c.name AS city, c.id AS city_id, t.name AS room "
        "FROM hotel_reservations r JOIN hotels h ON h.id = r.hotel_id JOIN cities c ON c.id = h.city_id "
        "JOIN room_types t ON t.id = r.room_type_id ORDER BY r.id")


def _only_one_in_city(world: World, kind: str, booking: dict[str, Any]) -> bool:
    """True when `booking` is the user's only confirmed booking of this kind in its city, past or future,
    so "my hotel in <city>" can mean nothing else."""
    same = [b for b in my_bookings(world, kind)
            if b["user_id"] == booking["user_id"] and b["city_id"] == booking["city_id"]
            and b["status"] == "confirmed"]
    return [b["id"] for b in same] == [booking["id"]]


def _pick_upcoming(
    rng: random.Random, world: World, kind: str, refundable: int | None
) -> tuple[dict[str, Any], dt.date] | None:
    """A confirmed booking (optionally of one refundability) and a CURRENT_DATE before it starts."""
    rows = [b for b in my_bookings(world, kind) if b["status"] == "confirmed"
            and (refundable is None or b["refundable"] == refundable)]
    booking = rng.choice(rows)
    starts = kit.day_of(booking["starts"])
    low = max(kit.day_of(booking["booked_on"]) + dt.timedelta(days=1), starts - dt.timedelta(days=40))
    today = kit.day_in_window(rng, low, starts - dt.timedelta(days=1))
    if today is None or not _only_one_in_city(world, kind, booking):
        return None
    return booking, today


TRIP_QUESTIONS = {tuple(key.split()): value for key, value in TEXTS["TRIP_QUESTIONS"].items()}


def my_trip_lookup(rng: random.Random, world: World) -> TaskDraft | None:
    """'My flight to X' / 'my hotel in X': LOGGED_IN_USER and CURRENT_DATE decide which booking is meant."""
    key = sorted(TRIP_QUESTIONS)[rng.randrange(len(TRIP_QUESTIONS))]
    kind, question = key
    picked = _pick_upcoming(rng, world, kind, None)
    if picked is None:
        return None
    booking, today = picked
    fields, templates = TRIP_QUESTIONS[key]
    values = [str(booking[f]) for f in fields]
    if kind == "flight":
        answer = (f"Your flight to {booking['city']} is {booking['flight_number']} on {booking['date']}, departing "
                  f"{booking['depart_time']}; confirmation code {booking['code']}.")
    else:
        answer = (f"You're booked at {booking['hotel']} in {booking['city']} from {booking['check_in']} to "
                  f"{booking['check_out']}, ${booking['total_price']} in total; confirmation code {booking['code']}.")
    phrasing, prompt = kit.phrase(rng, templates, city=booking["city"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks(values),
        reference_solution=[kit.call("list_my_bookings", kind=kind, upcoming_only=True)],
        env_variables=kit.env_for(kit.user_by_id(world, booking["user_id"]), today),
        expected_answer=answer,
        difficulty=2,
        metadata={"phrasing": f"{kind}-{question}{phrasing}", "booking_code": booking["code"]},
    )


CANCEL_PROMPTS = TEXTS["CANCEL_PROMPTS"]


def _cancel_prompt(rng: random.Random, kind: str, booking: dict[str, Any]) -> tuple[str, int]:
    templates = CANCEL_PROMPTS[kind]
    phrasing, prompt = kit.phrase(
        rng, templates, city=booking["city"], hotel=booking.get("hotel"), start=booking["starts"],
        start_h=kit.human_date(booking["starts"], year=True), origin=booking.get("origin"),
        destination=booking.get("destination"))
    return prompt, phrasing


def cancel_in_city(rng: random.Random, world: World) -> TaskDraft | None:
    """Find the user's refundable booking in a city and cancel it (a flight also gives its seats back)."""
    kind = "hotel" if rng.random() < 0.5 else "flight"
    picked = _pick_upcoming(rng, world, kind, refundable=1)
    if picked is None:
        return None
    booking, today = picked
    prompt, phrasing = _cancel_prompt(rng, kind, booking)
    table = "hotel_reservations" if kind == "hotel" else "flight_bookings"
    checks: list[Check] = [field_is(table, {"id": booking["id"]}, "status", "cancelled", f"booking {booking['code']} cancelled", weight=3.0)]
    expected = [updated(table, {"id": booking["id"]}, ["status", "cancelled_on"])]
    if kind == "flight":
        checks.append(field_is("flights", {"id": booking["flight_id"]}, "seats_left", booking["seats_left"] + booking["passengers"], "seats given back to the flight", weight=1.0))
        expected.append(updated("flights", {"id": booking["flight_id"]}, ["seats_left"]))
    what = f"hotel reservation at {booking['hotel']}" if kind == "hotel" else f"flight {booking['flight_number']}"
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected), kit.answer_has([booking["code"]], label="answer names the booking")],
        reference_solution=[kit.call("list_my_bookings", kind=kind, upcoming_only=True),
                            kit.call("cancel_booking", code=booking["code"])],
        env_variables=kit.env_for(kit.user_by_id(world, booking["user_id"]), today),
        expected_answer=(f"Cancelled your {what} on {booking['starts']} (code {booking['code']}); "
                         f"${booking['total_price']} will be refunded."),
        difficulty=2,
        metadata={"phrasing": f"{kind}{phrasing}", "booking_code": booking["code"]},
    )


def cancel_nonrefundable_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The booking the user wants cancelled is non-refundable: the agent must refuse and change nothing."""
    kind = "hotel" if rng.random() < 0.5 else "flight"
    picked = _pick_upcoming(rng, world, kind, refundable=0)
    if picked is None:
        return None
    booking, today = picked
    if rng.random() < 0.25:
        prompt, phrasing = f"Please cancel booking {booking['code']}.", 9
        lookup = kit.call("get_booking", code=booking["code"])
    else:
        prompt, phrasing = _cancel_prompt(rng, kind, booking)
        lookup = kit.call("list_my_bookings", kind=kind, upcoming_only=True)
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("cancel_booking"),
        reference_solution=[lookup],
        env_variables=kit.env_for(kit.user_by_id(world, booking["user_id"]), today),
        expected_answer=(f"I cannot cancel booking {booking['code']}: it was booked at a non-refundable "
                         f"{'rate' if kind == 'hotel' else 'fare'}, so it cannot be cancelled."),
        difficulty=2,
        metadata={"phrasing": f"{kind}{phrasing}", "booking_code": booking["code"]},
    )

