"""Search -> choose -> write families: the nearest place open at a time, or the best-rated one, saved to a list."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.maps.rules import nearby, search
from toolgym.envs.apps.maps.task_common import (
    CATEGORY_WORDS,
    clock_words,
    list_to_save_in,
    nearest_open,
    on_day,
    save_task_checks,
    soon_phrase,
)

TEXTS = kit.module_texts(__file__)

EDGE_TIMES = ("07:00", "07:30", "08:00", "09:00", "10:00", "18:30", "20:00", "21:00", "21:30", "22:00", "22:30")
CLOSEST_CATEGORIES = ("pharmacy", "pharmacy", "gas_station", "supermarket", "cafe", "bakery", "gym")


def _save_soon(rng: random.Random, world: World, place: dict[str, Any], today: dt.date,
               offset: int) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """A user and list to save `place` in, and how the prompt says the day `offset` days after `today`;
    None when no list fits."""
    chosen = list_to_save_in(rng, world, place["id"])
    if chosen is None:
        return None
    user, target = chosen
    return user, target, soon_phrase(rng, today, offset)


def closest_open_save(rng: random.Random, world: World) -> TaskDraft | None:
    """Nearest place of a category that is open on a soon day at a time, saved to one of the user's lists.

    Draws where the nearest place of the category is closed at that time are preferred, so the
    opening hours decide the answer rather than distance alone.
    """
    category = rng.choice(list(CLOSEST_CATEGORIES))
    origin = rng.choice(world.query("SELECT * FROM places WHERE category != ? ORDER BY id", (category,)))
    today = kit.random_day(rng)
    offset = rng.randint(0, 6)
    day = today + dt.timedelta(days=offset)
    at = rng.choice(list(EDGE_TIMES))
    found = nearest_open(world, origin["lat"], origin["lon"], category, day, at, origin["id"])
    if found is None:
        return None
    winner, radius = found
    overall = nearby(world, origin["lat"], origin["lon"], 9.5, category, exclude_id=origin["id"])
    if overall[0]["id"] == winner["id"] and rng.random() < 0.7:
        return None
    chosen = _save_soon(rng, world, winner, today, offset)
    if chosen is None:
        return None
    user, target, phrase = chosen
    phrasing = rng.randrange(len(TEXTS["CLOSEST_OPEN"]))
    prompt = TEXTS["CLOSEST_OPEN"][phrasing].format(cat=CATEGORY_WORDS[category], o=origin["name"], day=on_day(phrase),
                                                    time=clock_words(rng, at), l=target["name"])
    return TaskDraft(
        prompt=prompt,
        checks=save_task_checks(target["id"], winner, "answer names the chosen place"),
        reference_solution=[
            kit.call("nearby_places", place=origin["name"], category=category, radius_km=radius, open_on=phrase,
                 open_at=at),
            kit.call("save_place", list_name=target["name"], place=winner["id"]),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"The nearest {CATEGORY_WORDS[category]} to {origin['name']} open {on_day(phrase)} at {at} is "
                         f"{winner['name']} ({winner['distance_km']} km away). I saved it to your "
                         f"'{target['name']}' list."),
        difficulty=2,
        metadata={"phrasing": phrasing, "place_id": winner["id"], "list_id": target["id"],
                  "nearest_overall_id": overall[0]["id"]},
    )


RATED_CATEGORIES = ("restaurant", "restaurant", "cafe", "bar", "bakery", "museum")
PLURALS = {"restaurant": "restaurants", "cafe": "cafes", "bar": "bars", "bakery": "bakeries", "museum": "museums"}
RATED_TIMES = ("08:00", "10:00", "12:00", "13:30", "17:00", "19:00", "20:30", "21:30", "22:30")


def best_rated_save(rng: random.Random, world: World) -> TaskDraft | None:
    """Best-rated place of a kind (a cuisine, for restaurants) in a city that is open then, saved to a list."""
    category = rng.choice(list(RATED_CATEGORIES))
    city = rng.choice(["Boston", "Brookline", "Cambridge", "Somerville"])
    cuisine = None
    if category == "restaurant" and rng.random() < 0.6:
        cuisines = world.query("SELECT DISTINCT cuisine FROM places WHERE category='restaurant' AND city=? "
                               "ORDER BY cuisine", (city,))
        cuisine = rng.choice(cuisines)["cuisine"]
    today = kit.random_day(rng)
    offset = rng.randint(0, 6)
    day = today + dt.timedelta(days=offset)
    at = rng.choice(list(RATED_TIMES))
    every = search(world, cuisine, category, city)[1]
    candidates = search(world, cuisine, category, city, day, at)[1]
    if len(every) < 2 or not candidates:
        return None
    best = kit.unique_best(candidates, "rating", largest=True)
    if best is None or (every[0]["id"] == best["id"] and rng.random() < 0.6):
        return None
    chosen = _save_soon(rng, world, best, today, offset)
    if chosen is None:
        return None
    user, target, phrase = chosen
    what = f"{cuisine.title()} restaurant" if cuisine else CATEGORY_WORDS[category]
    whats = f"{cuisine.title()} restaurants" if cuisine else PLURALS[category]
    phrasing = rng.randrange(len(TEXTS["BEST_RATED"]))
    prompt = TEXTS["BEST_RATED"][phrasing].format(what=what, whats=whats, city=city, day=on_day(phrase),
                                                  time=clock_words(rng, at), l=target["name"])
    return TaskDraft(
        prompt=prompt,
        checks=save_task_checks(target["id"], best, "answer names the chosen place"),
        reference_solution=[
            kit.call("search_places", query=cuisine, category=category, city=city, open_on=phrase, open_at=at),
            kit.call("save_place", list_name=target["name"], place=best["id"]),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"The best-rated {what} in {city} open {on_day(phrase)} at {at} is {best['name']} "
                         f"(rated {best['rating']:.1f}). I added it to your '{target['name']}' list."),
        difficulty=2,
        metadata={"phrasing": phrasing, "place_id": best["id"], "list_id": target["id"]},
    )
