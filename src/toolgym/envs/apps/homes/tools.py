"""Tools of the homes app: search listings, look up agents, save homes and searches, tour, make offers.

Every rule a tour or offer must follow is checked here and broken rules come back as a ToolError
saying what was wrong and what is allowed. "My" means the LOGGED_IN_USER; dates go through the
task's CURRENT_DATE, so "tomorrow" and "next Friday" work and nothing reads the wall clock.
"""

from __future__ import annotations

from toolgym.envs.apps.homes.tools_listings import (
    create_saved_search,
    delete_saved_search,
    get_agent,
    get_listing,
    list_saved_homes,
    list_saved_searches,
    save_home,
    search_listings,
    unsave_home,
)
from toolgym.envs.apps.homes.tools_visits import (
    cancel_tour,
    list_my_offers,
    list_my_tours,
    list_tour_slots,
    make_offer,
    schedule_tour,
    withdraw_offer,
)

TOOLS = [
    search_listings, get_listing, get_agent, save_home, unsave_home, list_saved_homes, create_saved_search,
    list_saved_searches, delete_saved_search, list_tour_slots, schedule_tour, cancel_tour, list_my_tours,
    make_offer, withdraw_offer, list_my_offers,
]
