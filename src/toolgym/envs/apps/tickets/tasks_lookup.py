"""Lookup task families: cheapest seats of a show, when/where a performer plays, my orders, a day's events."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.tickets.rules import find_events
from toolgym.envs.apps.tickets.task_common import (
    KIND,
    KIND_PLURAL,
    NOUN,
    buyers,
    day_group,
    event_and_today,
    sections_of,
)

TEXTS = kit.module_texts(__file__)

CHEAPEST_SECTION = TEXTS["CHEAPEST_SECTION"]


def cheapest_section_lookup(rng: random.Random, world: World) -> TaskDraft | None:
    """Find one show and read its seat map: the cheapest section that still has seats, and its price."""
    picked = event_and_today(rng, world)
    if picked is None:
        return None
    event, today = picked
    sections = sections_of(world, event["event_id"])
    available = [s for s in sections if s["seats_available"] > 0]
    if len(available) < 2:
        return None
    best = available[0]
    phrasing, prompt = kit.phrase(
        rng, CHEAPEST_SECTION, performer=event["performer"], venue=event["venue"], date=event["date"],
        title=event["title"], human=kit.human_date(event["date"], weekday=True), city=event["city"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([best["name"], str(best["price"])]),
        reference_solution=[kit.call("search_events", performer=event["performer"], date=event["date"]),
                            kit.call("get_seat_map", event_id=event["event_id"])],
        env_variables=kit.env_for(rng.choice(buyers(world)), today),
        expected_answer=(f"The cheapest section with seats left for {event['title']} on {event['date']} is "
                         f"{best['name']} at ${best['price']} per ticket ({best['seats_available']} seats available)."),
        difficulty=2 if sections[0]["id"] != best["id"] else 1,
        metadata={"phrasing": phrasing, "event_id": event["event_id"], "section_id": best["id"]},
    )


NEXT_SHOW = TEXTS["NEXT_SHOW"]
NEXT_SHOW_IN_CITY = TEXTS["NEXT_SHOW_IN_CITY"]


def next_show_lookup(rng: random.Random, world: World) -> TaskDraft | None:
    """'When/where is X playing (in city)': the first upcoming event of a performer, from CURRENT_DATE."""
    performer = rng.choice(world.query("SELECT name, category FROM performers ORDER BY id"))
    today = kit.random_day(rng)
    in_city = rng.random() < 0.4
    upcoming = find_events(world, performer=performer["name"], date_from=kit.iso(today + dt.timedelta(days=1)))
    if in_city:
        cities = sorted({e["city"] for e in upcoming})
        if not cities:
            return None
        city = rng.choice(cities)
        upcoming = [e for e in upcoming if e["city"] == city]
    if not upcoming:
        return None
    today_rows = find_events(world, performer=performer["name"], date_from=kit.iso(today), date_to=kit.iso(today))
    if today_rows or upcoming[0]["status"] == "cancelled":  # "next" would be debatable
        return None
    first = upcoming[0]
    templates = NEXT_SHOW_IN_CITY if in_city else NEXT_SHOW
    phrasing, prompt = kit.phrase(
        rng, templates, performer=performer["name"], noun=NOUN[performer["category"]], city=first["city"])
    arguments: dict[str, Any] = {"performer": performer["name"]}
    if in_city:
        arguments["city"] = first["city"]
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([first["date"], first["venue"]]),
        reference_solution=[kit.call("search_events", **arguments)],
        env_variables=kit.env_for(rng.choice(buyers(world)), today),
        expected_answer=(f"{performer['name']} plays next on {first['date']} at {first['start_time']}: {first['title']} "
                         f"at {first['venue']} in {first['city']}."),
        difficulty=1,
        metadata={"phrasing": f"{'city' if in_city else 'any'}{phrasing}", "event_id": first["event_id"]},
    )


MY_NEXT = TEXTS["MY_NEXT"]
MY_SEATS = TEXTS["MY_SEATS"]
MY_CODE = TEXTS["MY_CODE"]


def _my_upcoming(world: World, user_id: int, today: str) -> list[dict[str, Any]]:
    """What list_my_ticket_orders(upcoming_only=True) lists, in its order."""
    return world.query(
        "SELECT o.id, o.code, o.quantity, o.ordered_on, o.total_price, e.id AS event_id, e.title, e.date, "
        "e.start_time, e.status AS event_status, p.name AS performer, v.name AS venue, s.name AS section, "
        "(SELECT COUNT(*) FROM tickets t WHERE t.order_id = o.id AND t.holder_id = o.user_id AND t.status = 'valid') "
        "AS held FROM orders o JOIN events e ON e.id = o.event_id JOIN performers p ON p.id = e.performer_id "
        "JOIN venues v ON v.id = e.venue_id JOIN sections s ON s.id = o.section_id "
        "WHERE o.user_id=? AND e.date>=? AND o.status='confirmed' ORDER BY e.date, e.start_time, o.id",
        (user_id, today))


def my_orders_lookup(rng: random.Random, world: World) -> TaskDraft | None:
    """'My next event' / 'my X tickets': LOGGED_IN_USER and CURRENT_DATE decide which order is meant."""
    order = rng.choice(world.query(
        "SELECT o.id, o.user_id, o.ordered_on, e.date FROM orders o JOIN events e ON e.id = o.event_id "
        "WHERE o.status='confirmed' AND e.status != 'cancelled' ORDER BY o.id"))
    today = kit.today_before(rng, kit.day_of(order["date"]), lead_days=40,
                       earliest=kit.day_of(order["ordered_on"]) + dt.timedelta(days=1))
    if today is None:
        return None
    mine = _my_upcoming(world, order["user_id"], kit.iso(today))
    target = next(r for r in mine if r["id"] == order["id"])
    received = world.query(
        "SELECT DISTINCT e.date, p.name AS performer FROM tickets t JOIN orders o ON o.id = t.order_id "
        "JOIN events e ON e.id = o.event_id JOIN performers p ON p.id = e.performer_id "
        "WHERE t.holder_id=? AND o.user_id != t.holder_id AND e.date>=? ORDER BY e.date",
        (order["user_id"], kit.iso(today)))
    if any(r["date"] <= mine[0]["date"] or r["performer"] == target["performer"] for r in received):
        return None  # tickets friends gave the user would also count as "my" events
    question = rng.choice(["next", "seats", "code"])
    if question == "next":
        first = mine[0]
        if first["event_status"] == "cancelled" or first["held"] == 0:
            return None
        if len(mine) > 1 and (mine[1]["date"], mine[1]["start_time"]) == (first["date"], first["start_time"]):
            return None
        templates, values = MY_NEXT, [first["performer"], first["date"], first["venue"]]
        answer = (f"Your next event is {first['title']} on {first['date']} at {first['start_time']}, at "
                  f"{first['venue']} (order {first['code']}, {kit.plural(first['quantity'], 'ticket')}).")
    else:
        same = [r for r in mine if r["performer"] == target["performer"]]
        if len(same) != 1:
            return None
        if question == "seats":
            templates, values = MY_SEATS, [target["section"], str(target["quantity"])]
            answer = (f"You have {kit.plural(target['quantity'], 'ticket')} in {target['section']} for {target['title']} "
                      f"on {target['date']} (order {target['code']}).")
        else:
            templates, values = MY_CODE, [target["code"]]
            answer = f"Your order for {target['title']} on {target['date']} is {target['code']}."
    phrasing, prompt = kit.phrase(
        rng, templates, performer=target["performer"], date=target["date"], title=target["title"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks(values),
        reference_solution=[kit.call("list_my_ticket_orders", upcoming_only=True)],
        env_variables=kit.env_for(kit.user_by_id(world, order["user_id"]), today),
        expected_answer=answer,
        difficulty=2,
        metadata={"phrasing": f"{question}{phrasing}", "order_id": target["id"]},
    )


DAY_EVENTS = TEXTS["DAY_EVENTS"]


def day_events_lookup(rng: random.Random, world: World) -> TaskDraft | None:
    """'This Saturday's concerts in X': the day comes from CURRENT_DATE, the events from a search."""
    group = day_group(rng, world, 3)
    if group is None:
        return None
    when, argument, today, events = group.when, group.argument, group.today, group.events
    if any(e["status"] == "cancelled" for e in events):
        return None
    phrasing, prompt = kit.phrase(
        rng, DAY_EVENTS, kinds=KIND_PLURAL[group.category], city=group.city, when=when)
    listing = "; ".join(f"{e['title']} at {e['venue']}, {e['start_time']}" for e in events)
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([e["performer"] for e in events]),
        reference_solution=[kit.call("search_events", city=group.city, category=group.category, date=argument)],
        env_variables=kit.env_for(rng.choice(buyers(world)), today),
        expected_answer=(f"{KIND_PLURAL[group.category].capitalize()} in {group.city} on {group.date}: "
                         f"{listing}."),
        difficulty=2,
        metadata={"phrasing": phrasing, "when": when, "kind": KIND[group.category],
                  "event_ids": [e["event_id"] for e in events]},
    )
