"""Impossible families: a second review, a place that is not on the map, someone else's list, a taken list name.

Each request breaks a rule the tools enforce; the right reply starts with 'I cannot' and nothing changes.
"""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.maps.rules import search
from toolgym.envs.apps.maps.task_common import (
    MODE_WORDS,
    place_by_id,
    places,
    review_words,
    user_lists,
    users,
)

TEXTS = kit.module_texts(__file__)


def review_twice_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The user already reviewed the place; a second review is not allowed."""
    earlier = rng.choice(world.query("SELECT * FROM reviews ORDER BY id"))
    place = place_by_id(world, earlier["place_id"])
    user = kit.user_by_id(world, earlier["user_id"], "*")
    today = kit.random_day(rng, max(kit.FIRST_DAY, kit.day_of(earlier["created_on"]) + dt.timedelta(days=1)))
    stars, text = review_words(rng)
    phrasing, prompt = kit.phrase(
        rng, TEXTS["REVIEW_AGAIN"], s=stars, stars=kit.plural(stars, "star"), p=place["name"], t=text)
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("write_review"),
        reference_solution=[kit.call("list_my_reviews")],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"I cannot post it: you already reviewed {place['name']} on {earlier['created_on']} "
                         f"({kit.plural(earlier['stars'], 'star')}), and each user can review a place only once."),
        difficulty=2,
        metadata={"phrasing": phrasing, "place_id": place["id"], "review_id": earlier["id"]},
    )


FAKE_FIRST = ("Blue Heron", "Crimson Kite", "Velvet Moon", "Amber Fox", "Tidewater", "Starling", "Moonrise",
              "Larkspur", "Silver Birch", "Golden Pheasant", "Seven Gables", "Paper Crane")
FAKE_KIND = ("Supper Club", "Bistro", "Noodle Bar", "Gallery", "Pharmacy", "Bowling Alley", "Pizzeria",
             "Tea Room", "Roastery", "Wine Bar", "Climbing Gym", "Bookshop")


def _absent(world: World, first: str, name: str) -> bool:
    """True when neither the name nor its distinctive first part matches anything on the map."""
    hits = world.query("SELECT id FROM places WHERE name LIKE ? OR name LIKE ? OR neighborhood LIKE ? ORDER BY id",
                       (f"%{name}%", f"%{first}%", f"%{first}%"))
    return not hits and not search(world, name)[0] and not world.query(
        "SELECT id FROM place_aliases WHERE alias LIKE ? ORDER BY id", (f"%{name}%",))


def unknown_place_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """Directions to, and saving of, a place the map does not have."""
    first = rng.choice(list(FAKE_FIRST))
    fake = f"{first} {rng.choice(list(FAKE_KIND))}"
    if not _absent(world, first, fake):
        return None
    user = rng.choice(users(world))
    target = rng.choice(user_lists(world, user["id"]))
    mode = rng.choice(sorted(MODE_WORDS))
    verb, by = MODE_WORDS[mode]
    origin_place = rng.choice(places(world))
    origin = "home" if rng.random() < 0.5 else origin_place["name"]
    origin_words = "my home" if origin == "home" else origin
    phrasing = rng.randrange(len(TEXTS["UNKNOWN_PLACE"]))
    prompt = TEXTS["UNKNOWN_PLACE"][phrasing].format(verb=verb, by=by, o=origin_words, f=fake, n=rng.choice((15, 20, 30)),
                                                     l=target["name"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("save_place"),
        reference_solution=[kit.call("search_places", query=fake)],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=(f"I cannot find {fake} on the map, so I cannot give directions to it or save it to your "
                         f"'{target['name']}' list."),
        difficulty=2,
        metadata={"phrasing": phrasing, "fake_name": fake},
    )


def foreign_list_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """Saving into another user's list: the user can only change their own lists."""
    lists = world.query(
        "SELECT l.*, u.name AS owner FROM saved_lists l JOIN users u ON u.id = l.user_id "
        "WHERE l.name NOT IN ('Favorites', 'Want to go') ORDER BY l.id")
    theirs = rng.choice(lists)
    user = rng.choice(users(world))
    if user["id"] == theirs["user_id"]:
        return None
    if theirs["name"].casefold() in {r["name"].casefold() for r in user_lists(world, user["id"])}:
        return None
    place = rng.choice(places(world))
    phrasing, prompt = kit.phrase(
        rng, TEXTS["FOREIGN_LIST"], p=place["name"], owner=theirs["owner"], first=theirs["owner"].split()[0],
        l=theirs["name"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("save_place"),
        reference_solution=[kit.call("list_my_lists")],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=(f"I cannot do that: '{theirs['name']}' is {theirs['owner']}'s list, and I can only save "
                         "places to your own lists."),
        difficulty=2,
        metadata={"phrasing": phrasing, "list_id": theirs["id"], "place_id": place["id"]},
    )


WHY = ("I want to try", "to show visitors", "for the summer", "near the office", "for rainy weekends",
       "my parents would like", "for team outings", "to go with the kids")
DESCRIPTIONS = ("Spots to try this summer", "For when friends visit", "Quick lunch ideas", "Quiet places to read",
                "Good for groups", "Open late", "Near the office", "Weekend mornings")


def list_name_taken_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """A new list with a name the user already uses (names are unique per user, ignoring case)."""
    existing = rng.choice(world.query("SELECT * FROM saved_lists ORDER BY id"))
    user = kit.user_by_id(world, existing["user_id"], "*")
    shown = existing["name"] if rng.random() < 0.7 else existing["name"].lower()
    phrasing = rng.randrange(len(TEXTS["LIST_TAKEN"]))
    return TaskDraft(
        prompt=TEXTS["LIST_TAKEN"][phrasing].format(l=shown, why=rng.choice(list(WHY)), d=rng.choice(list(DESCRIPTIONS))),
        checks=kit.impossible_checks("create_list"),
        reference_solution=[kit.call("list_my_lists")],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=(f"I cannot create it: you already have a list named '{existing['name']}', and list names "
                         "must be unique."),
        difficulty=1,
        metadata={"phrasing": phrasing, "list_id": existing["id"]},
    )
