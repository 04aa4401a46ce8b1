"""Lookup task families: travel time between two places, the best-rated place nearby, a place's hours."""

from __future__ import annotations

import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.maps.rules import nearby, route, straight_km
from toolgym.envs.apps.maps.task_common import CATEGORY_WORDS, MODE_WORDS, places, users

TEXTS = kit.module_texts(__file__)

# (mode, lowest and highest straight-line km between the two places)
MODE_RANGES = {"walk": (0.3, 3.0), "bike": (0.8, 6.0), "drive": (1.0, 9.0), "transit": (1.0, 9.0)}


def route_time(rng: random.Random, world: World) -> TaskDraft | None:
    """Route distance and minutes between two named places for one travel mode."""
    mode = rng.choice(sorted(MODE_RANGES))
    low, high = MODE_RANGES[mode]
    everything = places(world)
    start = rng.choice(everything)
    ends = [p for p in everything if p["id"] != start["id"]
            and low <= straight_km(start["lat"], start["lon"], p["lat"], p["lon"]) <= high]
    if not ends:
        return None
    end = rng.choice(ends)
    distance, minutes = route(start["lat"], start["lon"], end["lat"], end["lon"], mode)
    verb, by = MODE_WORDS[mode]
    phrasing, prompt = kit.phrase(rng, TEXTS["ROUTE_TIME"], a=start["name"], b=end["name"], verb=verb, by=by)
    km = f"{distance:.1f}"
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([km, str(minutes)]),
        reference_solution=[kit.call("get_directions", origin=start["name"], destination=end["name"], mode=mode)],
        env_variables=kit.env_for(rng.choice(users(world)), kit.random_day(rng)),
        expected_answer=(f"From {start['name']} to {end['name']} {by} is {km} km and takes about {minutes} minutes."),
        difficulty=1,
        metadata={"phrasing": phrasing, "mode": mode, "origin_id": start["id"], "destination_id": end["id"]},
    )


NEARBY_CATEGORIES = ("cafe", "restaurant", "bar", "bakery", "pharmacy", "supermarket", "gym")


def best_nearby(rng: random.Random, world: World) -> TaskDraft | None:
    """The best-rated place of a category within a radius of a named place."""
    category = rng.choice(list(NEARBY_CATEGORIES))
    radius = rng.choice([0.5, 1.0, 1.0, 1.5, 2.0])
    origin = rng.choice(world.query("SELECT * FROM places ORDER BY id"))
    rows = nearby(world, origin["lat"], origin["lon"], radius, category, exclude_id=origin["id"])
    if len(rows) < 2 or any(abs(r["exact_km"] - radius) < 0.03 for r in
                            nearby(world, origin["lat"], origin["lon"], radius + 0.05, category,
                                   exclude_id=origin["id"])):
        return None
    best = kit.unique_best(rows, "rating", largest=True)
    if best is None:
        return None
    radius_words = f"{radius:g}"
    phrasing, prompt = kit.phrase(
        rng, TEXTS["BEST_NEARBY"], cat=CATEGORY_WORDS[category], r=radius_words, p=origin["name"])
    rating = f"{best['rating']:.1f}"
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([best["name"], rating]),
        reference_solution=[kit.call("nearby_places", place=origin["name"], category=category, radius_km=radius,
                                 sort_by="rating")],
        env_variables=kit.env_for(rng.choice(users(world)), kit.random_day(rng)),
        expected_answer=(f"The best-rated {CATEGORY_WORDS[category]} within {radius_words} km of {origin['name']} is "
                         f"{best['name']} ({best['address']}), rated {rating}."),
        difficulty=1,
        metadata={"phrasing": phrasing, "place_id": best["id"], "origin_id": origin["id"]},
    )


def place_hours(rng: random.Random, world: World) -> TaskDraft | None:
    """A place's hours on one weekday (or that it is closed that day) plus its address or phone."""
    place = rng.choice(places(world))
    weekday = rng.randrange(7)
    hours = world.one("SELECT opens, closes FROM opening_hours WHERE place_id=? AND weekday=?", (place["id"], weekday))
    if hours is not None and (hours["opens"], hours["closes"]) == ("00:00", "24:00"):
        return None
    extra = rng.choice(sorted(TEXTS["PLACE_HOURS"]))
    templates = TEXTS["PLACE_HOURS"][extra]
    day = kit.WEEKDAY_NAMES[weekday]
    times = [hours["opens"], hours["closes"]] if hours else ["closed"]
    when = f"open {hours['opens']}-{hours['closes']}" if hours else "closed"
    phrasing, prompt = kit.phrase(rng, templates, p=place["name"], day=day)
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([*times, place[extra]]),
        reference_solution=[kit.call("get_place", place=place["name"])],
        env_variables=kit.env_for(rng.choice(users(world)), kit.random_day(rng)),
        expected_answer=f"On {day}s {place['name']} is {when}. Address: {place['address']}; phone: {place['phone']}.",
        difficulty=1,
        metadata={"phrasing": f"{extra}{phrasing}", "place_id": place["id"], "weekday": weekday},
    )
