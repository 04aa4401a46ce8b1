"""Single-write task families: save a place to a list, remove one from a list, review a place."""

from __future__ import annotations

import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.maps.content import LIST_NOTES
from toolgym.envs.apps.maps.task_common import (
    has_reviewed,
    in_list,
    place_by_id,
    places,
    review_change,
    review_checks,
    review_words,
    save_task_checks,
    user_lists,
    users,
)
from toolgym.schema import ExpectedChange, RowAbsent

TEXTS = kit.module_texts(__file__)


def save_to_list(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: one named place into one of the user's existing lists, sometimes with a note."""
    user = rng.choice(users(world))
    target = rng.choice(user_lists(world, user["id"]))
    place = rng.choice(places(world))
    if in_list(world, target["id"], place["id"]):
        return None
    note = rng.choice(list(LIST_NOTES)) if rng.random() < 0.35 else ""
    note_words = f' with the note "{note}"' if note else ""
    phrasing, prompt = kit.phrase(
        rng, TEXTS["SAVE"], p=place["name"], l=target["name"], city=place["city"], hood=place["neighborhood"],
        note=note_words)
    return TaskDraft(
        prompt=prompt,
        checks=save_task_checks(target["id"], place, "answer names the place", note),
        reference_solution=[kit.call("search_places", query=place["name"]), kit.call("list_my_lists"),
                            kit.call("save_place", list_name=target["name"], place=place["id"], note=note or None)],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=f"Saved {place['name']} to your '{target['name']}' list{note_words}.",
        difficulty=1,
        metadata={"phrasing": phrasing, "list_id": target["id"], "place_id": place["id"]},
    )


def remove_from_list(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: one place out of one of the user's lists (the place itself stays on the map)."""
    saved = world.query(
        "SELECT s.id, s.list_id, s.place_id, l.user_id, l.name AS list_name FROM saved_places s "
        "JOIN saved_lists l ON l.id = s.list_id ORDER BY s.id")
    row = rng.choice(saved)
    place = place_by_id(world, row["place_id"])
    where = {"list_id": row["list_id"], "place_id": place["id"]}
    phrasing, prompt = kit.phrase(rng, TEXTS["REMOVE"], p=place["name"], l=row["list_name"])
    return TaskDraft(
        prompt=prompt,
        checks=[RowAbsent(table="saved_places", where=where, weight=3.0, label=f"{place['name']} removed"),
                kit.diff_only([ExpectedChange(table="saved_places", op="delete", where=where)]),
                kit.answer_has([place["name"]], label="answer names the place")],
        reference_solution=[kit.call("list_my_lists"),
                            kit.call("remove_saved_place", list_name=row["list_name"], place=place["id"])],
        env_variables=kit.env_for(kit.user_by_id(world, row["user_id"], "*"), kit.random_day(rng)),
        expected_answer=f"Removed {place['name']} from your '{row['list_name']}' list.",
        difficulty=1,
        metadata={"phrasing": phrasing, "list_id": row["list_id"], "place_id": place["id"]},
    )


def write_a_review(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: the user's first review of a named place, with the stars and words they give."""
    user = rng.choice(users(world))
    visited = world.query("SELECT DISTINCT place_id FROM visits WHERE user_id=? ORDER BY place_id", (user["id"],))
    place = place_by_id(world, rng.choice(visited)["place_id"]) if visited and rng.random() < 0.7 else rng.choice(
        places(world))
    if has_reviewed(world, user["id"], place["id"]):
        return None
    stars, text = review_words(rng)
    phrasing, prompt = kit.phrase(
        rng, TEXTS["REVIEW"], s=stars, stars=kit.plural(stars, "star"), p=place["name"], t=text, city=place["city"],
        hood=place["neighborhood"])
    return TaskDraft(
        prompt=prompt,
        checks=[*review_checks(user["id"], place, stars, text), kit.diff_only([review_change(user["id"], place["id"])])],
        reference_solution=[kit.call("search_places", query=place["name"]), kit.call("list_my_reviews"),
                            kit.call("write_review", place=place["id"], stars=stars, text=text)],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=f"Posted your {stars}-star review of {place['name']}: \"{text}\"",
        difficulty=1,
        metadata={"phrasing": phrasing, "place_id": place["id"]},
    )
