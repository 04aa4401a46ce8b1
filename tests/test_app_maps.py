"""maps app: seed rules, opening-hours and routing rules, tool errors, context, hand-computed partial scores."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import defaultdict

import pytest

from app_helpers import AppKit, assert_small_json, call, error
from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs import make_env
from toolgym.envs.apps.mail.content import LOCATIONS
from toolgym.envs.apps.maps import APP
from toolgym.envs.apps.maps.rules import CATEGORIES, parse_time
from toolgym.envs.apps.maps.tools import search_places
from toolgym.envs.people import population
from toolgym.verify import verify_task

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.
KIT = AppKit("maps", today="2026-05-06")
tasks_30, tasks_of, seed_one, seed_all, fresh_env, _run = (
    KIT.tasks_30, KIT.tasks_of, KIT.seed_one, KIT.seed_all, KIT.fresh_env, KIT.run)


def haversine(a: dict, b: dict) -> float:
    """Independent great-circle distance for cross-checking the app's own rules."""
    p1, p2 = math.radians(a["lat"]), math.radians(b["lat"])
    h = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(b["lon"] - a["lon"]) / 2) ** 2
    return 2 * 6371.0 * math.asin(math.sqrt(h))


# ---------------------------------------------------------------- structure and seed


def test_users_are_the_shared_population_with_homes_and_offices() -> None:
    rows = seed_all("SELECT u.username, p.category FROM users u JOIN places p ON p.id = u.work_place_id ORDER BY u.id")
    assert [r["username"] for r in rows] == [p.username for p in population()]
    assert {r["category"] for r in rows} == {"office"}
    quiet = seed_all("SELECT u.id FROM users u WHERE NOT EXISTS (SELECT 1 FROM visits v WHERE v.user_id = u.id) "
                     "OR NOT EXISTS (SELECT 1 FROM saved_lists l WHERE l.user_id = u.id)")
    assert quiet == []


def test_search_offers_exactly_the_place_categories() -> None:
    assert search_places.spec.parameters["properties"]["category"]["enum"] == list(CATEGORIES)


def test_visits_happen_while_places_are_open_and_seed_history_predates_tasks() -> None:
    bad = seed_all(
        "SELECT v.id FROM visits v LEFT JOIN opening_hours h ON h.place_id = v.place_id "
        "AND h.weekday = (CAST(strftime('%w', v.date) AS INTEGER) + 6) % 7 "
        "WHERE h.id IS NULL OR v.arrived < h.opens OR v.departed > h.closes "
        "OR EXISTS (SELECT 1 FROM closures c WHERE c.place_id = v.place_id AND c.date = v.date)")
    assert bad == []
    assert seed_one("SELECT MAX(created_on) AS d FROM reviews")["d"] < "2026-04-01"
    assert seed_one("SELECT MAX(saved_on) AS d FROM saved_places")["d"] < "2026-04-01"
    span = seed_one("SELECT MIN(date) AS lo, MAX(date) AS hi FROM visits")
    assert span["lo"] >= "2026-03-01" and span["hi"] <= "2026-09-30"


# ---------------------------------------------------------------- rules: hours, routes, names


def test_parse_time_reads_clock_words() -> None:
    assert [parse_time(t) for t in ("9", "9am", "9:30 pm", "21:30", "12am", "noon", "07:05")] == [
        "09:00", "09:00", "21:30", "21:30", "00:00", "12:00", "07:05"]
    for bad in ("25:00", "13pm", "soon", "9:75"):
        with pytest.raises(ValueError):
            parse_time(bad)


def test_open_means_opens_inclusive_closes_exclusive_and_closures_win() -> None:
    hours = seed_one(
        "SELECT h.place_id, h.weekday, h.opens, h.closes, p.name FROM opening_hours h JOIN places p ON p.id = h.place_id "
        "WHERE h.opens != '00:00' AND h.weekday = 2 AND p.category = 'cafe' ORDER BY h.place_id LIMIT 1")
    wednesday = "2026-05-06"
    env = fresh_env("steven.jordan", today=wednesday)

    def listed(at: str) -> bool:
        found = call(env, "search_places", query=hours["name"], open_on=wednesday, open_at=at)["places"]
        return any(p["place_id"] == hours["place_id"] for p in found)

    before = (dt.datetime.strptime(hours["opens"], "%H:%M") - dt.timedelta(minutes=1)).strftime("%H:%M")
    last = (dt.datetime.strptime(hours["closes"], "%H:%M") - dt.timedelta(minutes=1)).strftime("%H:%M")
    assert [listed(before), listed(hours["opens"]), listed(last), listed(hours["closes"])] == [False, True, True, False]
    closure = seed_one("SELECT c.place_id, c.date, c.reason FROM closures c JOIN opening_hours h ON h.place_id = c.place_id "
                       "AND h.weekday = (CAST(strftime('%w', c.date) AS INTEGER) + 6) % 7 ORDER BY c.id LIMIT 1")
    status = call(env, "get_place", place=closure["place_id"], date=closure["date"])["on_date"]
    assert status["hours"] == "closed" and status["closure"] == closure["reason"]


def test_directions_are_deterministic_per_mode_and_resolve_home_work_and_meeting_rooms() -> None:
    user = seed_one("SELECT * FROM users ORDER BY id LIMIT 1")
    env = fresh_env(user["username"])
    a, b = seed_all("SELECT * FROM places WHERE category = 'museum' ORDER BY id LIMIT 2")
    routes = {mode: call(env, "get_directions", origin=a["id"], destination=b["name"], mode=mode)
              for mode in ("walk", "bike", "drive", "transit")}
    straight = haversine(a, b)
    assert routes["walk"]["distance_km"] == pytest.approx(straight * 1.2, abs=0.06)
    assert routes["walk"]["duration_min"] > routes["bike"]["duration_min"]
    assert routes["walk"]["duration_min"] == round(routes["walk"]["distance_km"] / 4.8 * 60)
    assert call(env, "get_directions", origin=b["id"], destination=a["id"], mode="walk") == {
        **routes["walk"], "origin": routes["walk"]["destination"], "destination": routes["walk"]["origin"]}
    # every physical meeting room of the mail app's invites is inside the office and routable
    for room in LOCATIONS:
        if room in ("Zoom", "Microsoft Teams"):
            continue
        leg = call(env, "get_directions", origin="home", destination=room, mode="transit")
        assert leg["destination"]["name"] == "Example HQ" and leg["origin"]["name"] == "Home"
    work = call(env, "get_directions", origin="home", destination="work")
    assert work["destination"]["address"] == seed_one("SELECT address FROM places WHERE id=?",
                                                      (user["work_place_id"],))["address"]
    assert "same place" in error(env, "get_directions", origin=a["id"], destination=a["name"])


def test_bad_arguments_get_errors_naming_the_argument() -> None:
    env = fresh_env("steven.jordan")
    assert "'destination'" in error(env, "get_directions", origin="home", destination="Blue Heron Supper Club")
    assert "did you mean" in error(env, "get_directions", origin="home", destination="CareWell")
    assert "'origin'" in error(env, "get_directions", origin=99_999, destination="home")
    assert "'mode'" in error(env, "get_directions", origin="home", destination="work", mode="fly")
    assert "'city'" in error(env, "search_places", city="Springfield")
    assert "'open_at'" in error(env, "search_places", open_at="late evening")
    assert "'open_on'" in error(env, "search_places", open_on="someday")
    assert "'radius_km'" in error(env, "nearby_places", place="home", radius_km=50)
    assert "'category'" in error(env, "nearby_places", place="home", category="zoo")
    assert "'stars'" in error(env, "write_review", place=3, stars=9, text="Great")
    assert "'list_name'" in error(env, "save_place", list_name="Nope", place=3)
    assert "'place'" in error(env, "get_place", place="home")
    assert "'date'" in error(env, "get_my_timeline", date="tomorrow")
    assert "'end_date'" in error(env, "get_my_timeline", date="2026-05-01", end_date="2026-04-20")
    assert env.diff() == []


def test_write_rules_one_review_unique_list_names_own_lists_only() -> None:
    review = seed_one("SELECT r.place_id, u.username FROM reviews r JOIN users u ON u.id = r.user_id ORDER BY r.id LIMIT 1")
    env = fresh_env(review["username"])
    assert "already reviewed" in error(env, "write_review", place=review["place_id"], stars=5, text="Again")
    fresh = seed_one("SELECT id FROM places WHERE id NOT IN (SELECT place_id FROM reviews WHERE user_id = "
                     "(SELECT id FROM users WHERE username=?)) ORDER BY id LIMIT 1", (review["username"],))
    posted = call(env, "write_review", place=fresh["id"], stars=4, text="Nice")
    assert posted["date"] == "2026-05-06"
    assert "already reviewed" in error(env, "write_review", place=fresh["id"], stars=2, text="Changed my mind")
    assert "already have a list" in error(env, "create_list", name="  favorites ")
    created = call(env, "create_list", name="Road trip")
    assert created["count"] == 0
    assert "already have a list" in error(env, "create_list", name="ROAD TRIP")
    call(env, "save_place", list_name="road trip", place=fresh["id"])
    assert "already in your list" in error(env, "save_place", list_name="Road trip", place=fresh["id"])
    other = seed_one("SELECT l.name FROM saved_lists l JOIN users u ON u.id = l.user_id WHERE u.username != ? AND "
                     "l.name NOT IN (SELECT name FROM saved_lists WHERE user_id = (SELECT id FROM users WHERE username=?)) "
                     "ORDER BY l.id LIMIT 1", (review["username"], review["username"]))
    assert "only use your own" in error(env, "save_place", list_name=other["name"], place=fresh["id"])
    assert "is not in your list" in error(env, "remove_saved_place", list_name="Favorites", place=2)
    assert sorted((c.table, c.op) for c in env.diff()) == [
        ("reviews", "insert"), ("saved_lists", "insert"), ("saved_places", "insert")]


def test_tool_results_are_small_json() -> None:
    env = fresh_env("steven.jordan")
    assert_small_json(env, [("search_places", {}), ("nearby_places", {"place": "home", "radius_km": 10}),
                            ("list_my_lists", {}), ("list_my_reviews", {}), ("get_place", {"place": 1}),
                            ("get_my_timeline", {"date": "2026-04-06", "end_date": "2026-05-06"})], limit=12_000)


# ---------------------------------------------------------------- context: who "I" am, what "today" is


def test_logged_in_user_decides_home_lists_and_timeline() -> None:
    first, second = seed_all("SELECT * FROM users ORDER BY id LIMIT 2")
    seen = []
    for user in (first, second):
        env = fresh_env(user["username"], today="2026-09-12")
        lists = call(env, "list_my_lists")
        expected = seed_all("SELECT id FROM saved_lists WHERE user_id=? ORDER BY id", (user["id"],))
        assert [entry["list_id"] for entry in lists] == [r["id"] for r in expected]
        assert call(env, "get_my_home_and_work")["home"]["address"] == user["home_address"]
        visits = call(env, "get_my_timeline", date="2026-08-15", end_date="2026-09-12")["visits"]
        count = seed_one("SELECT COUNT(*) AS n FROM visits WHERE user_id=? AND date BETWEEN '2026-08-15' AND "
                         "'2026-09-12'", (user["id"],))["n"]
        assert len(visits) == min(count, 60)
        seen.append({entry["list_id"] for entry in lists})
    assert seen[0].isdisjoint(seen[1])
    assert "LOGGED_IN_USER" in error(fresh_env(None), "list_my_lists")


def test_current_date_decides_what_tomorrow_and_saturday_mean() -> None:
    place = seed_one("SELECT id FROM places WHERE category = 'museum' ORDER BY id LIMIT 1")
    for today, tomorrow, saturday in (("2026-05-06", "2026-05-07", "2026-05-09"),
                                      ("2026-05-09", "2026-05-10", "2026-05-09")):
        env = fresh_env("steven.jordan", today=today)
        assert call(env, "get_place", place=place["id"], date="tomorrow")["on_date"]["date"] == tomorrow
        assert call(env, "get_place", place=place["id"], date="Saturday")["on_date"]["date"] == saturday
    day = seed_one("SELECT v.date, u.username FROM visits v JOIN users u ON u.id = v.user_id "
                   "WHERE v.date BETWEEN '2026-05-01' AND '2026-05-31' ORDER BY v.id LIMIT 1")
    after = (dt.date.fromisoformat(day["date"]) + dt.timedelta(days=1)).isoformat()
    assert call(fresh_env(day["username"], today=after), "get_my_timeline", date="yesterday")["visits"]
    same_day = call(fresh_env(day["username"], today=day["date"]), "get_my_timeline", date="yesterday")
    assert same_day["from"] != day["date"]


# ---------------------------------------------------------------- tasks


def test_a_shorter_build_is_a_prefix_of_a_longer_one() -> None:
    # a family's draws do not depend on how many are asked for, so a second, shorter build is a prefix
    again = generate_app_tasks(APP, BuildConfig(tasks_per_family=10))
    first_ten = [t for t in tasks_30() if int(t.id.rsplit("/", 1)[1]) < 10]
    assert [t.model_dump() for t in again] == [t.model_dump() for t in first_ten]


def test_nearest_open_choices_agree_with_an_independent_computation() -> None:
    """The generator's 'closest open' answer, recomputed from raw rows with a separate haversine."""
    hours = defaultdict(dict)
    for row in seed_all("SELECT * FROM opening_hours ORDER BY id"):
        hours[row["place_id"]][row["weekday"]] = (row["opens"], row["closes"])
    closed = {(r["place_id"], r["date"]) for r in seed_all("SELECT place_id, date FROM closures ORDER BY id")}
    env = make_env("maps")
    for task in tasks_of("closest_open_save"):
        env.reset(task.env_variables)
        args = task.reference_solution[0].arguments
        origin = seed_one("SELECT * FROM places WHERE name=?", (args["place"],))
        day = json.loads(env.call_tool("get_place", {"place": origin["id"], "date": args["open_on"]}).content)
        date = day["on_date"]["date"]
        weekday = dt.date.fromisoformat(date).weekday()
        candidates = [p for p in seed_all("SELECT * FROM places WHERE category=? ORDER BY id", (args["category"],))
                      if p["id"] != origin["id"] and weekday in hours[p["id"]] and (p["id"], date) not in closed
                      and hours[p["id"]][weekday][0] <= args["open_at"] < hours[p["id"]][weekday][1]]
        best = min(candidates, key=lambda p: haversine(origin, p))
        assert best["id"] == task.metadata["place_id"], task.id


def test_wrong_extra_and_missing_writes_score_by_hand() -> None:
    task = next(t for t in tasks_of("save_to_list") if "note" not in t.reference_solution[-1].arguments)
    # checks: row_exists 3, diff_only 2, answer_contains(place name) 1 -> total 6
    assert [c.weight for c in task.checks] == [3.0, 2.0, 1.0]
    gold = [(c.name, c.arguments) for c in task.reference_solution]
    list_name = gold[-1][1]["list_name"]
    other = seed_one("SELECT id FROM places WHERE id NOT IN (SELECT place_id FROM saved_places WHERE list_id=?) "
                     "AND id != ? ORDER BY id LIMIT 1", (task.metadata["list_id"], task.metadata["place_id"]))
    wrong = ("save_place", {"list_name": list_name, "place": other["id"]})

    score, failed = _run(task, gold, task.expected_answer)
    assert score == 1.0 and failed == set()
    # wrong write: another place saved -> row and diff fail; the answer (right name) still passes
    score, failed = _run(task, [gold[0], wrong], task.expected_answer)
    assert score == pytest.approx(1 / 6) and failed == {"row_exists", "diff_only"}
    # extra write: the right place plus another one -> only diff_only fails
    score, failed = _run(task, [*gold, wrong], task.expected_answer)
    assert score == pytest.approx(4 / 6) and failed == {"diff_only"}
    # missing write: looked it up, never saved, answer without the name -> everything fails
    score, failed = _run(task, gold[:1], "I looked it up for you.")
    assert score == 0.0 and failed == {"row_exists", "diff_only", "answer_contains"}


def test_plan_without_the_review_gets_partial_credit() -> None:
    task = tasks_of("weekend_plan")[0]
    # review row 2 + review text 1, list row 1, saved museum 2, diff_only 2, museum named 1 -> total 9
    assert sum(c.weight for c in task.checks) == 9.0
    no_review = [(c.name, c.arguments) for c in task.reference_solution if c.name != "write_review"]
    score, failed = _run(task, no_review, task.expected_answer)
    assert score == pytest.approx(4 / 9) and failed == {"row_exists", "field_equals", "diff_only"}


def test_impossible_tasks_fail_when_the_agent_writes_anyway() -> None:
    task = tasks_of("list_name_taken_impossible")[0]
    assert _run(task, [(c.name, c.arguments) for c in task.reference_solution], task.expected_answer)[0] == 1.0
    env = make_env("maps")
    env.reset(task.env_variables)
    taken = seed_one("SELECT name FROM saved_lists WHERE id=?", (task.metadata["list_id"],))["name"]
    env.call_tool("create_list", {"name": taken})  # refused by the tool
    verdict = verify_task(task, env, "Done, the list is ready.")
    # diff_only 2 passes (the tool refused), tool_not_called 1 and answer 1 fail -> 2/4
    assert verdict.partial_score == pytest.approx(2 / 4)
    foreign = tasks_of("foreign_list_impossible")[0]
    theirs = seed_one("SELECT name FROM saved_lists WHERE id=?", (foreign.metadata["list_id"],))["name"]
    # a 'helpful' agent that makes its own list of that name and saves there changes data: everything fails
    score, failed = _run(foreign, [("create_list", {"name": theirs}),
                                   ("save_place", {"list_name": theirs, "place": foreign.metadata["place_id"]})],
                         "Saved it.")
    assert score == 0.0 and failed == {"diff_only", "tool_not_called", "answer_contains"}


def test_impossible_tasks_really_are_impossible() -> None:
    """The forbidden write is refused by the tools (or the place does not exist), so 'I cannot' is right."""
    env = make_env("maps")
    for task in tasks_30():
        if task.metadata["shape"] != "impossible":
            continue
        env.reset(task.env_variables)
        meta = task.metadata
        if task.family == "review_twice_impossible":
            refused = env.call_tool("write_review", {"place": meta["place_id"], "stars": 3, "text": "Again"})
            assert refused.is_error and "already reviewed" in refused.content, task.id
        elif task.family == "unknown_place_impossible":
            assert call(env, "search_places", query=meta["fake_name"])["places"] == [], task.id
            refused = env.call_tool("get_directions", {"origin": "home", "destination": meta["fake_name"]})
            assert refused.is_error and "no place named" in refused.content, task.id
        elif task.family == "foreign_list_impossible":
            theirs = seed_one("SELECT name FROM saved_lists WHERE id=?", (meta["list_id"],))["name"]
            refused = env.call_tool("save_place", {"list_name": theirs, "place": meta["place_id"]})
            assert refused.is_error and "only use your own" in refused.content, task.id
        else:
            taken = seed_one("SELECT name FROM saved_lists WHERE id=?", (meta["list_id"],))["name"]
            refused = env.call_tool("create_list", {"name": taken.upper()})
            assert refused.is_error and "already have a list" in refused.content, task.id
        assert env.diff() == [], task.id
