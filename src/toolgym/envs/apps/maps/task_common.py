"""Helpers the maps task generators share: context, entity picks, day wording and check builders.

Generators read the seed through `World` with ORDER BY in every query and draw only from the `rng`
they are given, so the same seed yields the same tasks. Choices a task asks for (nearest, best-rated,
open at a time) use the same rules as the tools (rules.py), and a draw whose answer would be
ambiguous (a tie, a place right at the radius) is rejected rather than guessed.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import World, kit
from toolgym.envs.apps.maps.rules import WEEKDAY_NAMES, nearby
from toolgym.schema import Check, ExpectedChange, FieldEquals, RowExists

TEXTS = kit.module_texts(__file__)

MIN_GAP_KM = 0.1  # the runner-up must be at least this much farther for "nearest" to be clear-cut
CATEGORY_WORDS = TEXTS["CATEGORY_WORDS"]
MODE_WORDS = {"walk": ("walk", "on foot"), "bike": ("bike", "by bike"), "drive": ("drive", "by car"),
              "transit": ("take transit", "by public transit")}
REVIEW_LINES: dict[int, tuple[str, ...]] = {
    5: ("Fantastic from start to finish.", "Loved everything about it, will be back soon.",
        "Friendly staff and a great atmosphere.", "One of my favorite places in the city."),
    4: ("Really good, just a little crowded.", "Very nice visit, service was quick.",
        "Good value and a pleasant space.", "Would recommend it to friends."),
    3: ("It was fine but nothing memorable.", "Decent, though the wait was long.",
        "Average experience overall.", "Okay for a quick stop."),
    2: ("Not great, the service was slow.", "Disappointing compared to the reviews.",
        "Too noisy and a bit overpriced.", "Staff seemed rushed and unfriendly."),
    1: ("Really bad experience, would not return.", "Rude staff and a long wait.",
        "Nothing worked as advertised.", "Dirty and disorganized."),
}


def users(world: World) -> list[dict[str, Any]]:
    """Every user has a home, a workplace, lists and visits in this app."""
    return world.query("SELECT * FROM users ORDER BY id")


def places(world: World, category: str | None = None) -> list[dict[str, Any]]:
    if category is None:
        return world.query("SELECT * FROM places WHERE category != 'office' ORDER BY id")
    return world.query("SELECT * FROM places WHERE category=? ORDER BY id", (category,))


def place_by_id(world: World, place_id: int) -> dict[str, Any]:
    row = world.one("SELECT * FROM places WHERE id=?", (place_id,))
    assert row is not None, f"no place {place_id}"
    return row


def user_lists(world: World, user_id: int) -> list[dict[str, Any]]:
    return world.query("SELECT * FROM saved_lists WHERE user_id=? ORDER BY id", (user_id,))


def in_list(world: World, list_id: int, place_id: int) -> bool:
    return world.one("SELECT 1 AS x FROM saved_places WHERE list_id=? AND place_id=?", (list_id, place_id)) is not None


def list_to_save_in(rng: random.Random, world: World, place_id: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A user and one of their lists to save the place to; None when that list holds it already."""
    user = rng.choice(users(world))
    target = rng.choice(user_lists(world, user["id"]))
    return None if in_list(world, target["id"], place_id) else (user, target)


def has_reviewed(world: World, user_id: int, place_id: int) -> bool:
    return world.one("SELECT 1 AS x FROM reviews WHERE user_id=? AND place_id=?", (user_id, place_id)) is not None


def clear_nearest(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The nearest row (rows sorted nearest first), or None when the runner-up is too close to call."""
    if not rows:
        return None
    if len(rows) > 1 and rows[1]["exact_km"] - rows[0]["exact_km"] < MIN_GAP_KM:
        return None
    return rows[0]


def radius_for(distance_km: float) -> float:
    """A whole-km search radius that surely includes a place `distance_km` away."""
    return float(min(10, int(distance_km) + 1))


def nearest_open(
    world: World, lat: float, lon: float, category: str, day: dt.date | None, at: str | None,
    exclude_id: int | None = None,
) -> tuple[dict[str, Any], float] | None:
    """(nearest place of a category open then, search radius) when the choice is clear-cut."""
    rows = nearby(world, lat, lon, 9.5, category, day, at, None, exclude_id)
    best = clear_nearest(rows)
    if best is None:
        return None
    return best, radius_for(best["exact_km"])


def soon_phrase(rng: random.Random, today: dt.date, offset: int) -> str:
    """Words for the day `offset` (0-6) days after today that resolve_date maps back to that day."""
    target = today + dt.timedelta(days=offset)
    name = WEEKDAY_NAMES[target.weekday()]
    if offset == 0:
        return "today"
    if offset == 1:
        return rng.choice(("tomorrow", "tomorrow"))
    return rng.choice((name, f"this {name}", f"next {name}", kit.iso(target)))


def on_day(phrase: str) -> str:
    """'Saturday' -> 'on Saturday' for prompts; 'tomorrow' stays as it is."""
    if phrase in ("today", "tomorrow") or phrase.startswith(("this ", "next ")):
        return phrase
    return f"on {phrase}"


def clock_words(rng: random.Random, at: str) -> str:
    """'21:30' said as '21:30' or '9:30pm'."""
    return at if rng.random() < 0.5 else kit.clock(at)


# ---------------------------------------------------------------- checks


def saved_checks(list_id: int, place: dict[str, Any], note: str = "", weight: float = 3.0) -> list[Check]:
    """The place is in the list exactly once (with the note, when one was asked for)."""
    checks: list[Check] = [RowExists(table="saved_places", where={"list_id": list_id, "place_id": place["id"]}, count=1,
                                     weight=weight, label=f"{place['name']} saved to list {list_id}")]
    if note:
        checks.append(FieldEquals(table="saved_places", where={"list_id": list_id, "place_id": place["id"]},
                                  field="note", value=note, weight=1.0, label="note as given"))
    return checks


def saved_change(list_id: int, place_id: int) -> ExpectedChange:
    return ExpectedChange(table="saved_places", op="insert", where={"list_id": list_id, "place_id": place_id})


def save_task_checks(list_id: int, place: dict[str, Any], answer_label: str, note: str = "") -> list[Check]:
    """A save task's grading: the place is in the list, nothing else changed, and the answer names it."""
    return [*saved_checks(list_id, place, note), kit.diff_only([saved_change(list_id, place["id"])]),
            kit.answer_has([place["name"]], label=answer_label)]


def review_checks(user_id: int, place: dict[str, Any], stars: int, text: str, weight: float = 3.0) -> list[Check]:
    where = {"place_id": place["id"], "user_id": user_id}
    return [
        RowExists(table="reviews", where={**where, "stars": stars}, count=1, weight=weight,
                  label=f"{stars}-star review of {place['name']}"),
        FieldEquals(table="reviews", where=where, field="text", value=text, weight=1.0, label="review text as given"),
    ]


def review_change(user_id: int, place_id: int) -> ExpectedChange:
    return ExpectedChange(table="reviews", op="insert", where={"place_id": place_id, "user_id": user_id})


def review_words(rng: random.Random) -> tuple[int, str]:
    stars = rng.choice((5, 5, 4, 4, 4, 3, 2, 1))
    return stars, rng.choice(list(REVIEW_LINES[stars]))


def visits_on(world: World, user_id: int, day: dt.date) -> list[dict[str, Any]]:
    return world.query(
        "SELECT v.*, p.name, p.category FROM visits v JOIN places p ON p.id = v.place_id "
        "WHERE v.user_id=? AND v.date=? ORDER BY v.arrived, v.id", (user_id, kit.iso(day)))
