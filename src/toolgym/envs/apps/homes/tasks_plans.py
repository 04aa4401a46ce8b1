"""Families over several of the user's things: save + tour + offer under a budget, and 'my saved homes'."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.homes.rules import can_tour, min_offer, spoken_time
from toolgym.envs.apps.homes.task_common import (
    active_users,
    has_open_offer,
    is_saved,
    listings,
    offer_checks,
    pick_slot,
    saved_checks,
    tour_booking_calls,
    tour_checks,
)

TEXTS = kit.module_texts(__file__)


def save_tour_offer(rng: random.Random, world: World) -> TaskDraft | None:
    """Choose within a budget (largest home that fits), then three writes: save, tour and offer."""
    city = rng.choice(world.query("SELECT id, name FROM cities ORDER BY id"))
    beds = rng.randint(2, 4)
    rows = listings(world, "l.city_id=? AND l.status='active' AND l.beds>=?", (city["id"], beds))
    if len(rows) < 3:
        return None
    anchor = rng.choice(rows)
    budget = -(-anchor["price"] // 25000) * 25000
    fits = [r for r in rows if r["price"] <= budget]
    best = kit.unique_best(fits, "sqft", largest=True)
    if best is None or not any(r["price"] > budget and r["sqft"] > best["sqft"] for r in rows):
        return None  # the budget must rule out a bigger home, or it is no constraint
    below = rng.choice([0, 5000, 10000, 15000, 20000])
    amount = best["price"] - below
    if amount < min_offer(best["price"]):
        return None
    today = kit.random_day(rng)
    date = kit.iso(today + dt.timedelta(days=rng.randint(1, 10)))
    slot = pick_slot(rng)
    user = rng.choice(active_users(world))
    if (is_saved(world, user["id"], best["id"]) or has_open_offer(world, user["id"], best["id"])
            or not can_tour(world, user["id"], best["id"], date, slot, kit.iso(today))):
        return None
    offer_words = "at the full asking price" if below == 0 else f"{kit.money(below)} below the asking price"
    phrasing, prompt = kit.phrase(
        rng, TEXTS["BUDGET_PLAN"], budget=kit.money(budget), city=city["name"], beds=beds, date=date,
        human=kit.human_date(date), time=slot, spoken=spoken_time(slot), offer_words=offer_words)
    saved, saved_change = saved_checks(user["id"], best["id"], weight=2.0)
    tour, tour_change = tour_checks(user["id"], best["id"], date, slot, weight=2.0)
    offer, offer_change = offer_checks(user["id"], best["id"], amount, weight=2.0)
    return TaskDraft(
        prompt=prompt,
        checks=[saved, tour, offer, kit.diff_only([saved_change, tour_change, offer_change]),
                kit.answer_has([best["address"]], label="answer names the chosen home")],
        reference_solution=[
            kit.call("search_listings", city=city["name"], min_beds=beds, max_price=budget, sort_by="sqft"),
            kit.call("save_home", listing_id=best["id"]),
            *tour_booking_calls(best["id"], date, slot),
            kit.call("make_offer", listing_id=best["id"], amount=amount),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"{best['address']} ({best['sqft']} sqft, ${best['price']}) is the largest fit. I saved it, "
                         f"booked a tour on {date} at {slot}, and made an offer of ${amount}."),
        difficulty=3,
        metadata={"phrasing": phrasing, "listing_id": best["id"], "budget": budget, "amount": amount},
    )


def my_saved_pick(rng: random.Random, world: World) -> TaskDraft | None:
    """'My saved homes in X': LOGGED_IN_USER decides the candidates; the answer is the best by a criterion."""
    pairs = world.query(
        "SELECT s.user_id, l.city_id, c.name AS city FROM saved_homes s JOIN listings l ON l.id = s.listing_id "
        "JOIN cities c ON c.id = l.city_id WHERE l.status='active' GROUP BY s.user_id, l.city_id "
        "HAVING COUNT(*) >= 2 ORDER BY s.user_id, l.city_id")
    pair = rng.choice(pairs)
    rows = listings(world, "l.status='active' AND l.city_id=? AND l.id IN (SELECT listing_id FROM saved_homes "
                    "WHERE user_id=?)", (pair["city_id"], pair["user_id"]))
    criterion = rng.choice(sorted(TEXTS["MY_SAVED"]))
    field, largest, answered, templates = TEXTS["MY_SAVED"][criterion]
    best = kit.unique_best(rows, field, largest=largest)
    if best is None:
        return None
    phrasing, prompt = kit.phrase(rng, templates, city=pair["city"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([best["address"], str(best[answered])]),
        reference_solution=[kit.call("list_saved_homes")],
        env_variables=kit.env_for(kit.user_by_id(world, pair["user_id"]), kit.random_day(rng)),
        expected_answer=(f"Of your {len(rows)} saved active listings in {pair['city']}, {best['address']} is the "
                         f"{criterion} pick: ${best['price']}, {best['sqft']} sqft, ${best['price_per_sqft']} per sqft."),
        difficulty=2,
        metadata={"phrasing": f"{criterion}{phrasing}", "listing_id": best["id"]},
    )
