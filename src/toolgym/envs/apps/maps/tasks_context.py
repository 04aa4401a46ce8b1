"""Context families: "my timeline yesterday", "nearest to my home open tomorrow at 8", "the cafe I went to
yesterday". LOGGED_IN_USER decides whose home and timeline; CURRENT_DATE decides which day is meant."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.maps.rules import nearby
from toolgym.envs.apps.maps.task_common import (
    CATEGORY_WORDS,
    clock_words,
    has_reviewed,
    nearest_open,
    on_day,
    place_by_id,
    review_change,
    review_checks,
    review_words,
    soon_phrase,
    users,
    visits_on,
)

TEXTS = kit.module_texts(__file__)


def _past_phrase(rng: random.Random, today: dt.date, day: dt.date) -> str:
    """Words for a day 1-7 days before today that resolve_date maps back to it."""
    back = (today - day).days
    options = [f"last {kit.WEEKDAY_NAMES[day.weekday()]}", f"{back} day{'s' if back > 1 else ''} ago"]
    if back == 1:
        options += ["yesterday", "yesterday"]
    return rng.choice(options)


def timeline_lookup(rng: random.Random, world: World) -> TaskDraft | None:
    """What the logged-in user did on a recent day named relative to CURRENT_DATE: every place, the one
    place of a kind, or the arrival and departure times at a named place."""
    user = rng.choice(users(world))
    visit = rng.choice(world.query(
        "SELECT v.*, p.name, p.category, p.address FROM visits v JOIN places p ON p.id = v.place_id "
        "WHERE v.user_id=? AND v.date BETWEEN ? AND ? ORDER BY v.id",
        (user["id"], kit.iso(kit.FIRST_DAY - dt.timedelta(days=7)), kit.iso(kit.LAST_DAY - dt.timedelta(days=1)))))
    day = kit.day_of(visit["date"])
    today = day + dt.timedelta(days=rng.choice((1, 1, 2, 3, 4, 5, 6, 7)))
    if not kit.FIRST_DAY <= today <= kit.LAST_DAY:
        return None
    that_day = visits_on(world, user["id"], day)
    names: list[str] = []
    for row in that_day:
        if row["name"] not in names:
            names.append(row["name"])
    kind = rng.choice(["all", "category", "arrival"])
    same_kind = {v["place_id"] for v in that_day if v["category"] == visit["category"]}
    at_place = [v for v in that_day if v["place_id"] == visit["place_id"]]
    if (kind == "category" and len(same_kind) != 1) or (kind == "arrival" and len(at_place) != 1):
        return None
    phrase = _past_phrase(rng, today, day)
    templates = TEXTS["TIMELINE"][kind]
    phrasing, prompt = kit.phrase(
        rng, templates, when=phrase, When_cap=phrase[0].upper() + phrase[1:],
        cat=CATEGORY_WORDS[visit["category"]], p=visit["name"])
    if kind == "all":
        values = names
        answer = f"On {kit.iso(day)} ({phrase}) you visited {kit.names_list(names)}"
    elif kind == "category":
        values = [visit["name"]]
        answer = f"On {kit.iso(day)} you went to {visit['name']} ({visit['address']})."
    else:
        values = [visit["arrived"], visit["departed"]]
        answer = f"On {kit.iso(day)} you arrived at {visit['name']} at {visit['arrived']} and left at {visit['departed']}."
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks(values),
        reference_solution=[kit.call("get_my_timeline", date=phrase)],
        env_variables=kit.env_for(user, today),
        expected_answer=answer,
        difficulty=2,
        metadata={"phrasing": f"{kind}{phrasing}", "day": kit.iso(day), "visit_id": visit["id"]},
    )


NEAREST_CATEGORIES = ("pharmacy", "gas_station", "supermarket", "cafe", "bakery", "gym", "library", "museum")
NEAREST_TIMES = ("07:00", "07:30", "08:00", "09:00", "10:00", "17:30", "19:00", "20:30", "21:30", "22:00")


def nearest_open_from_home(rng: random.Random, world: World) -> TaskDraft | None:
    """Nearest place of a kind to the user's home or office, open on a day named relative to today."""
    user = rng.choice(users(world))
    anchor = "home" if rng.random() < 0.6 else "office"
    if anchor == "home":
        lat, lon, origin, exclude = user["home_lat"], user["home_lon"], "home", None
    else:
        work = place_by_id(world, user["work_place_id"])
        lat, lon, origin, exclude = work["lat"], work["lon"], "work", work["id"]
    category = rng.choice(list(NEAREST_CATEGORIES))
    today = kit.random_day(rng)
    offset = rng.randint(1, 6)
    day = today + dt.timedelta(days=offset)
    at = rng.choice(list(NEAREST_TIMES))
    found = nearest_open(world, lat, lon, category, day, at, exclude)
    if found is None:
        return None
    best, radius = found
    overall = nearby(world, lat, lon, 9.5, category, exclude_id=exclude)
    if overall[0]["id"] == best["id"] and rng.random() < 0.5:
        return None
    phrase = soon_phrase(rng, today, offset)
    said = on_day(phrase)
    phrasing = rng.randrange(len(TEXTS["NEAREST_FROM"]))
    prompt = TEXTS["NEAREST_FROM"][phrasing].format(cat=CATEGORY_WORDS[category], anchor=anchor, day=said,
                                                    Day_cap=said[0].upper() + said[1:], time=clock_words(rng, at))
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([best["name"]]),
        reference_solution=[kit.call("nearby_places", place=origin, category=category, radius_km=radius, open_on=phrase,
                                 open_at=at)],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"The nearest {CATEGORY_WORDS[category]} to your {anchor} open {said} at {at} is "
                         f"{best['name']} at {best['address']}, {best['distance_km']} km away."),
        difficulty=2,
        metadata={"phrasing": phrasing, "place_id": best["id"], "anchor": anchor},
    )


REVIEW_CATEGORIES = ("restaurant", "cafe", "bar", "museum", "bakery", "gym")


def review_recent_visit(rng: random.Random, world: World) -> TaskDraft | None:
    """Review the one place of a kind the user visited on a day named relative to CURRENT_DATE."""
    category = rng.choice(list(REVIEW_CATEGORIES))
    visit = rng.choice(world.query(
        "SELECT v.user_id, v.date, v.place_id FROM visits v JOIN places p ON p.id = v.place_id WHERE p.category=? "
        "AND v.date BETWEEN ? AND ? ORDER BY v.id", (category, kit.iso(kit.FIRST_DAY - dt.timedelta(days=7)),
                                                     kit.iso(kit.LAST_DAY - dt.timedelta(days=1)))))
    day = kit.day_of(visit["date"])
    today = day + dt.timedelta(days=rng.choice((1, 1, 1, 2, 3, 5)))
    if not kit.FIRST_DAY <= today <= kit.LAST_DAY:
        return None
    user = kit.user_by_id(world, visit["user_id"], "*")
    same = {v["place_id"] for v in visits_on(world, user["id"], day) if v["category"] == category}
    if len(same) != 1 or has_reviewed(world, user["id"], visit["place_id"]):
        return None
    place = place_by_id(world, visit["place_id"])
    phrase = _past_phrase(rng, today, day)
    stars, text = review_words(rng)
    phrasing, prompt = kit.phrase(
        rng, TEXTS["REVIEW_RECENT"], cat=CATEGORY_WORDS[category], when=phrase, s=stars,
        stars=kit.plural(stars, "star"), t=text)
    return TaskDraft(
        prompt=prompt,
        checks=[*review_checks(user["id"], place, stars, text), kit.diff_only([review_change(user["id"], place["id"])])],
        reference_solution=[kit.call("get_my_timeline", date=phrase),
                            kit.call("write_review", place=place["id"], stars=stars, text=text)],
        env_variables=kit.env_for(user, today),
        expected_answer=f"Posted your {stars}-star review of {place['name']} (visited {kit.iso(day)}).",
        difficulty=2,
        metadata={"phrasing": phrasing, "place_id": place["id"], "day": kit.iso(day)},
    )
