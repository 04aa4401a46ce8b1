"""The maps app's task families, one per kind of request, covering every task shape."""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.maps.tasks_choose import best_rated_save, closest_open_save
from toolgym.envs.apps.maps.tasks_context import nearest_open_from_home, review_recent_visit, timeline_lookup
from toolgym.envs.apps.maps.tasks_impossible import (
    foreign_list_impossible,
    list_name_taken_impossible,
    review_twice_impossible,
    unknown_place_impossible,
)
from toolgym.envs.apps.maps.tasks_lookup import best_nearby, place_hours, route_time
from toolgym.envs.apps.maps.tasks_plans import list_from_timeline, weekend_plan
from toolgym.envs.apps.maps.tasks_write import remove_from_list, save_to_list, write_a_review

FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("route_time", "lookup", route_time),
    TaskFamily("best_nearby", "lookup", best_nearby),
    TaskFamily("place_hours", "lookup", place_hours),
    TaskFamily("save_to_list", "write", save_to_list),
    TaskFamily("remove_from_list", "write", remove_from_list),
    TaskFamily("write_review", "write", write_a_review),
    TaskFamily("closest_open_save", "search_choose_write", closest_open_save),
    TaskFamily("best_rated_save", "search_choose_write", best_rated_save),
    TaskFamily("weekend_plan", "multi_step", weekend_plan),
    TaskFamily("list_from_timeline", "multi_step", list_from_timeline),
    TaskFamily("review_twice_impossible", "impossible", review_twice_impossible),
    TaskFamily("unknown_place_impossible", "impossible", unknown_place_impossible),
    TaskFamily("foreign_list_impossible", "impossible", foreign_list_impossible),
    TaskFamily("list_name_taken_impossible", "impossible", list_name_taken_impossible),
    TaskFamily("timeline_lookup", "context", timeline_lookup),
    TaskFamily("nearest_open_from_home", "context", nearest_open_from_home),
    TaskFamily("review_recent_visit", "context", review_recent_visit),
)
