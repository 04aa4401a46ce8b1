"""homes app: seed rules, tool rules and errors, context, hand-computed partial scores, impossible tasks."""

from __future__ import annotations

import datetime as dt

import pytest

from app_helpers import AppKit, assert_small_json, call, error
from toolgym.envs import make_env
from toolgym.envs.apps.homes import APP
from toolgym.envs.apps.homes.rules import TOUR_SLOTS, can_tour, min_offer, parse_time, price_per_sqft
from toolgym.schema import Task
from toolgym.verify import verify_task

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.
KIT = AppKit("homes")
tasks_30, first_task, seed_one, seed_all, fresh_env, _run = (
    KIT.tasks_30, KIT.first_task, KIT.seed_one, KIT.seed_all, KIT.fresh_env, KIT.run)


def some_user() -> dict:
    """A user with saved homes (has data in the app)."""
    return seed_one("SELECT u.id, u.username FROM users u WHERE EXISTS (SELECT 1 FROM saved_homes s "
                    "WHERE s.user_id = u.id) ORDER BY u.id LIMIT 1")


def active_listing(offset: int = 0) -> dict:
    return seed_one("SELECT * FROM listings WHERE status='active' ORDER BY id LIMIT 1 OFFSET ?", (offset,))


# ---------------------------------------------------------------- structure and seed


def test_seed_is_consistent_with_the_rules() -> None:
    statuses = {r["status"] for r in seed_all("SELECT DISTINCT status FROM listings ORDER BY status")}
    assert statuses == {"active", "pending", "sold"}
    # every listing event happened before the first task date; tours span the season
    assert seed_one("SELECT MAX(date) AS d FROM price_history")["d"] < "2026-04-01"
    span = seed_one("SELECT MIN(date) AS lo, MAX(date) AS hi FROM tours")
    assert span["lo"] >= "2026-03-01" and span["hi"] <= "2026-09-30"
    # upcoming tours are only of active listings, and every open offer meets the minimum
    assert seed_all("SELECT t.id FROM tours t JOIN listings l ON l.id = t.listing_id "
                    "WHERE t.date >= '2026-04-01' AND t.status='scheduled' AND l.status != 'active'") == []
    for offer in seed_all("SELECT o.amount, l.price FROM offers o JOIN listings l ON l.id = o.listing_id "
                          "WHERE o.status='open' ORDER BY o.id"):
        assert offer["amount"] >= min_offer(offer["price"])
    # open-house days exist: some listing has at least four tours on one day
    busy = seed_one("SELECT MAX(n) AS n FROM (SELECT COUNT(*) AS n FROM tours WHERE status='scheduled' "
                    "GROUP BY listing_id, date)")
    assert busy["n"] >= 4


def test_rule_helpers() -> None:
    assert [parse_time(t) for t in ("14:00", "9:00", "2 pm", "10am", "12 p.m.", "12 am", "noon", "13 pm")] == [
        "14:00", "09:00", "14:00", "10:00", "12:00", "00:00", None, None]
    assert min_offer(400_000) == 360_000 and min_offer(400_001) == 360_001
    assert price_per_sqft(300_000, 1_000) == 300 and price_per_sqft(1_500, 1_000) == 2  # halves round up


# ---------------------------------------------------------------- tools: rules and errors


def test_bad_arguments_get_errors_naming_the_argument() -> None:
    env = fresh_env(some_user()["username"])
    home = active_listing()
    assert "'city'" in error(env, "search_listings", city="Atlantis")
    assert "Austin" in error(env, "search_listings", city="Atlantis")  # lists the cities that exist
    assert "'home_type'" in error(env, "search_listings", city="Austin", home_type="castle")
    assert "'listing_id'" in error(env, "get_listing", listing_id=999_999)
    assert "'listing_id'" in error(env, "get_listing", listing_id="abc")
    assert "'agent_id'" in error(env, "get_agent", agent_id=0)
    assert "'date'" in error(env, "schedule_tour", listing_id=home["id"], date="someday", time="10:00")
    assert "'time'" in error(env, "schedule_tour", listing_id=home["id"], date="tomorrow", time="14:30")
    assert "'amount'" in error(env, "make_offer", listing_id=home["id"], amount=1000)
    assert "'tour_id'" in error(env, "cancel_tour", tour_id=999_999)
    assert "'offer_id'" in error(env, "withdraw_offer", offer_id=999_999)
    assert "'min_beds'" in error(env, "create_saved_search", city="Denver", min_beds=12)
    assert env.diff() == []


def test_search_filters_sorts_and_points_to_off_market_matches() -> None:
    env = fresh_env(some_user()["username"])
    found = call(env, "search_listings", city="austin, tx", min_beds=3, sort_by="price_per_sqft")
    rows = found["listings"]
    assert rows and all(r["beds"] >= 3 and r["status"] == "active" for r in rows)
    assert [r["price_per_sqft"] for r in rows] == sorted(r["price_per_sqft"] for r in rows)
    assert all(r["price_per_sqft"] == price_per_sqft(r["price"], r["sqft"]) for r in rows)
    sold = seed_one("SELECT l.address, c.name AS city FROM listings l JOIN cities c ON c.id = l.city_id "
                    "WHERE l.status='sold' ORDER BY l.id LIMIT 1")
    hidden = call(env, "search_listings", city=sold["city"], address=sold["address"])
    assert hidden["listings"] == [] and "status='any'" in hidden["note"]
    shown = call(env, "search_listings", city=sold["city"], address=sold["address"], status="any")
    assert [r["status"] for r in shown["listings"]] == ["sold"]


def test_tour_rules_free_slots_one_per_home_no_double_booking() -> None:
    user = some_user()
    env = fresh_env(user["username"], today="2026-09-01")  # after every seeded tour but the last few days
    home, other = active_listing(0), active_listing(1)
    booked = call(env, "schedule_tour", listing_id=home["id"], date="2026-10-02", time="2 pm")
    assert (booked["date"], booked["time"], booked["status"]) == ("2026-10-02", "14:00", "scheduled")
    slots = call(env, "list_tour_slots", listing_id=home["id"], date="2026-10-02")
    assert "14:00" in slots["taken_slots"] and "14:00" not in slots["free_slots"]
    assert "already have a tour of" in error(env, "schedule_tour", listing_id=home["id"], date="2026-10-03",
                                             time="10:00")
    assert "another tour on 2026-10-02 at 14:00" in error(env, "schedule_tour", listing_id=other["id"],
                                                          date="2026-10-02", time="14:00")
    assert "after today" in error(env, "schedule_tour", listing_id=other["id"], date="today", time="10:00")
    assert "too far ahead" in error(env, "schedule_tour", listing_id=other["id"], date="2026-12-01", time="10:00")
    pending = seed_one("SELECT id FROM listings WHERE status='pending' ORDER BY id LIMIT 1")
    assert "only for active listings" in error(env, "schedule_tour", listing_id=pending["id"], date="2026-10-02",
                                               time="10:00")
    # cancelling frees the slot and the one-tour-per-home rule
    assert call(env, "cancel_tour", tour_id=booked["tour_id"])["status"] == "cancelled"
    call(env, "schedule_tour", listing_id=home["id"], date="2026-10-03", time="10:00")
    assert {c.table for c in env.diff()} == {"tours"}


def test_a_taken_slot_is_refused_with_the_free_times() -> None:
    tour = seed_one("SELECT t.listing_id, t.date, t.time, t.user_id FROM tours t JOIN listings l ON l.id = t.listing_id "
                    "WHERE t.status='scheduled' AND l.status='active' AND t.date > '2026-05-10' ORDER BY t.id LIMIT 1")
    other = seed_one("SELECT username FROM users WHERE id != ? ORDER BY id LIMIT 1", (tour["user_id"],))
    env = fresh_env(other["username"], today="2026-05-10")
    refused = error(env, "schedule_tour", listing_id=tour["listing_id"], date=tour["date"], time=tour["time"])
    assert f"the {tour['time']} tour slot" in refused and "is taken" in refused and "free that day" in refused
    assert env.diff() == []


def test_cancel_only_later_tours() -> None:
    tour = seed_one("SELECT t.id, t.date, u.username FROM tours t JOIN users u ON u.id = t.user_id "
                    "WHERE t.status='scheduled' AND t.date > '2026-05-01' ORDER BY t.id LIMIT 1")
    on_the_day = fresh_env(tour["username"], today=tour["date"])
    assert "only later tours" in error(on_the_day, "cancel_tour", tour_id=tour["id"])
    stranger = seed_one("SELECT u.username FROM users u WHERE u.id NOT IN (SELECT user_id FROM tours WHERE id=?) "
                        "ORDER BY u.id LIMIT 1", (tour["id"],))
    assert "'tour_id'" in error(fresh_env(stranger["username"], today="2026-04-01"), "cancel_tour", tour_id=tour["id"])


def test_offer_rules_minimum_one_open_offer_and_active_only() -> None:
    env = fresh_env(some_user()["username"])
    home = active_listing(2)
    floor = min_offer(home["price"])
    low = error(env, "make_offer", listing_id=home["id"], amount=floor - 1)
    assert f"at least ${floor}" in low and "90%" in low
    made = call(env, "make_offer", listing_id=home["id"], amount=floor)
    assert made["status"] == "open" and made["asking_price"] == home["price"]
    assert "withdraw it with withdraw_offer" in error(env, "make_offer", listing_id=home["id"], amount=home["price"])
    call(env, "withdraw_offer", offer_id=made["offer_id"])
    assert "only open offers" in error(env, "withdraw_offer", offer_id=made["offer_id"])
    call(env, "make_offer", listing_id=home["id"], amount=home["price"])
    sold = seed_one("SELECT id, price FROM listings WHERE status='sold' ORDER BY id LIMIT 1")
    assert "sold" in error(env, "make_offer", listing_id=sold["id"], amount=sold["price"])
    assert [(c.table, c.op) for c in env.diff()] == [("offers", "insert"), ("offers", "insert")]


def test_saved_homes_and_searches() -> None:
    user = some_user()
    env = fresh_env(user["username"])
    saved = seed_one("SELECT listing_id FROM saved_homes WHERE user_id=? ORDER BY id LIMIT 1", (user["id"],))
    assert "already in your saved homes" in error(env, "save_home", listing_id=saved["listing_id"])
    call(env, "unsave_home", listing_id=saved["listing_id"])
    assert "not in your saved homes" in error(env, "unsave_home", listing_id=saved["listing_id"])
    search = call(env, "create_saved_search", city="Denver", max_price=600000, min_beds=3)
    expected = seed_one("SELECT COUNT(*) AS n FROM listings WHERE city_id=2 AND status='active' AND price<=600000 "
                        "AND beds>=3")
    assert search["active_matches"] == expected["n"]
    assert "already have this saved search" in error(env, "create_saved_search", city="Denver", max_price=600000,
                                                     min_beds=3)
    assert search["search_id"] in [s["search_id"] for s in call(env, "list_saved_searches")]


def test_tool_results_are_small_json() -> None:
    env = fresh_env(some_user()["username"])
    assert_small_json(env, [("search_listings", {"city": "Seattle", "status": "any"}),
                            ("get_listing", {"listing_id": 1}), ("get_agent", {"agent_id": 1}),
                            ("list_saved_homes", {}), ("list_my_tours", {}), ("list_my_offers", {}),
                            ("list_saved_searches", {})], limit=6000)


# ---------------------------------------------------------------- context: who "I" am, what "today" is


def test_logged_in_user_decides_what_my_saved_homes_are() -> None:
    users = seed_all("SELECT user_id, GROUP_CONCAT(listing_id) AS ids FROM saved_homes GROUP BY user_id "
                     "ORDER BY user_id LIMIT 2")
    seen = []
    for row in users:
        username = seed_one("SELECT username FROM users WHERE id=?", (row["user_id"],))["username"]
        mine = {h["listing_id"] for h in call(fresh_env(username), "list_saved_homes")}
        assert mine == {int(i) for i in row["ids"].split(",")}
        seen.append(mine)
    assert seen[0] != seen[1]
    assert "LOGGED_IN_USER" in error(fresh_env(None), "list_saved_homes")


def test_current_date_decides_what_tomorrow_means() -> None:
    home = active_listing()
    user = some_user()
    for today in ("2026-05-04", "2026-07-20"):
        slots = call(fresh_env(user["username"], today=today), "list_tour_slots", listing_id=home["id"], date="tomorrow")
        assert slots["date"] == (dt.date.fromisoformat(today) + dt.timedelta(days=1)).isoformat()
    env = fresh_env(user["username"], today="2026-06-10")  # a Wednesday
    slot = next(s for s in TOUR_SLOTS if can_tour(APP.world(), user["id"], home["id"], "2026-06-12", s, "2026-06-10"))
    booked = call(env, "schedule_tour", listing_id=home["id"], date="next Friday", time=slot)
    assert booked["date"] == "2026-06-12"


# ---------------------------------------------------------------- tasks


def test_tasks_log_in_users_who_have_homes_data() -> None:
    with_data = {r["username"] for r in seed_all(
        "SELECT username FROM users u WHERE EXISTS (SELECT 1 FROM saved_homes s WHERE s.user_id = u.id) "
        "OR EXISTS (SELECT 1 FROM tours t WHERE t.user_id = u.id) OR EXISTS (SELECT 1 FROM offers o "
        "WHERE o.buyer_id = u.id) OR EXISTS (SELECT 1 FROM saved_searches q WHERE q.user_id = u.id)")}
    for task in tasks_30():
        assert task.env_variables["LOGGED_IN_USER"] in with_data, task.id


def _other_tourable(task: Task, listing_id: int, date: str, slot: str) -> dict:
    """Another active listing the same user may tour at the same date and time."""
    world = APP.world()
    user = seed_one("SELECT id FROM users WHERE username=?", (task.env_variables["LOGGED_IN_USER"],))
    today = task.env_variables["CURRENT_DATE"]
    for row in seed_all("SELECT id FROM listings WHERE status='active' AND id != ? ORDER BY id", (listing_id,)):
        if can_tour(world, user["id"], row["id"], date, slot, today):
            return row
    raise AssertionError("no other listing to tour")


def test_wrong_extra_and_missing_writes_score_by_hand() -> None:
    task = first_task("schedule_named_tour")
    # checks: row_exists 3, diff_only 2, answer_contains(date, time) 1 -> total 6
    assert [c.weight for c in task.checks] == [3.0, 2.0, 1.0]
    gold = [(c.name, c.arguments) for c in task.reference_solution]
    booking = gold[-1][1]
    other = _other_tourable(task, booking["listing_id"], booking["date"], booking["time"])
    wrong_home = ("schedule_tour", {**booking, "listing_id": other["id"]})
    user_id = seed_one("SELECT id FROM users WHERE username=?", (task.env_variables["LOGGED_IN_USER"],))["id"]
    other_time = next(s for s in TOUR_SLOTS if s != booking["time"] and can_tour(
        APP.world(), user_id, booking["listing_id"], booking["date"], s, task.env_variables["CURRENT_DATE"]))
    wrong_time = ("schedule_tour", {**booking, "time": other_time})

    score, failed = _run(task, gold, task.expected_answer)
    assert score == 1.0 and failed == set()
    # wrong write (another home): the row and the diff fail; only the answer passes
    score, failed = _run(task, [*gold[:-1], wrong_home], task.expected_answer)
    assert score == pytest.approx(1 / 6) and failed == {"row_exists", "diff_only"}
    # wrong write (right home, wrong time): the row fails; a tour of this home is the allowed change
    score, failed = _run(task, [*gold[:-1], wrong_time], task.expected_answer)
    assert score == pytest.approx(3 / 6) and failed == {"row_exists"}
    # extra write: the right tour plus a tour of another home an hour apart -> only diff_only fails
    extra_time = next(s for s in TOUR_SLOTS if s != booking["time"] and can_tour(
        APP.world(), user_id, other["id"], booking["date"], s, task.env_variables["CURRENT_DATE"]))
    extra = ("schedule_tour", {**booking, "listing_id": other["id"], "time": extra_time})
    score, failed = _run(task, [*gold, extra], task.expected_answer)
    assert score == pytest.approx(4 / 6) and failed == {"diff_only"}
    # missing write: looked up, never booked, vague answer -> everything fails
    score, failed = _run(task, gold[:-1], "I found the listing and its free times.")
    assert score == 0.0 and failed == {"row_exists", "diff_only", "answer_contains"}


def test_save_tour_offer_missing_the_offer_gets_partial_credit() -> None:
    task = first_task("save_tour_offer")
    # saved 2, tour 2, offer 2, diff_only 2, answer 1 -> total 9; the offer row and the diff fail
    assert sum(c.weight for c in task.checks) == 9.0
    without_offer = [(c.name, c.arguments) for c in task.reference_solution if c.name != "make_offer"]
    score, failed = _run(task, without_offer, task.expected_answer)
    assert score == pytest.approx(5 / 9) and failed == {"row_exists", "diff_only"}


def test_raise_offer_needs_the_withdrawal_first() -> None:
    task = first_task("raise_offer")
    gold = [(c.name, c.arguments) for c in task.reference_solution]
    env = make_env("homes")
    env.reset(task.env_variables)
    refused = env.call_tool("make_offer", gold[-1][1])  # the open offer blocks a second one
    assert refused.is_error and "withdraw" in refused.content
    score, _ = _run(task, gold, task.expected_answer)
    assert score == 1.0


def test_impossible_task_fails_when_the_agent_writes_anyway() -> None:
    task = first_task("tour_off_market_impossible")
    score, _ = _run(task, [(c.name, c.arguments) for c in task.reference_solution], task.expected_answer)
    assert score == 1.0
    env = make_env("homes")
    env.reset(task.env_variables)
    env.call_tool("schedule_tour", {"listing_id": task.metadata["listing_id"], "date": "tomorrow", "time": "10:00"})
    verdict = verify_task(task, env, "Done, your tour is booked.")
    # diff_only 2 passes (the tool refused), tool_not_called 1 and answer 1 fail -> 2/4
    assert verdict.partial_score == pytest.approx(2 / 4)


def test_impossible_tasks_really_are_impossible() -> None:
    """Trying the forbidden write anyway is refused by the tool, so 'I cannot' is the only right reply."""
    env = make_env("homes")
    for task in tasks_30():
        if task.metadata["shape"] != "impossible":
            continue
        env.reset(task.env_variables)
        listing_id = task.metadata["listing_id"]
        if task.family == "tour_slot_taken_impossible":
            refused = env.call_tool("schedule_tour", {"listing_id": listing_id, "date": task.metadata["date"],
                                                      "time": task.metadata["time"]})
            assert refused.is_error and "is taken" in refused.content, task.id
        elif task.family == "tour_off_market_impossible":
            refused = env.call_tool("schedule_tour", {"listing_id": listing_id, "date": "tomorrow", "time": "10:00"})
            assert refused.is_error and "only for active listings" in refused.content, task.id
        else:
            refused = env.call_tool("make_offer", {"listing_id": listing_id, "amount": task.metadata["amount"]})
            reason = "at least" if task.family == "offer_too_low_impossible" else "only for active listings"
            assert refused.is_error and reason in refused.content, task.id
        assert env.diff() == [], task.id
