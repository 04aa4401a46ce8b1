"""The booking app's task families, one per kind of request, covering every task shape."""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.booking.tasks_flights import (
    book_cheapest_flight,
    earliest_flight_relative_day,
    fare_lookup,
    no_flights_impossible,
    round_trip,
)
from toolgym.envs.apps.booking.tasks_hotels import (
    book_hotel_room,
    book_top_rated_hotel,
    hotel_facts,
    hotel_full_impossible,
    review_past_stay,
)
from toolgym.envs.apps.booking.tasks_mine import (
    cancel_in_city,
    cancel_nonrefundable_impossible,
    my_trip_lookup,
)
from toolgym.envs.apps.booking.tasks_trips import trip_within_budget

FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("hotel_facts", "lookup", hotel_facts),
    TaskFamily("fare_lookup", "lookup", fare_lookup),
    TaskFamily("book_hotel_room", "write", book_hotel_room),
    TaskFamily("cancel_in_city", "write", cancel_in_city),
    TaskFamily("review_past_stay", "write", review_past_stay),
    TaskFamily("book_cheapest_flight", "search_choose_write", book_cheapest_flight),
    TaskFamily("book_top_rated_hotel", "search_choose_write", book_top_rated_hotel),
    TaskFamily("trip_within_budget", "multi_step", trip_within_budget),
    TaskFamily("round_trip", "multi_step", round_trip),
    TaskFamily("no_flights_impossible", "impossible", no_flights_impossible),
    TaskFamily("cancel_nonrefundable_impossible", "impossible", cancel_nonrefundable_impossible),
    TaskFamily("hotel_full_impossible", "impossible", hotel_full_impossible),
    TaskFamily("earliest_flight_relative_day", "context", earliest_flight_relative_day),
    TaskFamily("my_trip_lookup", "context", my_trip_lookup),
)
