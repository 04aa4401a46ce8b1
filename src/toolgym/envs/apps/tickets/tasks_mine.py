"""Task families about the logged-in user's own orders and transfers: accept, take back, refund."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
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


@dataclass(frozen=True)
class TransferMove:
    """One way a pending transfer ends: the recipient accepts it, or the sender takes it back."""

    templates: str  # the texts key of the prompt templates
    status: str  # the transfer's new status
    user: str  # whose account the task runs in: "to" or "from"
    direction: str  # list_my_ticket_transfers direction
    tool: str
    tickets_by: tuple[str, str]  # the ticket column that finds the moved tickets, and the transfer's value for it
    ticket_fields: tuple[str, ...]
    tickets_label: str
    answer: str  # a str.format template of the expected answer


ACCEPT = TransferMove("ACCEPT", "accepted", "to", "received", "accept_ticket_transfer", ("transfer_id", "id"),
                      ("holder_id", "status"), "the tickets now belong to the user",
                      "Accepted transfer {code} from {from_name}: {tickets} for {title} on {date} {are} now yours.")
CANCEL_TRANSFER = TransferMove(
    "CANCEL_TRANSFER", "cancelled", "from", "sent", "cancel_ticket_transfer", ("order_id", "order_id"), ("status", "transfer_id"),
    "the tickets are back with the user",
    "Cancelled transfer {code} to {to_name}; the {tickets} for {title} on {date} {are} back in your account.")


def _end_transfer(rng: random.Random, world: World, move: TransferMove) -> TaskDraft | None:
    """A pending transfer, the only one between its two people, ended as `move` says by the one it names."""
    picked = _pending_transfer(rng, world)
    if picked is None:
        return None
    transfer, today = picked
    between = world.query("SELECT id FROM transfers WHERE to_user_id=? AND from_user_id=? AND status='pending' "
                          "ORDER BY id", (transfer["to_user_id"], transfer["from_user_id"]))
    if len(between) != 1:
        return None
    holder = transfer[f"{move.user}_user_id"]
    column, value = move.tickets_by[0], transfer[move.tickets_by[1]]
    held = world.one(f"SELECT COUNT(*) AS n FROM tickets WHERE {column}=? AND holder_id=? AND status='valid'",
                     (value, holder))
    assert held is not None
    tickets = kit.plural(transfer["ticket_count"], "ticket")
    phrasing, prompt = kit.phrase(
        rng, TEXTS[move.templates], sender=transfer["from_name"], sender_first=_first(transfer["from_name"]),
        recipient=transfer["to_name"], recipient_first=_first(transfer["to_name"]), performer=transfer["performer"],
        tickets=tickets, title=transfer["title"], date=transfer["date"])
    checks: list[Check] = [
        field_is("transfers", {"id": transfer["id"]},
                 "status", move.status, f"transfer {transfer['code']} {move.status}", weight=3.0),
        has_row("tickets", {column: value, "holder_id": holder, "status": "valid"}, move.tickets_label, weight=1.0, count=held["n"] + transfer["ticket_count"]),
    ]
    expected = [
        updated("transfers", {"id": transfer["id"]}, ["status", "responded_on"]),
        updated("tickets", {column: value}, list(move.ticket_fields)),
    ]
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected), kit.answer_has([transfer["code"]], label="answer names the transfer")],
        reference_solution=[kit.call("list_my_ticket_transfers", direction=move.direction, status="pending"),
                            kit.call(move.tool, transfer_code=transfer["code"])],
        env_variables=kit.env_for(kit.user_by_id(world, holder), today),
        expected_answer=move.answer.format(**transfer, tickets=tickets, are=_are(transfer["ticket_count"])),
        difficulty=2,
        metadata={"phrasing": phrasing, "transfer_id": transfer["id"]},
    )


def accept_transfer(rng: random.Random, world: World) -> TaskDraft | None:
    """Find the pending transfer a named friend sent the user and accept it: the tickets change holder."""
    return _end_transfer(rng, world, ACCEPT)


def cancel_sent_transfer(rng: random.Random, world: World) -> TaskDraft | None:
    """Find the user's pending transfer to a named person and cancel it: the tickets come back."""
    return _end_transfer(rng, world, CANCEL_TRANSFER)


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
