"""Task families about the logged-in user's own orders and transfers: accept, take back, refund."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.tickets.task_common import NOUN
from toolgym.envs.kit.row_checks import field_is, has_row, updated
from toolgym.schema import Check

TEXTS = kit.module_texts(__file__)

TRANSFER_ROWS = (
    "SELECT x.*, e.id AS event_id, e.title, e.date, e.status AS event_status, p.name AS performer, "
    "p.category, fu.name AS from_name, tu.name AS to_name FROM transfers x JOIN orders o ON o.id = x.order_id "
    "JOIN events e ON e.id = o.event_id JOIN performers p ON p.id = e.performer_id "
    "JOIN users fu ON fu.id = x.from_user_id JOIN users tu ON tu.id = x.to_user_id"
)


def _pending_transfer(rng: random.Random, world: World) -> tuple[dict[str, Any], dt.date] | None:
    transfer = rng.choice(world.query(f"{TRANSFER_ROWS} WHERE x.status='pending' AND e.status != 'cancelled' "
                                     "ORDER BY x.id"))
    today = kit.day_in_window(rng, kit.day_of(transfer["created_on"]),
                              kit.day_of(transfer["date"]) - dt.timedelta(days=1))
    return (transfer, today) if today is not None else None


def _first(name: str) -> str:
    return name.split()[0]


def _are(count: int) -> str:
    return "is" if count == 1 else "are"


ACCEPT = TEXTS["ACCEPT"]


def accept_transfer(rng: random.Random, world: World) -> TaskDraft | None:
    """Find the pending transfer a named friend sent the user and accept it: the tickets change holder."""
    picked = _pending_transfer(rng, world)
    if picked is None:
        return None
    transfer, today = picked
    from_sender = world.query("SELECT id FROM transfers WHERE to_user_id=? AND from_user_id=? AND status='pending' "
                              "ORDER BY id", (transfer["to_user_id"], transfer["from_user_id"]))
    if len(from_sender) != 1:
        return None
    phrasing, prompt = kit.phrase(
        rng, ACCEPT, sender=transfer["from_name"], sender_first=_first(transfer["from_name"]),
        performer=transfer["performer"], tickets=kit.plural(transfer["ticket_count"], "ticket"),
        title=transfer["title"], date=transfer["date"])
    checks: list[Check] = [
        field_is("transfers", {"id": transfer["id"]},
                "status", "accepted", f"transfer {transfer['code']} accepted", weight=3.0),
        has_row("tickets", {"transfer_id": transfer["id"], "holder_id": transfer["to_user_id"], "status": "valid"},
                "the tickets now belong to the user", weight=1.0, count=transfer["ticket_count"]),
    ]
    expected = [
        updated("transfers", {"id": transfer["id"]}, ["status", "responded_on"]),
        updated("tickets", {"transfer_id": transfer["id"]}, ["holder_id", "status"]),
    ]
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected), kit.answer_has([transfer["code"]], label="answer names the transfer")],
        reference_solution=[kit.call("list_my_ticket_transfers", direction="received", status="pending"),
                            kit.call("accept_ticket_transfer", transfer_code=transfer["code"])],
        env_variables=kit.env_for(kit.user_by_id(world, transfer["to_user_id"]), today),
        expected_answer=(f"Accepted transfer {transfer['code']} from {transfer['from_name']}: "
                         f"{kit.plural(transfer['ticket_count'], 'ticket')} for {transfer['title']} on {transfer['date']} "
                         f"{_are(transfer['ticket_count'])} now yours."),
        difficulty=2,
        metadata={"phrasing": phrasing, "transfer_id": transfer["id"]},
    )


CANCEL_TRANSFER = TEXTS["CANCEL_TRANSFER"]


def cancel_sent_transfer(rng: random.Random, world: World) -> TaskDraft | None:
    """Find the user's pending transfer to a named person and cancel it: the tickets come back."""
    picked = _pending_transfer(rng, world)
    if picked is None:
        return None
    transfer, today = picked
    to_recipient = world.query("SELECT id FROM transfers WHERE from_user_id=? AND to_user_id=? AND status='pending' "
                               "ORDER BY id", (transfer["from_user_id"], transfer["to_user_id"]))
    if len(to_recipient) != 1:
        return None
    held = world.one("SELECT COUNT(*) AS n FROM tickets WHERE order_id=? AND holder_id=? AND status='valid'",
                     (transfer["order_id"], transfer["from_user_id"]))
    assert held is not None
    phrasing, prompt = kit.phrase(
        rng, CANCEL_TRANSFER, recipient=transfer["to_name"], recipient_first=_first(transfer["to_name"]),
        performer=transfer["performer"], date=transfer["date"], title=transfer["title"],
        tickets=kit.plural(transfer["ticket_count"], "ticket"))
    checks: list[Check] = [
        field_is("transfers", {"id": transfer["id"]},
                "status", "cancelled", f"transfer {transfer['code']} cancelled", weight=3.0),
        has_row("tickets", {"order_id": transfer["order_id"], "holder_id": transfer["from_user_id"], "status": "valid"},
                "the tickets are back with the user", weight=1.0, count=held["n"] + transfer["ticket_count"]),
    ]
    expected = [
        updated("transfers", {"id": transfer["id"]}, ["status", "responded_on"]),
        updated("tickets", {"order_id": transfer["order_id"]}, ["status", "transfer_id"]),
    ]
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected), kit.answer_has([transfer["code"]], label="answer names the transfer")],
        reference_solution=[kit.call("list_my_ticket_transfers", direction="sent", status="pending"),
                            kit.call("cancel_ticket_transfer", transfer_code=transfer["code"])],
        env_variables=kit.env_for(kit.user_by_id(world, transfer["from_user_id"]), today),
        expected_answer=(f"Cancelled transfer {transfer['code']} to {transfer['to_name']}; the "
                         f"{kit.plural(transfer['ticket_count'], 'ticket')} for {transfer['title']} on {transfer['date']} "
                         f"{_are(transfer['ticket_count'])} back in your account."),
        difficulty=2,
        metadata={"phrasing": phrasing, "transfer_id": transfer["id"]},
    )


ORDER_ROWS = (
    "SELECT o.*, e.title, e.date, e.status AS event_status, p.name AS performer, p.category, v.name AS venue, "
    "v.city FROM orders o JOIN events e ON e.id = o.event_id JOIN performers p ON p.id = e.performer_id "
    "JOIN venues v ON v.id = e.venue_id"
)


def pick_order(
    rng: random.Random, world: World, where: str, before_event: bool = False
) -> tuple[dict[str, Any], dt.date] | None:
    """A confirmed order matching `where`, the user's only one for that event, and a CURRENT_DATE after it was
    placed (and, with `before_event`, before the event)."""
    order = rng.choice(world.query(f"{ORDER_ROWS} WHERE o.status='confirmed' AND {where} ORDER BY o.id"))
    same_event = world.query("SELECT id FROM orders WHERE user_id=? AND event_id=? ORDER BY id",
                             (order["user_id"], order["event_id"]))
    if len(same_event) != 1:
        return None
    low = max(kit.FIRST_DAY, kit.day_of(order["ordered_on"]) + dt.timedelta(days=1))
    high = low + dt.timedelta(days=60)
    if before_event:
        high = min(high, kit.day_of(order["date"]) - dt.timedelta(days=1))
    today = kit.day_in_window(rng, low, high)
    return None if today is None else (order, today)


REFUND = TEXTS["REFUND"]


def refund_cancelled_event(rng: random.Random, world: World) -> TaskDraft | None:
    """Find the order for the cancelled show and refund it: the order and all its tickets change status."""
    picked = pick_order(rng, world, "e.status='cancelled' AND NOT EXISTS (SELECT 1 FROM transfers x "
                                    "WHERE x.order_id = o.id AND x.status='pending')")
    if picked is None:
        return None
    order, today = picked
    phrasing, prompt = kit.phrase(
        rng, REFUND, performer=order["performer"], noun=NOUN[order["category"]], date=order["date"],
        title=order["title"], venue=order["venue"], city=order["city"],
        human=kit.human_date(order["date"], weekday=True), code=order["code"],
        tickets=kit.plural(order["quantity"], "ticket"))
    lookup = (kit.call("get_ticket_order", order_code=order["code"]) if phrasing == len(REFUND) - 1
              else kit.call("list_my_ticket_orders"))
    checks: list[Check] = [
        field_is("orders", {"id": order["id"]}, "status", "refunded", f"order {order['code']} refunded", weight=3.0),
        has_row("tickets", {"order_id": order["id"], "status": "refunded"},
                "the order's tickets are void", weight=1.0, count=order["quantity"]),
    ]
    expected = [
        updated("orders", {"id": order["id"]}, ["status", "refunded_on"]),
        updated("tickets", {"order_id": order["id"]}, ["status"]),
    ]
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected),
                kit.answer_has([order["code"], str(order["total_price"])], label="answer gives the order and amount")],
        reference_solution=[lookup, kit.call("request_ticket_refund", order_code=order["code"])],
        env_variables=kit.env_for(kit.user_by_id(world, order["user_id"]), today),
        expected_answer=(f"Order {order['code']} for {order['title']} on {order['date']} is refunded: "
                         f"${order['total_price']} goes back to your card."),
        difficulty=2,
        metadata={"phrasing": phrasing, "order_id": order["id"]},
    )
