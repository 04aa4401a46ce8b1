"""The tickets app's task families, one per kind of request, covering every task shape."""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.tickets.tasks_buy import (
    best_section_within_budget,
    buy_and_transfer,
    buy_cheapest_relative_day,
    buy_section_tickets,
    earliest_show_under_budget,
    split_between_friends,
)
from toolgym.envs.apps.tickets.tasks_impossible import (
    over_limit_impossible,
    refund_not_cancelled_impossible,
    unavailable_seats_impossible,
)
from toolgym.envs.apps.tickets.tasks_lookup import (
    cheapest_section_lookup,
    day_events_lookup,
    my_orders_lookup,
    next_show_lookup,
)
from toolgym.envs.apps.tickets.tasks_mine import accept_transfer, cancel_sent_transfer, refund_cancelled_event

FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("cheapest_section_lookup", "lookup", cheapest_section_lookup),
    TaskFamily("next_show_lookup", "lookup", next_show_lookup),
    TaskFamily("buy_section_tickets", "write", buy_section_tickets),
    TaskFamily("accept_transfer", "write", accept_transfer),
    TaskFamily("cancel_sent_transfer", "write", cancel_sent_transfer),
    TaskFamily("refund_cancelled_event", "write", refund_cancelled_event),
    TaskFamily("earliest_show_under_budget", "search_choose_write", earliest_show_under_budget),
    TaskFamily("best_section_within_budget", "search_choose_write", best_section_within_budget),
    TaskFamily("buy_and_transfer", "multi_step", buy_and_transfer),
    TaskFamily("split_between_friends", "multi_step", split_between_friends),
    TaskFamily("unavailable_seats_impossible", "impossible", unavailable_seats_impossible),
    TaskFamily("over_limit_impossible", "impossible", over_limit_impossible),
    TaskFamily("refund_not_cancelled_impossible", "impossible", refund_not_cancelled_impossible),
    TaskFamily("my_orders_lookup", "context", my_orders_lookup),
    TaskFamily("day_events_lookup", "context", day_events_lookup),
    TaskFamily("buy_cheapest_relative_day", "context", buy_cheapest_relative_day),
)
