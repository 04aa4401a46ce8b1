"""Single-write task families: save a place to a list, remove one from a list, review a place."""

from __future__ import annotations

import random

from toolgym.envs import TaskDraft, World
from toolgym.envs.apps.maps.content import LIST_NOTES
from toolgym.envs.apps.maps.task_kit import (
    answer_has,
    call,
    diff_only,
    env_for,
    has_reviewed,
    in_list,
    pick,
    place_by_id,
    places,
    random_today,
    review_change,
    review_checks,
    review_words,
    saved_change,
    saved_checks,
    stars_words,
    user_by_id,
    user_lists,
    users,
)
from toolgym.schema import ExpectedChange, RowAbsent

SAVE = (
    "Save {p} to my '{l}' list{note}.",
    "Add {p} in {city} to my {l} list{note}.",
    "Please put {p} on my \"{l}\" list{note}.",
    "Could you bookmark {p} ({hood}) in my list {l}{note}?",
)


def save_to_list(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: one named place into one of the user's existing lists, sometimes with a note."""
    user = pick(rng, users(world))
    target = pick(rng, user_lists(world, user["id"]))
    place = pick(rng, places(world))
    if in_list(world, target["id"], place["id"]):
        return None
    note = pick(rng, list(LIST_NOTES)) if rng.random() < 0.35 else ""
    phrasing = rng.randrange(len(SAVE))
    note_words = f' with the note "{note}"' if note else ""
    prompt = SAVE[phrasing].format(p=place["name"], l=target["name"], city=place["city"], hood=place["neighborhood"],
                                   note=note_words)
    return TaskDraft(
        prompt=prompt,
        checks=[*saved_checks(target["id"], place, note), diff_only([saved_change(target["id"], place["id"])]),
                answer_has([place["name"]], label="answer names the place")],
        reference_solution=[call("search_places", query=place["name"]), call("list_my_lists"),
                            call("save_place", list_name=target["name"], place=place["id"], note=note or None)],
        env_variables=env_for(user, random_today(rng)),
        expected_answer=f"Saved {place['name']} to your '{target['name']}' list{note_words}.",
        difficulty=1,
        metadata={"phrasing": phrasing, "list_id": target["id"], "place_id": place["id"]},
    )


REMOVE = (
    "Remove {p} from my '{l}' list.",
    "Take {p} off my {l} list, please.",
    "I don't want {p} in my \"{l}\" list anymore. Delete it from there.",
)


def remove_from_list(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: one place out of one of the user's lists (the place itself stays on the map)."""
    saved = world.query(
        "SELECT s.id, s.list_id, s.place_id, l.user_id, l.name AS list_name FROM saved_places s "
        "JOIN saved_lists l ON l.id = s.list_id ORDER BY s.id")
    row = pick(rng, saved)
    place = place_by_id(world, row["place_id"])
    phrasing = rng.randrange(len(REMOVE))
    where = {"list_id": row["list_id"], "place_id": place["id"]}
    return TaskDraft(
        prompt=REMOVE[phrasing].format(p=place["name"], l=row["list_name"]),
        checks=[RowAbsent(table="saved_places", where=where, weight=3.0, label=f"{place['name']} removed"),
                diff_only([ExpectedChange(table="saved_places", op="delete", where=where)]),
                answer_has([place["name"]], label="answer names the place")],
        reference_solution=[call("list_my_lists"),
                            call("remove_saved_place", list_name=row["list_name"], place=place["id"])],
        env_variables=env_for(user_by_id(world, row["user_id"]), random_today(rng)),
        expected_answer=f"Removed {place['name']} from your '{row['list_name']}' list.",
        difficulty=1,
        metadata={"phrasing": phrasing, "list_id": row["list_id"], "place_id": place["id"]},
    )


REVIEW = (
    "Leave a {s}-star review for {p}: \"{t}\"",
    "Please post my review of {p} in {city}. {s} out of 5, text: \"{t}\"",
    "Rate {p} {s}/5 and add the comment \"{t}\"",
    "I want to review {p} ({hood}): give it {stars} and write \"{t}\"",
)


def write_a_review(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: the user's first review of a named place, with the stars and words they give."""
    user = pick(rng, users(world))
    visited = world.query("SELECT DISTINCT place_id FROM visits WHERE user_id=? ORDER BY place_id", (user["id"],))
    place = place_by_id(world, pick(rng, visited)["place_id"]) if visited and rng.random() < 0.7 else pick(
        rng, places(world))
    if has_reviewed(world, user["id"], place["id"]):
        return None
    stars, text = review_words(rng)
    phrasing = rng.randrange(len(REVIEW))
    prompt = REVIEW[phrasing].format(s=stars, stars=stars_words(stars), p=place["name"], t=text, city=place["city"],
                                     hood=place["neighborhood"])
    return TaskDraft(
        prompt=prompt,
        checks=[*review_checks(user["id"], place, stars, text), diff_only([review_change(user["id"], place["id"])])],
        reference_solution=[call("search_places", query=place["name"]), call("list_my_reviews"),
                            call("write_review", place=place["id"], stars=stars, text=text)],
        env_variables=env_for(user, random_today(rng)),
        expected_answer=f"Posted your {stars}-star review of {place['name']}: \"{text}\"",
        difficulty=1,
        metadata={"phrasing": phrasing, "place_id": place["id"]},
    )
