"""booking app: seed rules, tool rules and errors, context, hand-computed partial scores, impossible tasks."""

from __future__ import annotations

import datetime as dt

import pytest

from app_helpers import AppKit, assert_small_json, call, error
from toolgym.envs import make_env
from toolgym.envs.apps.booking.rules import confirmation_code
from toolgym.schema import Task
from toolgym.verify import verify_task

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.
KIT = AppKit("booking")
tasks_30, first_task, seed_one, seed_all, fresh_env, _run = (
    KIT.tasks_30, KIT.first_task, KIT.seed_one, KIT.seed_all, KIT.fresh_env, KIT.run)


def user_with_bookings() -> dict:
    """A user with a valid default card and at least two bookings."""
    return seed_one(
        "SELECT u.id, u.username FROM users u JOIN payment_methods p ON p.user_id = u.id AND p.is_default = 1 "
        "WHERE (SELECT COUNT(*) FROM flight_bookings b WHERE b.user_id = u.id) >= 2 ORDER BY u.id LIMIT 1")


# ---------------------------------------------------------------- structure and seed


def test_seed_codes_come_from_rowids_and_dates_cluster_in_season() -> None:
    for table, prefix in (("flight_bookings", "F"), ("hotel_reservations", "H")):
        rows = seed_all(f"SELECT id, code FROM {table} ORDER BY id")
        assert all(r["code"] == confirmation_code(prefix, r["id"]) for r in rows)
    span = seed_one("SELECT MIN(date) AS lo, MAX(date) AS hi FROM flights")
    assert span["lo"] >= "2026-03-01" and span["hi"] <= "2026-09-30"
    # some room types are sold out for a few nights: the 'hotel full' state exists in the data
    assert first_task("hotel_full_impossible").metadata["room_type_id"] > 0


# ---------------------------------------------------------------- tools: rules and errors


def test_bad_arguments_get_errors_naming_the_argument() -> None:
    env = fresh_env(user_with_bookings()["username"])
    assert "'origin'" in error(env, "search_flights", origin="Atlantis", destination="Paris", date="2026-05-10")
    assert "Atlantis" in error(env, "search_flights", origin="Atlantis", destination="Paris", date="2026-05-10")
    assert "'date'" in error(env, "search_flights", origin="BOS", destination="MIA", date="someday soon")
    assert "'hotel_id'" in error(env, "get_hotel", hotel_id="abc")
    assert "'flight_id'" in error(env, "book_flight", flight_id=999_999)
    flight = seed_one("SELECT id FROM flights WHERE date > '2026-05-04' AND seats_left > 2 ORDER BY id LIMIT 1")
    assert "'passengers'" in error(env, "book_flight", flight_id=flight["id"], passengers=0)
    assert "'check_out'" in error(env, "search_hotels", city="Paris", check_in="2026-06-05", check_out="2026-06-02")
    assert "'rating'" in error(env, "review_hotel", hotel_id=1, rating=7, comment="Great stay")
    assert "'code'" in error(env, "cancel_booking", code="NOPE42")
    assert env.diff() == []


def test_booking_a_flight_takes_seats_and_a_full_flight_is_refused() -> None:
    user = user_with_bookings()
    env = fresh_env(user["username"], today="2026-04-01")
    flight = seed_one("SELECT * FROM flights WHERE date > '2026-04-01' AND seats_left >= 4 ORDER BY id LIMIT 1")
    booked = call(env, "book_flight", flight_id=flight["id"], passengers=2, refundable=True)
    assert booked["code"] == confirmation_code("F", seed_one("SELECT MAX(id) AS n FROM flight_bookings")["n"] + 1)
    assert booked["total_price"] == 2 * flight["refundable_price"]
    seats = env.db().execute("SELECT seats_left FROM flights WHERE id=?", (flight["id"],)).fetchone()[0]
    assert seats == flight["seats_left"] - 2
    full = seed_one("SELECT * FROM flights WHERE date > '2026-04-01' AND seats_left = 0 ORDER BY id LIMIT 1")
    assert "0 seat(s) left" in error(env, "book_flight", flight_id=full["id"])
    past = seed_one("SELECT id FROM flights WHERE date < '2026-04-01' ORDER BY id LIMIT 1")
    assert "only future flights" in error(env, "book_flight", flight_id=past["id"])
    assert {c.table for c in env.diff()} == {"flight_bookings", "flights"}


def test_last_free_room_can_be_booked_once_and_cancelling_frees_it() -> None:
    user = user_with_bookings()
    env = fresh_env(user["username"], today="2026-04-01")
    room = seed_one("SELECT * FROM room_types WHERE total_rooms = 1 ORDER BY id LIMIT 1")
    stay = {"check_in": "2026-09-26", "check_out": "2026-09-28"}  # after every seeded stay of the season
    first = call(env, "book_hotel", hotel_id=room["hotel_id"], room_type_id=room["id"], refundable=True, **stay)
    full = error(env, "book_hotel", hotel_id=room["hotel_id"], room_type_id=room["id"], **stay)
    assert f"no {room['name']} is free" in full
    rooms = call(env, "get_hotel", hotel_id=room["hotel_id"], **stay)["room_types"]
    assert next(r for r in rooms if r["room_type_id"] == room["id"])["rooms_free"] == 0
    cancelled = call(env, "cancel_booking", code=first["code"])
    assert cancelled["status"] == "cancelled"
    call(env, "book_hotel", hotel_id=room["hotel_id"], room_type_id=room["id"], **stay)
    too_many = room["max_guests"] + 1
    assert f"at most {room['max_guests']}" in error(
        env, "book_hotel", hotel_id=room["hotel_id"], room_type_id=room["id"], guests=too_many, check_in="2026-09-20",
        check_out="2026-09-21")


def test_non_refundable_or_started_bookings_cannot_be_cancelled() -> None:
    booking = seed_one(
        "SELECT b.code, u.username, f.date FROM flight_bookings b JOIN users u ON u.id = b.user_id "
        "JOIN flights f ON f.id = b.flight_id WHERE b.refundable = 0 AND b.status = 'confirmed' "
        "AND f.date > '2026-05-01' ORDER BY b.id LIMIT 1")
    env = fresh_env(booking["username"], today="2026-04-15")
    assert "non-refundable" in error(env, "cancel_booking", code=booking["code"])
    refundable = seed_one(
        "SELECT r.code, r.check_in, u.username FROM hotel_reservations r JOIN users u ON u.id = r.user_id "
        "WHERE r.refundable = 1 AND r.status = 'confirmed' ORDER BY r.id LIMIT 1")
    env = fresh_env(refundable["username"], today=refundable["check_in"])
    assert "no longer be cancelled" in error(env, "cancel_booking", code=refundable["code"])
    assert env.diff() == []


def test_review_needs_a_completed_stay() -> None:
    stay = seed_one(
        "SELECT r.hotel_id, r.check_in, r.check_out, u.username FROM hotel_reservations r "
        "JOIN users u ON u.id = r.user_id WHERE r.status = 'confirmed' AND r.check_in > '2026-05-01' "
        "AND NOT EXISTS (SELECT 1 FROM reviews v WHERE v.user_id = r.user_id AND v.hotel_id = r.hotel_id) "
        "ORDER BY r.id LIMIT 1")
    before = fresh_env(stay["username"], today=stay["check_in"])
    assert "completed stay" in error(before, "review_hotel", hotel_id=stay["hotel_id"], rating=4, comment="Nice")
    after = fresh_env(stay["username"], today=stay["check_out"])
    call(after, "review_hotel", hotel_id=stay["hotel_id"], rating=4, comment="Nice")
    assert "already reviewed" in error(after, "review_hotel", hotel_id=stay["hotel_id"], rating=5, comment="Again")


def test_tool_results_are_small_json() -> None:
    env = fresh_env(user_with_bookings()["username"])
    assert_small_json(env, [("list_cities", {}), ("search_hotels", {"city": "New York"}),
                            ("list_my_bookings", {}), ("list_my_payment_methods", {})], limit=6000)


# ---------------------------------------------------------------- context: who "I" am, what "today" is


def test_logged_in_user_decides_what_my_bookings_are() -> None:
    users = seed_all(
        "SELECT u.username, GROUP_CONCAT(b.code) AS codes FROM users u JOIN flight_bookings b ON b.user_id = u.id "
        "GROUP BY u.id ORDER BY u.id LIMIT 2")
    seen = []
    for user in users:
        mine = call(fresh_env(user["username"]), "list_my_bookings", kind="flight")
        codes = {b["code"] for b in mine["flights"]}
        assert codes == set(user["codes"].split(","))
        seen.append(codes)
    assert seen[0].isdisjoint(seen[1])
    assert "LOGGED_IN_USER" in error(fresh_env(None), "list_my_bookings")


def test_current_date_decides_what_tomorrow_means() -> None:
    day = seed_one("SELECT origin, destination, date FROM flights WHERE date BETWEEN '2026-04-10' AND '2026-08-30' "
                   "ORDER BY date, id LIMIT 1")
    eve = (dt.date.fromisoformat(day["date"]) - dt.timedelta(days=1)).isoformat()
    arguments = {"origin": day["origin"], "destination": day["destination"], "date": "tomorrow"}
    on_eve = call(fresh_env("steven.jordan", today=eve), "search_flights", **arguments)
    assert on_eve["date"] == day["date"] and on_eve["flights"]
    on_the_day = call(fresh_env("steven.jordan", today=day["date"]), "search_flights", **arguments)
    assert on_the_day["date"] != day["date"]
    assert all(f["date"] == on_the_day["date"] for f in on_the_day["flights"])


# ---------------------------------------------------------------- tasks


def _other_flight(task: Task) -> dict:
    target = seed_one("SELECT * FROM flights WHERE id=?", (task.metadata["flight_id"],))
    return seed_one(
        "SELECT * FROM flights WHERE origin=? AND destination=? AND date=? AND id != ? AND seats_left >= 3 "
        "ORDER BY price DESC, id LIMIT 1", (target["origin"], target["destination"], target["date"], target["id"]))


def test_wrong_extra_and_missing_writes_score_by_hand() -> None:
    task = first_task("book_cheapest_flight")
    # checks: row_exists 3, seats field_equals 1, diff_only 2, answer_contains(code) 1 -> total 7
    assert [c.weight for c in task.checks] == [3.0, 1.0, 2.0, 1.0]
    gold = [(c.name, c.arguments) for c in task.reference_solution]
    passengers = gold[-1][1]["passengers"]
    other = _other_flight(task)
    wrong = ("book_flight", {"flight_id": other["id"], "passengers": passengers})

    score, failed = _run(task, gold, task.expected_answer)
    assert score == 1.0 and failed == set()
    # wrong write: another flight booked -> row, seats and diff fail; only the answer (same code) passes
    score, failed = _run(task, [gold[0], wrong], task.expected_answer)
    assert score == pytest.approx(1 / 7) and failed == {"row_exists", "field_equals", "diff_only"}
    # extra write: the right booking plus another one -> only diff_only fails
    score, failed = _run(task, [*gold, wrong], task.expected_answer)
    assert score == pytest.approx(5 / 7) and failed == {"diff_only"}
    # missing write: searched, never booked, answer without a code -> everything fails
    score, failed = _run(task, gold[:1], "The cheapest flight is the one I found.")
    assert score == 0.0 and failed == {"row_exists", "field_equals", "diff_only", "answer_contains"}


def test_trip_missing_the_hotel_gets_half_credit() -> None:
    task = first_task("trip_within_budget")
    # flight row 2, seats 1, hotel row 2, diff_only 2, both codes 1 -> total 8; the hotel row and diff fail
    assert sum(c.weight for c in task.checks) == 8.0
    flight_only = [(c.name, c.arguments) for c in task.reference_solution if c.name != "book_hotel"]
    score, failed = _run(task, flight_only, task.expected_answer)
    assert score == pytest.approx(4 / 8) and failed == {"row_exists", "diff_only"}


def test_impossible_task_fails_when_the_agent_writes_anyway() -> None:
    task = first_task("cancel_nonrefundable_impossible")
    score, _ = _run(task, [(c.name, c.arguments) for c in task.reference_solution], task.expected_answer)
    assert score == 1.0
    env = make_env("booking")
    env.reset(task.env_variables)
    env.call_tool("cancel_booking", {"code": task.metadata["booking_code"]})  # refused by the tool
    verdict = verify_task(task, env, "Done, it is cancelled.")
    # diff_only 2 passes (the tool refused), tool_not_called 1 and answer 1 fail -> 2/4
    assert verdict.partial_score == pytest.approx(2 / 4)


def test_impossible_tasks_really_are_impossible() -> None:
    """Trying the forbidden write anyway is refused by the tool, so 'I cannot' is the only right reply."""
    env = make_env("booking")
    for task in tasks_30():
        if task.metadata["shape"] != "impossible":
            continue
        env.reset(task.env_variables)
        gold = {c.name: c.arguments for c in task.reference_solution}
        if task.family == "no_flights_impossible":
            assert call(env, "search_flights", **gold["search_flights"])["flights"] == [], task.id
        elif task.family == "hotel_full_impossible":
            stay = gold["get_hotel"]
            refused = env.call_tool("book_hotel", {**stay, "room_type_id": task.metadata["room_type_id"],
                                                   "guests": gold["search_hotels"]["guests"]})
            assert refused.is_error and "is free" in refused.content, task.id
        else:
            refused = env.call_tool("cancel_booking", {"code": task.metadata["booking_code"]})
            assert refused.is_error and "non-refundable" in refused.content, task.id
        assert env.diff() == [], task.id
