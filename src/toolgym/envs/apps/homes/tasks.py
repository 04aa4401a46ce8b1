"""The homes app's task families, one per kind of request, covering every task shape."""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.homes.tasks_listings import (
    create_saved_search,
    listing_agent,
    listing_facts,
    save_best_value,
    save_named_home,
)
from toolgym.envs.apps.homes.tasks_offers import (
    make_named_offer,
    offer_off_market_impossible,
    offer_too_low_impossible,
    raise_offer,
)
from toolgym.envs.apps.homes.tasks_plans import my_saved_pick, save_tour_offer
from toolgym.envs.apps.homes.tasks_tours import (
    cancel_my_tour,
    my_tour_lookup,
    schedule_named_tour,
    tour_cheapest,
    tour_off_market_impossible,
    tour_saved_home,
    tour_slot_taken_impossible,
)

FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("listing_facts", "lookup", listing_facts),
    TaskFamily("listing_agent", "lookup", listing_agent),
    TaskFamily("save_named_home", "write", save_named_home),
    TaskFamily("create_saved_search", "write", create_saved_search),
    TaskFamily("schedule_named_tour", "write", schedule_named_tour),
    TaskFamily("make_named_offer", "write", make_named_offer),
    TaskFamily("cancel_my_tour", "write", cancel_my_tour),
    TaskFamily("tour_cheapest", "search_choose_write", tour_cheapest),
    TaskFamily("save_best_value", "search_choose_write", save_best_value),
    TaskFamily("save_tour_offer", "multi_step", save_tour_offer),
    TaskFamily("raise_offer", "multi_step", raise_offer),
    TaskFamily("tour_off_market_impossible", "impossible", tour_off_market_impossible),
    TaskFamily("offer_off_market_impossible", "impossible", offer_off_market_impossible),
    TaskFamily("offer_too_low_impossible", "impossible", offer_too_low_impossible),
    TaskFamily("tour_slot_taken_impossible", "impossible", tour_slot_taken_impossible),
    TaskFamily("tour_saved_home", "context", tour_saved_home),
    TaskFamily("my_tour_lookup", "context", my_tour_lookup),
    TaskFamily("my_saved_pick", "context", my_saved_pick),
)
