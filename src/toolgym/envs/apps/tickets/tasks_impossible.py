"""Impossible task families: seats that are not there, orders over the ticket limit, refunds of live events."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.tickets.task_common import (
    NOUN,
    buyers,
    event_and_today,
    only_event,
    pick_event,
    sections_of,
)
from toolgym.envs.apps.tickets.tasks_mine import pick_order

TEXTS = kit.module_texts(__file__)

SECTION_SHORT = TEXTS["SECTION_SHORT"]
EVENT_UNAVAILABLE = TEXTS["EVENT_UNAVAILABLE"]


def unavailable_seats_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The section is short of seats, or the event is sold out, cancelled or already over: nothing to buy."""
    variant = rng.choice(["section", "sold_out", "cancelled", "past"])
    status = {"section": "on_sale", "sold_out": "sold_out", "cancelled": "cancelled", "past": "on_sale"}[variant]
    event = pick_event(rng, world, "2026-03-01", "2026-09-30", status)
    if not only_event(world, event["performer"], event["date"]):
        return None
    day = kit.day_of(event["date"])
    if variant == "past":
        low = max(kit.FIRST_DAY, day + dt.timedelta(days=1))
        today = kit.day_in_window(rng, low, low + dt.timedelta(days=30))
    else:
        today = kit.today_before(rng, day)
    if today is None:
        return None
    quantity = rng.choice([2, 2, 3, 4])
    if quantity > event["max_per_order"]:
        return None
    solution = [kit.call("search_events", performer=event["performer"], date=event["date"])]
    fmt = {"tickets": kit.plural(quantity, "ticket"), "count": quantity, "performer": event["performer"],
           "date": event["date"], "title": event["title"], "human": kit.human_date(event["date"], weekday=True),
           "venue": event["venue"], "noun": NOUN[event["category"]]}
    if variant == "section":
        short = [s for s in sections_of(world, event["event_id"]) if s["seats_available"] < quantity]
        if not short:
            return None
        section = rng.choice(short)
        left = section["seats_available"]
        templates = SECTION_SHORT
        fmt["section"] = section["name"]
        solution.append(kit.call("get_seat_map", event_id=event["event_id"]))
        reason = "it is sold out" if left == 0 else f"it has only {kit.plural(left, 'seat')} left"
        answer = f"I cannot buy {quantity} tickets in {section['name']} for {event['title']} on {event['date']}: {reason}."
    else:
        templates = EVENT_UNAVAILABLE
        reason = {"sold_out": "it is sold out", "cancelled": "the event was cancelled",
                  "past": f"it already took place (today is {today.isoformat()})"}[variant]
        answer = f"I cannot buy tickets for {event['title']} on {event['date']}: {reason}."
    phrasing, prompt = kit.phrase(rng, templates, **fmt)
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("buy_tickets"),
        reference_solution=solution,
        env_variables=kit.env_for(rng.choice(buyers(world)), today),
        expected_answer=answer,
        difficulty=2,
        metadata={"phrasing": f"{variant}{phrasing}", "variant": variant, "event_id": event["event_id"],
                  "quantity": quantity, "section": fmt.get("section")},
    )


OVER_LIMIT = TEXTS["OVER_LIMIT"]


def over_limit_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """More tickets than the event allows per order, in a section that has the seats: the limit forbids it."""
    picked = event_and_today(rng, world)
    if picked is None:
        return None
    event, today = picked
    quantity = event["max_per_order"] + rng.randint(1, 4)
    roomy = [s for s in sections_of(world, event["event_id"]) if s["seats_available"] >= quantity]
    if not roomy:
        return None
    section = rng.choice(roomy)
    phrasing, prompt = kit.phrase(
        rng, OVER_LIMIT, count=quantity, section=section["name"], performer=event["performer"],
        date=event["date"], title=event["title"], human=kit.human_date(event["date"], weekday=True),
        venue=event["venue"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("buy_tickets"),
        reference_solution=[kit.call("search_events", performer=event["performer"], date=event["date"]),
                            kit.call("get_seat_map", event_id=event["event_id"])],
        env_variables=kit.env_for(rng.choice(buyers(world)), today),
        expected_answer=(f"I cannot buy {quantity} tickets in one order: {event['title']} on {event['date']} allows "
                         f"at most {event['max_per_order']} tickets per order."),
        difficulty=2,
        metadata={"phrasing": phrasing, "event_id": event["event_id"], "section": section["name"],
                  "quantity": quantity},
    )


REFUND_LIVE = TEXTS["REFUND_LIVE"]


def refund_not_cancelled_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The user wants a refund but the event is still on (or sold out): only cancelled events are refunded."""
    picked = pick_order(rng, world, "e.status != 'cancelled'", before_event=True)
    if picked is None:
        return None
    order, today = picked
    phrasing, prompt = kit.phrase(
        rng, REFUND_LIVE, performer=order["performer"], date=order["date"], title=order["title"],
        human=kit.human_date(order["date"], weekday=True), noun=NOUN[order["category"]], venue=order["venue"],
        code=order["code"])
    lookup = (kit.call("get_ticket_order", order_code=order["code"]) if phrasing == len(REFUND_LIVE) - 1
              else kit.call("list_my_ticket_orders"))
    state = "sold out but still going ahead" if order["event_status"] == "sold_out" else "still going ahead"
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("request_ticket_refund"),
        reference_solution=[lookup],
        env_variables=kit.env_for(kit.user_by_id(world, order["user_id"]), today),
        expected_answer=(f"I cannot refund order {order['code']}: {order['title']} on {order['date']} is {state}, "
                         "not cancelled, and only orders for cancelled events can be refunded."),
        difficulty=2,
        metadata={"phrasing": phrasing, "order_id": order["id"], "order_code": order["code"]},
    )
