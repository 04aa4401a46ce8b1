"""Purchase task families: a named section, the cheapest or best seats within a budget, and buy-then-transfer."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.tickets.rules import cheapest_section, find_events, next_seats
from toolgym.envs.apps.tickets.task_common import (
    KIND,
    NOUN,
    NUMBER_WORDS,
    buyers,
    day_group,
    event_and_today,
    next_order,
    next_transfer,
    other_users,
    seats_left_after,
    sections_of,
    transfer_checks,
)
from toolgym.envs.apps.tickets.task_common import purchase_checks as _purchase_checks
from toolgym.envs.kit.row_checks import has_row
from toolgym.schema import Check, ExpectedChange, ToolCall

TEXTS = kit.module_texts(__file__)

CARD_NAMES = {"visa": "Visa", "mastercard": "Mastercard", "amex": "Amex", "paypal": "PayPal"}


def _seat_text(section: dict[str, Any], quantity: int) -> str:
    return ", ".join(f"row {r} seat {s}" for r, s in next_seats(section, quantity))


def _fitting_sections(world: World, event: dict[str, Any], quantity: int) -> list[dict[str, Any]]:
    """Sections with `quantity` seats free; none when the order is over the event's limit or would sell it out."""
    fits = [s for s in sections_of(world, event["event_id"]) if s["seats_available"] >= quantity]
    if quantity > event["max_per_order"] or not fits or seats_left_after(world, event["event_id"], quantity) <= 0:
        return []
    return fits


def _party(count: int) -> str:
    return kit.plural(count, "ticket")


def _buy_calls(event: dict[str, Any], section: dict[str, Any], quantity: int,
               search: ToolCall | None = None) -> list[ToolCall]:
    """Find the show (by performer and day unless `search` says how), look at its seats, buy."""
    return [search or kit.call("search_events", performer=event["performer"], date=event["date"]),
            kit.call("get_seat_map", event_id=event["event_id"]),
            kit.call("buy_tickets", event_id=event["event_id"], section=section["name"], quantity=quantity)]


def _order_task(prompt: str, user: dict[str, Any], today: dt.date, code: str,
                bought: tuple[list[Check], list[ExpectedChange]], solution: list[ToolCall], answer: str,
                difficulty: int, metadata: dict[str, Any]) -> TaskDraft:
    """A task whose one write is a new order: its checks, the diff they allow, and the order code in the answer."""
    checks, expected = bought
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected), kit.answer_has([code], label="answer gives the order code")],
        reference_solution=solution, env_variables=kit.env_for(user, today), expected_answer=answer,
        difficulty=difficulty, metadata=metadata)


BUY_SECTION = TEXTS["BUY_SECTION"]


def buy_section_tickets(rng: random.Random, world: World) -> TaskDraft | None:
    """Find the show, check the section has the seats, buy them (sometimes with a named card)."""
    picked = event_and_today(rng, world)
    if picked is None:
        return None
    event, today = picked
    quantity = rng.choices([1, 2, 3, 4], weights=[2, 4, 2, 2])[0]
    fits = _fitting_sections(world, event, quantity)
    if not fits:
        return None
    section = rng.choice(fits)
    user = rng.choice(buyers(world))
    card: dict[str, Any] | None = None
    pay = ""
    if rng.random() < 0.3:
        cards = world.query("SELECT * FROM payment_methods WHERE user_id=? ORDER BY id", (user["id"],))
        usable = [c for c in cards if not c["is_default"] and c["expires"] >= kit.iso(today)[:7]
                  and sum(1 for o in cards if (o["kind"], o["last4"]) == (c["kind"], c["last4"])) == 1]
        if not usable:
            return None
        card = rng.choice(usable)
        pay = f", paying with my {CARD_NAMES[card['kind']]} ending in {card['last4']}"
    phrasing, prompt = kit.phrase(
        rng, BUY_SECTION, tickets=_party(quantity), section=section["name"], performer=event["performer"],
        date=event["date"], title=event["title"], venue=event["venue"],
        human=kit.human_date(event["date"], weekday=True), city=event["city"], pay=pay)
    order_id, code = next_order(world)
    bought = _purchase_checks(user["id"], event["event_id"], section, quantity, order_id,
                              card["id"] if card else None)
    buy_args: dict[str, Any] = {"event_id": event["event_id"], "section": section["name"], "quantity": quantity}
    solution = [kit.call("search_events", performer=event["performer"], date=event["date"]),
                kit.call("get_seat_map", event_id=event["event_id"])]
    if card is not None:
        solution.append(kit.call("list_my_ticket_payment_methods"))
        buy_args["payment_method_id"] = card["id"]
    solution.append(kit.call("buy_tickets", **buy_args))
    return _order_task(
        prompt, user, today, code, bought, solution,
        (f"Bought {_party(quantity)} in {section['name']} for {event['title']} on {event['date']} "
         f"({_seat_text(section, quantity)}), ${section['price'] * quantity} in total. Order code: {code}."),
        2 if card else 1,
        {"phrasing": f"{phrasing}{'-card' if card else ''}", "event_id": event["event_id"],
         "section_id": section["id"]},
    )


EARLIEST_UNDER_BUDGET = TEXTS["EARLIEST_UNDER_BUDGET"]


def earliest_show_under_budget(rng: random.Random, world: World) -> TaskDraft | None:
    """Scan a performer's upcoming shows in date order; buy the cheapest fitting section of the first one
    whose seats fit the per-ticket budget (cancelled, sold-out and too-expensive shows are skipped)."""
    performer = rng.choice(world.query("SELECT name, category FROM performers ORDER BY id"))
    today = kit.random_day(rng)
    quantity = rng.choices([2, 3, 4], weights=[4, 2, 2])[0]
    upcoming = find_events(world, performer=performer["name"], date_from=kit.iso(today + dt.timedelta(days=1)))
    if len(upcoming) < 2 or len(upcoming) > 15 or find_events(
            world, performer=performer["name"], date_from=kit.iso(today), date_to=kit.iso(today)):
        return None
    best: list[dict[str, Any] | None] = []
    for event in upcoming:
        buyable = event["status"] == "on_sale" and quantity <= event["max_per_order"]
        best.append(cheapest_section(sections_of(world, event["event_id"]), quantity) if buyable else None)
    valid = []
    for index, section in enumerate(best):
        earlier = [s["price"] for s in best[:index] if s is not None]
        if section is not None and all(section["price"] < p for p in earlier):
            valid.append((index, min(earlier) - 1 if earlier else section["price"] + 60))
    if not valid:
        return None
    later = [v for v in valid if v[0] > 0]
    index, ceiling = rng.choice(later if later and rng.random() < 0.6 else valid)
    event, section = upcoming[index], best[index]
    assert section is not None
    budget = section["price"] + rng.randint(0, ceiling - section["price"])
    if budget // 5 * 5 >= section["price"]:
        budget = budget // 5 * 5
    if seats_left_after(world, event["event_id"], quantity) <= 0:
        return None
    user = rng.choice(buyers(world))
    phrasing, prompt = kit.phrase(
        rng, EARLIEST_UNDER_BUDGET, tickets=_party(quantity), performer=performer["name"],
        noun=NOUN[performer["category"]], budget=budget, count=quantity)
    order_id, code = next_order(world)
    bought = _purchase_checks(user["id"], event["event_id"], section, quantity, order_id)
    looked = [kit.call("get_seat_map", event_id=e["event_id"]) for e in upcoming[:index + 1] if e["status"] == "on_sale"]
    return _order_task(
        prompt, user, today, code, bought,
        [kit.call("search_events", performer=performer["name"]), *looked,
         kit.call("buy_tickets", event_id=event["event_id"], section=section["name"], quantity=quantity)],
        (f"The earliest {performer['name']} {NOUN[performer['category']]} within ${budget} per ticket "
         f"is {event['title']} on {event['date']} at {event['venue']}. Bought {_party(quantity)} in "
         f"{section['name']} at ${section['price']} each (${section['price'] * quantity} total). "
         f"Order code: {code}."),
        3 if index > 0 else 2,
        {"phrasing": phrasing, "event_id": event["event_id"], "section_id": section["id"],
         "skipped_shows": index, "budget": budget},
    )


BEST_WITHIN_BUDGET = TEXTS["BEST_WITHIN_BUDGET"]


def best_section_within_budget(rng: random.Random, world: World) -> TaskDraft | None:
    """The most expensive section whose price for the whole party fits a total budget and has the seats."""
    picked = event_and_today(rng, world)
    if picked is None:
        return None
    event, today = picked
    quantity = rng.choice([2, 2, 3, 4])
    sections = sections_of(world, event["event_id"])
    fits = [s for s in sections if s["seats_available"] >= quantity]
    if quantity > event["max_per_order"] or len(fits) < 2:
        return None
    index = rng.randrange(len(fits) - 1)
    section, pricier = fits[index], fits[index + 1]
    low, high = section["price"] * quantity, pricier["price"] * quantity - 1
    total = low + rng.randint(0, high - low)
    if total // 10 * 10 >= low:
        total = total // 10 * 10
    if seats_left_after(world, event["event_id"], quantity) <= 0:
        return None
    skipped = [s for s in sections if s["seats_available"] < quantity and section["price"] < s["price"]
               and s["price"] * quantity <= total]
    user = rng.choice(buyers(world))
    phrasing, prompt = kit.phrase(
        rng, BEST_WITHIN_BUDGET, total=total, tickets=_party(quantity), count=quantity,
        performer=event["performer"], date=event["date"], title=event["title"],
        human=kit.human_date(event["date"], weekday=True), venue=event["venue"])
    order_id, code = next_order(world)
    bought = _purchase_checks(user["id"], event["event_id"], section, quantity, order_id)
    return _order_task(
        prompt, user, today, code, bought,
        _buy_calls(event, section, quantity),
        (f"Bought {_party(quantity)} in {section['name']} (${section['price']} each, "
         f"${section['price'] * quantity} of your ${total}) for {event['title']} on {event['date']}. "
         f"Order code: {code}."),
        3 if skipped else 2,
        {"phrasing": phrasing, "event_id": event["event_id"], "section_id": section["id"], "budget": total},
    )


BUY_AND_TRANSFER = TEXTS["BUY_AND_TRANSFER"]


def buy_and_transfer(rng: random.Random, world: World) -> TaskDraft | None:
    """Two writes that depend on each other: buy N in the cheapest fitting section, then transfer K of them."""
    picked = event_and_today(rng, world)
    if picked is None:
        return None
    event, today = picked
    phrasing = rng.randrange(len(BUY_AND_TRANSFER))
    if phrasing == 2:
        quantity, give = 2, 1
    else:
        quantity = rng.choice([2, 3, 4])
        give = rng.randint(1, quantity - 1)
    section = cheapest_section(_fitting_sections(world, event, quantity), quantity)
    if section is None:
        return None
    user = rng.choice(buyers(world))
    friend = rng.choice(other_users(world, [user["id"]]))
    prompt = BUY_AND_TRANSFER[phrasing].format(
        tickets=_party(quantity), count=quantity, performer=event["performer"], date=event["date"],
        title=event["title"], human=kit.human_date(event["date"], weekday=True), give=give, friend=friend["username"],
        friend_name=friend["name"])
    order_id, code = next_order(world)
    transfer_id, transfer = next_transfer(world)
    checks, expected = _purchase_checks(user["id"], event["event_id"], section, quantity, order_id, weight=2.0)
    sent_checks, sent_expected = transfer_checks(order_id, user["id"], friend, give, transfer_id)
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, *sent_checks, kit.diff_only(expected + sent_expected),
                kit.answer_has([code, transfer], label="answer gives the order and transfer codes")],
        reference_solution=[
            *_buy_calls(event, section, quantity),
            kit.call("transfer_tickets", order_code=code, to_username=friend["username"], quantity=give),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"Bought {_party(quantity)} in {section['name']} for {event['title']} on {event['date']} "
                         f"(order {code}, ${section['price'] * quantity}) and sent {give} to {friend['name']} "
                         f"(transfer {transfer}, pending until they accept)."),
        difficulty=3,
        metadata={"phrasing": phrasing, "event_id": event["event_id"], "section_id": section["id"],
                  "friend": friend["username"]},
    )


SPLIT = TEXTS["SPLIT"]


def split_between_friends(rng: random.Random, world: World) -> TaskDraft | None:
    """Buy one order and hand out parts of it to two friends, keeping the remainder."""
    picked = event_and_today(rng, world)
    if picked is None:
        return None
    event, today = picked
    k1, k2, keep = rng.randint(1, 2), rng.randint(1, 2), rng.randint(1, 2)
    quantity = k1 + k2 + keep
    fits = _fitting_sections(world, event, quantity)
    if not fits:
        return None
    section = rng.choice(fits)
    user = rng.choice(buyers(world))
    first = rng.choice(other_users(world, [user["id"]]))
    second = rng.choice(other_users(world, [user["id"], first["id"]]))
    phrasing, prompt = kit.phrase(
        rng, SPLIT, count=quantity, section=section["name"], performer=event["performer"], date=event["date"],
        title=event["title"], human=kit.human_date(event["date"], weekday=True), k1=k1, k2=k2, keep=keep,
        f1=first["username"], f2=second["username"], f1_name=first["name"], f2_name=second["name"])
    order_id, code = next_order(world)
    checks, expected = _purchase_checks(user["id"], event["event_id"], section, quantity, order_id, weight=2.0)
    first_checks, first_expected = transfer_checks(order_id, user["id"], first, k1, 0)
    second_checks, second_expected = transfer_checks(order_id, user["id"], second, k2, 0)
    split: list[Check] = [
        first_checks[0], second_checks[0],  # the ticket checks by transfer id would depend on the call order
        has_row("tickets", {"order_id": order_id, "status": "transfer_pending"},
                f"{k1 + k2} tickets pending transfer", weight=1.0, count=k1 + k2),
        has_row("tickets", {"order_id": order_id, "status": "valid", "holder_id": user["id"]},
                f"{keep} ticket(s) kept", weight=1.0, count=keep),
    ]
    codes = [next_transfer(world, 1)[1], next_transfer(world, 2)[1]]
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, *split, kit.diff_only(expected + first_expected + second_expected),
                kit.answer_has([code], label="answer gives the order code")],
        reference_solution=[
            *_buy_calls(event, section, quantity),
            kit.call("transfer_tickets", order_code=code, to_username=first["username"], quantity=k1),
            kit.call("transfer_tickets", order_code=code, to_username=second["username"], quantity=k2),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"Bought {quantity} tickets in {section['name']} for {event['title']} on {event['date']} "
                         f"(order {code}). Sent {k1} to {first['name']} (transfer {codes[0]}) and {k2} to "
                         f"{second['name']} (transfer {codes[1]}); you keep {keep}."),
        difficulty=3,
        metadata={"phrasing": phrasing, "event_id": event["event_id"], "section_id": section["id"]},
    )


CHEAPEST_ON_DAY = TEXTS["CHEAPEST_ON_DAY"]


def buy_cheapest_relative_day(rng: random.Random, world: World) -> TaskDraft | None:
    """'The comedy show in Denver tomorrow': CURRENT_DATE fixes the day, then the cheapest fitting section."""
    group = day_group(rng, world, 1)
    if group is None:
        return None
    when, argument, today, event = group.when, group.argument, group.today, group.events[0]
    quantity = rng.choices([1, 2, 3, 4], weights=[2, 4, 2, 1])[0]
    section = cheapest_section(_fitting_sections(world, event, quantity), quantity)
    if event["status"] != "on_sale" or section is None:
        return None
    user = rng.choice(buyers(world))
    phrasing, prompt = kit.phrase(
        rng, CHEAPEST_ON_DAY, tickets=_party(quantity), count=quantity, kind=KIND[group.category],
        city=group.city, when=when, When=when[0].upper() + when[1:],
        tickets_words="a ticket" if quantity == 1 else f"{NUMBER_WORDS[quantity]} tickets")
    order_id, code = next_order(world)
    bought = _purchase_checks(user["id"], event["event_id"], section, quantity, order_id)
    return _order_task(
        prompt, user, today, code, bought,
        _buy_calls(event, section, quantity,
                   kit.call("search_events", city=group.city, category=group.category, date=argument)),
        (f"{event['title']} is at {event['venue']} on {event['date']} at {event['start_time']}. "
         f"Bought {_party(quantity)} in {section['name']} at ${section['price']} each. Order code: {code}."),
        2,
        {"phrasing": phrasing, "when": when, "event_id": event["event_id"], "section_id": section["id"]},
    )
