"""Listing task families: facts about a home, its agent, saving a named home, saved searches, best value."""

from __future__ import annotations

import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.homes.rules import HOME_TYPES
from toolgym.envs.apps.homes.task_common import (
    TYPE_PLURALS,
    active_users,
    is_saved,
    listing_lookup,
    listings,
    saved_checks,
)
from toolgym.schema import ExpectedChange, RowExists

TEXTS = kit.module_texts(__file__)

# asked facts -> (listing fields, templates); a fact pair is only asked where it exists (an HOA fee > 0)
LISTING_FACTS = {tuple(key.split()): value for key, value in TEXTS["LISTING_FACTS"].items()}


def listing_facts(rng: random.Random, world: World) -> TaskDraft | None:
    """Find a listing by address and answer two facts from get_listing (price per sqft is the tool's number)."""
    asked = sorted(LISTING_FACTS)[rng.randrange(len(LISTING_FACTS))]
    fields, templates = LISTING_FACTS[asked]
    home = rng.choice(listings(world, "l.status != 'sold'" + (" AND l.hoa_fee > 0" if "hoa" in asked else "")))
    values = [str(home[f]) for f in fields]
    listing_id = home["id"]
    phrasing, prompt = kit.phrase(rng, templates, address=home["address"], city=home["city"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks(values),
        reference_solution=[listing_lookup(home), kit.call("get_listing", listing_id=listing_id)],
        env_variables=kit.env_for(rng.choice(active_users(world)), kit.random_day(rng)),
        expected_answer=(f"{home['address']} in {home['city']} is a {home['beds']}-bed, {home['sqft']} sqft "
                         f"{home['home_type']} built in {home['year_built']}, asking ${home['price']} "
                         f"(${home['price_per_sqft']} per sqft); HOA ${home['hoa_fee']} per month."),
        difficulty=1,
        metadata={"phrasing": "-".join(asked) + str(phrasing), "listing_id": listing_id},
    )


def listing_agent(rng: random.Random, world: World) -> TaskDraft | None:
    """Listing by address -> its agent (get_listing) -> the agent's details (get_agent)."""
    home = rng.choice(listings(world))
    agent = world.one("SELECT * FROM agents WHERE id=?", (home["agent_id"],))
    assert agent is not None
    asked = rng.choice(sorted(TEXTS["AGENT_FACTS"]))
    fields, templates = TEXTS["AGENT_FACTS"][asked]
    phrasing, prompt = kit.phrase(rng, templates, address=home["address"], city=home["city"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([str(agent[f]) for f in fields]),
        reference_solution=[listing_lookup(home), kit.call("get_listing", listing_id=home["id"]),
                            kit.call("get_agent", agent_id=agent["id"])],
        env_variables=kit.env_for(rng.choice(active_users(world)), kit.random_day(rng)),
        expected_answer=(f"The listing agent for {home['address']} is {agent['name']} of {agent['brokerage']}, "
                         f"rated {agent['rating']} out of 5; phone {agent['phone']}."),
        difficulty=2,
        metadata={"phrasing": f"{asked}{phrasing}", "listing_id": home["id"], "agent_id": agent["id"]},
    )


def save_named_home(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: the named listing goes into the user's saved homes (not saved before)."""
    home = rng.choice(listings(world, "l.status != 'sold'"))
    user = rng.choice(active_users(world))
    if is_saved(world, user["id"], home["id"]):
        return None
    check, expected = saved_checks(user["id"], home["id"])
    phrasing, prompt = kit.phrase(rng, TEXTS["SAVE_HOME"], address=home["address"], city=home["city"])
    return TaskDraft(
        prompt=prompt,
        checks=[check, kit.diff_only([expected]), kit.answer_has([home["address"]], label="answer names the home")],
        reference_solution=[listing_lookup(home), kit.call("save_home", listing_id=home["id"])],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=f"Saved {home['address']} in {home['city']} (${home['price']}) to your saved homes.",
        difficulty=1,
        metadata={"phrasing": phrasing, "listing_id": home["id"]},
    )


def _search_words(city: str, max_price: int | None, min_beds: int | None, home_type: str | None) -> str:
    what = f"{TYPE_PLURALS[home_type] if home_type else 'homes'} in {city}"
    if min_beds is not None:
        what += f" with at least {min_beds} bedroom{'s' if min_beds > 1 else ''}"
    if max_price is not None:
        what += f" {'and ' if min_beds is not None else ''}priced up to {kit.money(max_price)}"
    return what


def create_saved_search(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: a saved search with exactly the filters the user names (unnamed ones stay empty)."""
    cities = world.query("SELECT id, name FROM cities ORDER BY id")
    city = rng.choice(cities)
    prices = [r["price"] for r in world.query(
        "SELECT price FROM listings WHERE city_id=? AND status='active' ORDER BY price", (city["id"],))]
    max_price = None if rng.random() < 0.2 else round(rng.choice(prices) / 25000) * 25000 + 25000
    min_beds = None if rng.random() < 0.25 else rng.randint(1, 4)
    home_type = None if rng.random() < 0.5 else rng.choice(list(HOME_TYPES))
    if max_price is None and min_beds is None and home_type is None:
        return None
    user = rng.choice(active_users(world))
    where: dict[str, Any] = {"user_id": user["id"], "city_id": city["id"], "max_price": max_price,
                             "min_beds": min_beds, "home_type": home_type}
    clash = world.one(
        "SELECT id FROM saved_searches WHERE user_id=? AND city_id=? AND max_price IS ? AND min_beds IS ? "
        "AND home_type IS ?", tuple(where.values()))
    if clash is not None:
        return None
    matches = world.one(
        "SELECT COUNT(*) AS n FROM listings WHERE city_id=? AND status='active' AND (? IS NULL OR price<=?) "
        "AND (? IS NULL OR beds>=?) AND (? IS NULL OR home_type=?)",
        (city["id"], max_price, max_price, min_beds, min_beds, home_type, home_type))
    count = matches["n"] if matches else 0
    phrasing = rng.randrange(len(TEXTS["SAVED_SEARCH"]))
    checks = [RowExists(table="saved_searches", where=where, count=1, weight=3.0, label="saved search with these filters"),
              kit.diff_only([ExpectedChange(table="saved_searches", op="insert", where={"user_id": user["id"]})])]
    if phrasing > 0:  # those phrasings ask for today's number of matches
        checks.append(kit.answer_has([str(count)], label="answer gives the number of matches"))
    return TaskDraft(
        prompt=TEXTS["SAVED_SEARCH"][phrasing].format(what=_search_words(city["name"], max_price, min_beds, home_type)),
        checks=checks,
        reference_solution=[kit.call("create_saved_search", city=city["name"], max_price=max_price, min_beds=min_beds,
                                 home_type=home_type)],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=f"Your saved search for {_search_words(city['name'], max_price, min_beds, home_type)} is set "
                        f"up; {count} active listings match it today.",
        difficulty=1,
        metadata={"phrasing": phrasing, "city_id": city["id"]},
    )


def _active_filtered(world: World, city_id: int, max_price: int | None, home_type: str | None) -> list[dict[str, Any]]:
    rows = listings(world, "l.city_id=? AND l.status='active' AND (? IS NULL OR l.price<=?) AND (? IS NULL OR "
                    "l.home_type=?)", (city_id, max_price, max_price, home_type, home_type))
    for row in rows:
        row["listed_on_ordinal"] = int(row["listed_on"].replace("-", ""))
    return rows


def save_best_value(rng: random.Random, world: World) -> TaskDraft | None:
    """Search a city with filters, choose by a criterion (price/sqft, size, newest), save the winner."""
    city = rng.choice(world.query("SELECT id, name FROM cities ORDER BY id"))
    home_type = rng.choice(["house", "condo", "townhouse", None])
    prices = [r["price"] for r in _active_filtered(world, city["id"], None, home_type)]
    if len(prices) < 3:
        return None
    max_price = round(sorted(prices)[rng.randrange(2, len(prices))] / 25000) * 25000 + 25000
    rows = _active_filtered(world, city["id"], max_price, home_type)
    criterion = rng.choice(sorted(TEXTS["BEST_VALUE"]))
    field, largest, sort_by, templates = TEXTS["BEST_VALUE"][criterion]
    best = kit.unique_best(rows, field, largest=largest)
    if best is None or len(rows) < 2 or len(rows) > 20 or any(r["price"] == max_price for r in rows):
        return None  # no tie, a real choice, all on one page, and "under" means the same as the tool's "at most"
    user = rng.choice(active_users(world))
    if is_saved(world, user["id"], best["id"]):
        return None
    what = f"{TYPE_PLURALS[home_type] if home_type else 'homes'} for sale in {city['name']} under {kit.money(max_price)}"
    check, expected = saved_checks(user["id"], best["id"])
    phrasing, prompt = kit.phrase(rng, templates, what=what)
    return TaskDraft(
        prompt=prompt,
        checks=[check, kit.diff_only([expected]), kit.answer_has([best["address"]], label="answer names the chosen home")],
        reference_solution=[
            kit.call("search_listings", city=city["name"], max_price=max_price, home_type=home_type, sort_by=sort_by),
            kit.call("save_home", listing_id=best["id"]),
        ],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=(f"Saved {best['address']} (${best['price']}, {best['sqft']} sqft, ${best['price_per_sqft']} "
                         f"per sqft, listed {best['listed_on']})."),
        difficulty=2,
        metadata={"phrasing": f"{criterion}{phrasing}", "listing_id": best["id"]},
    )
