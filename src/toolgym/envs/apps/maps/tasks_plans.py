"""Multi-step families: plan a Saturday (new list + nearest open museum + review), a list built from the timeline."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.maps.task_common import (
    CATEGORY_WORDS,
    has_reviewed,
    nearest_open,
    place_by_id,
    review_change,
    review_checks,
    review_words,
    saved_change,
    user_lists,
    visits_on,
)
from toolgym.schema import Check, ExpectedChange, RowExists

TEXTS = kit.module_texts(__file__)

PLAN_LIST_NAMES = ("Weekend plans", "Saturday outing", "Museum day", "Things to do", "Culture weekend")


def _single_visit(world: World, user_id: int, day: dt.date, category: str) -> dict | None:
    """The one place of `category` the user visited on `day`, or None when there are none or several."""
    seen = {v["place_id"] for v in visits_on(world, user_id, day) if v["category"] == category}
    return place_by_id(world, seen.pop()) if len(seen) == 1 else None


def weekend_plan(rng: random.Random, world: World) -> TaskDraft | None:
    """Three writes under constraints: a new list, the nearest museum open on Saturday in it, a review of yesterday."""
    meals = world.query(
        "SELECT v.user_id, v.date FROM visits v JOIN places p ON p.id = v.place_id WHERE p.category = 'restaurant' "
        "AND v.date BETWEEN ? AND ? ORDER BY v.id",
        (kit.iso(kit.FIRST_DAY - dt.timedelta(days=1)), kit.iso(kit.LAST_DAY - dt.timedelta(days=1))))
    meal = rng.choice(meals)
    yesterday = kit.day_of(meal["date"])
    today = yesterday + dt.timedelta(days=1)
    if today.weekday() == 5:  # "Saturday" would be today; keep the plan about a day ahead
        return None
    user = kit.user_by_id(world, meal["user_id"], "*")
    restaurant = _single_visit(world, user["id"], yesterday, "restaurant")
    if restaurant is None or has_reviewed(world, user["id"], restaurant["id"]):
        return None
    saturday = today + dt.timedelta(days=(5 - today.weekday()) % 7)
    found = nearest_open(world, user["home_lat"], user["home_lon"], "museum", saturday, None)
    if found is None:
        return None
    museum, radius = found
    taken = {row["name"].casefold() for row in user_lists(world, user["id"])}
    free = [n for n in PLAN_LIST_NAMES if n.casefold() not in taken]
    name = rng.choice(free)
    stars, text = review_words(rng)
    sat_words = "tomorrow (Saturday)" if saturday == today + dt.timedelta(days=1) else rng.choice(
        ["on Saturday", "this Saturday"])
    list_id = kit.next_id(world, "saved_lists")
    checks: list[Check] = [
        *review_checks(user["id"], restaurant, stars, text, weight=2.0),
        RowExists(table="saved_lists", where={"user_id": user["id"], "name": name}, count=1, weight=1.0,
                  label=f"list '{name}' created"),
        RowExists(table="saved_places", where={"list_id": list_id, "place_id": museum["id"]}, count=1, weight=2.0,
                  label=f"{museum['name']} saved to the new list"),
        kit.diff_only([review_change(user["id"], restaurant["id"]),
                   ExpectedChange(table="saved_lists", op="insert", where={"user_id": user["id"], "name": name}),
                   saved_change(list_id, museum["id"])]),
        kit.answer_has([museum["name"]], label="answer names the museum"),
    ]
    phrasing, prompt = kit.phrase(
        rng, TEXTS["WEEKEND_PLAN"], sat=sat_words, n=name, s=stars, stars=kit.plural(stars, "star"), t=text)
    return TaskDraft(
        prompt=prompt,
        checks=checks,
        reference_solution=[
            kit.call("get_my_timeline", date="yesterday"),
            kit.call("write_review", place=restaurant["id"], stars=stars, text=text),
            kit.call("nearby_places", place="home", category="museum", radius_km=radius, open_on="Saturday"),
            kit.call("create_list", name=name),
            kit.call("save_place", list_name=name, place=museum["id"]),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"Reviewed {restaurant['name']} ({kit.plural(stars, 'star')}). The nearest museum to your home "
                         f"open on "
                         f"Saturday {kit.iso(saturday)} is {museum['name']}; it's in your new list '{name}'."),
        difficulty=3,
        metadata={"phrasing": phrasing, "restaurant_id": restaurant["id"], "museum_id": museum["id"],
                  "list_id": list_id},
    )


TIMELINE_LIST_NAMES = ("Tried recently", "Recent favorites", "Places from last week", "Worth revisiting",
                       "Spots I tried")
TIMELINE_CATEGORIES = ("cafe", "restaurant", "bar", "bakery")
PLURAL = {"cafe": "cafes", "restaurant": "restaurants", "bar": "bars", "bakery": "bakeries"}


def list_from_timeline(rng: random.Random, world: World) -> TaskDraft | None:
    """Several writes: a new list plus one save per distinct place of a kind visited in a week-long window."""
    user = rng.choice(world.query("SELECT * FROM users ORDER BY id"))
    today = kit.FIRST_DAY + dt.timedelta(days=rng.randint(7, (kit.LAST_DAY - kit.FIRST_DAY).days))
    start, end = today - dt.timedelta(days=rng.randint(7, 10)), today - dt.timedelta(days=rng.randint(1, 3))
    rows = world.query(
        "SELECT DISTINCT p.category, v.place_id FROM visits v JOIN places p ON p.id = v.place_id WHERE v.user_id=? "
        "AND v.date BETWEEN ? AND ? ORDER BY p.category, v.place_id", (user["id"], kit.iso(start), kit.iso(end)))
    by_category: dict[str, list[int]] = {}
    for row in rows:
        by_category.setdefault(row["category"], []).append(row["place_id"])
    usable = [c for c in TIMELINE_CATEGORIES if 2 <= len(by_category.get(c, [])) <= 5]
    if not usable:
        return None
    category = rng.choice(usable)
    visited = [place_by_id(world, place_id) for place_id in by_category[category]]
    taken = {row["name"].casefold() for row in user_lists(world, user["id"])}
    name = rng.choice([n for n in TIMELINE_LIST_NAMES if n.casefold() not in taken])
    list_id = kit.next_id(world, "saved_lists")
    phrasing, prompt = kit.phrase(
        rng, TEXTS["TIMELINE_LIST"], n=name, cat=CATEGORY_WORDS[category], cats=PLURAL[category], start=kit.iso(start),
        end=kit.iso(end), start_h=kit.human_date(start), end_h=kit.human_date(end))
    checks: list[Check] = [
        RowExists(table="saved_lists", where={"user_id": user["id"], "name": name}, count=1, weight=1.0,
                  label=f"list '{name}' created"),
        *[RowExists(table="saved_places", where={"list_id": list_id, "place_id": p["id"]}, count=1, weight=1.0,
                    label=f"{p['name']} saved") for p in visited],
        RowExists(table="saved_places", where={"list_id": list_id}, count=len(visited), weight=1.0,
                  label=f"exactly {len(visited)} places in the list"),
        kit.diff_only([ExpectedChange(table="saved_lists", op="insert", where={"user_id": user["id"], "name": name}),
                   *[saved_change(list_id, p["id"]) for p in visited]]),
    ]
    names = kit.names_list([p["name"] for p in visited])
    return TaskDraft(
        prompt=prompt,
        checks=checks,
        reference_solution=[
            kit.call("get_my_timeline", date=kit.iso(start), end_date=kit.iso(end)),
            kit.call("create_list", name=name),
            *[kit.call("save_place", list_name=name, place=p["id"]) for p in visited],
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=f"Created '{name}' with the {len(visited)} {PLURAL[category]} you visited ({names})",
        difficulty=3,
        metadata={"phrasing": phrasing, "list_id": list_id, "place_ids": [p["id"] for p in visited]},
    )
