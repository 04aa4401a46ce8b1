"""Tickets tools over my orders: list and read them, payment methods, transfers to other people, and
refunds of cancelled events."""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.tickets.rules import transfer_code
from toolgym.envs.apps.tickets.tool_common import (
    MAX_ROWS,
    ORDER_ROW,
    TRANSFER_ROW,
    current_user,
    find_transfer,
    my_order,
    seat_labels,
    today_iso,
    user_ref,
)
from toolgym.envs.kit.payments import listed_payment_methods


@tool
def list_my_ticket_orders(ctx: ToolContext, upcoming_only: bool = False) -> dict:
    """List the logged-in user's ticket orders, soonest event first, with event status and tickets held.

    Args:
        upcoming_only: True to show only confirmed (not refunded) orders for events from today on.
    """
    me = current_user(ctx)
    today = today_iso(ctx)
    if upcoming_only:
        rows = ctx.query(f"{ORDER_ROW} WHERE o.user_id=? AND e.date>=? AND o.status='confirmed' "
                         "ORDER BY e.date, e.start_time, o.id", (me["id"], today))
    else:
        rows = ctx.query(f"{ORDER_ROW} WHERE o.user_id=? ORDER BY e.date, e.start_time, o.id", (me["id"],))
    orders = [{k: v for k, v in r.items() if k != "id"} for r in rows[:MAX_ROWS]]
    return {"today": today, "orders": orders, "total_found": len(rows)}


@tool
def get_ticket_order(ctx: ToolContext, order_code: str) -> dict:
    """Show one of the logged-in user's orders: event, section, every seat with its holder, and its transfers.

    Args:
        order_code: The order code, e.g. 'TK-4F7QK2'.
    """
    me = current_user(ctx)
    order = my_order(ctx, me["id"], order_code)
    view = ctx.one(f"{ORDER_ROW} WHERE o.id=?", (order["id"],))
    assert view is not None
    tickets = ctx.query(
        "SELECT t.row_number, t.seat_number, u.username AS holder, t.status FROM tickets t "
        "JOIN users u ON u.id = t.holder_id WHERE t.order_id=? ORDER BY t.id", (order["id"],))
    transfers = ctx.query(
        "SELECT x.code AS transfer_code, u.username AS to_username, u.name AS to_name, x.ticket_count, x.status, "
        "x.created_on FROM transfers x JOIN users u ON u.id = x.to_user_id WHERE x.order_id=? ORDER BY x.id",
        (order["id"],))
    return {
        **{k: v for k, v in view.items() if k != "id"},
        "tickets": [{"seat": f"row {t['row_number']} seat {t['seat_number']}", "holder": t["holder"],
                     "status": t["status"]} for t in tickets],
        "transfers": transfers,
    }


@tool
def list_my_ticket_payment_methods(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the logged-in user's payment methods; purchases use the default one unless told otherwise."""
    return listed_payment_methods(ctx, ("user_id", current_user(ctx)["id"]))


@tool
def transfer_tickets(ctx: ToolContext, order_code: str, to_username: str, quantity: int) -> dict:
    """Send tickets from one of your orders to another user; they stay pending until the recipient accepts.

    Args:
        order_code: The order the tickets come from, e.g. 'TK-4F7QK2'.
        to_username: The recipient's username, e.g. 'jane.doe'.
        quantity: How many of the order's tickets you still hold to send (at least 1).
    """
    me = current_user(ctx)
    order = my_order(ctx, me["id"], order_code)
    if quantity < 1:
        raise ToolError(f"argument 'quantity' must be at least 1; got {quantity}")
    label = f"{order['title']} on {order['date']}"
    today = today_iso(ctx)
    if order["status"] == "refunded":
        raise ToolError(f"order {order['code']} was refunded; its tickets are void")
    if order["event_status"] == "cancelled":
        raise ToolError(f"{label} is cancelled; its tickets cannot be transferred (request a refund instead)")
    if order["date"] < today:
        raise ToolError(f"{label} is in the past (today is {today}); its tickets cannot be transferred")
    recipient = user_ref(ctx, "to_username", to_username)
    if recipient["id"] == me["id"]:
        raise ToolError("argument 'to_username': that is you; tickets can only be sent to another user")
    held = ctx.query("SELECT id, row_number, seat_number FROM tickets WHERE order_id=? AND holder_id=? "
                     "AND status='valid' ORDER BY id", (order["id"], me["id"]))
    if len(held) < quantity:
        raise ToolError(f"argument 'quantity': order {order['code']} has {len(held)} ticket(s) you can still send "
                        f"(the others are pending transfer or already transferred); {quantity} requested")
    rowid = kit.next_id(ctx, "transfers")
    code = transfer_code(rowid)
    ctx.db.execute(
        "INSERT INTO transfers(id, code, order_id, from_user_id, to_user_id, ticket_count, status, created_on) "
        "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)", (rowid, code, order["id"], me["id"], recipient["id"], quantity, today))
    moving = held[:quantity]
    ctx.db.executemany("UPDATE tickets SET status='transfer_pending', transfer_id=? WHERE id=?",
                       [(rowid, t["id"]) for t in moving])
    return {
        "transfer_code": code, "status": "pending", "order_code": order["code"], "to_username": recipient["username"],
        "to_name": recipient["name"], "ticket_count": quantity, "seats": seat_labels(moving), "title": order["title"],
        "date": order["date"],
    }


@tool
def list_my_ticket_transfers(
    ctx: ToolContext, direction: Literal["all", "sent", "received"] = "all",
    status: Literal["pending", "accepted", "cancelled"] | None = None,
) -> dict:
    """List ticket transfers the logged-in user sent or received, newest first.

    Args:
        direction: 'sent', 'received' or 'all'.
        status: Only transfers in this state: 'pending', 'accepted' or 'cancelled'.
    """
    me = current_user(ctx)
    who = {"sent": "x.from_user_id=?", "received": "x.to_user_id=?"}.get(direction, "(x.from_user_id=? OR x.to_user_id=?)")
    params: list[Any] = [me["id"]] if direction != "all" else [me["id"], me["id"]]
    where = who
    if status is not None:
        where += " AND x.status=?"
        params.append(status)
    rows = ctx.query(f"{TRANSFER_ROW} WHERE {where} ORDER BY x.created_on DESC, x.id DESC", params)
    hidden = ("id", "from_user_id", "to_user_id", "event_id")
    transfers = [{"direction": "sent" if r["from_user_id"] == me["id"] else "received",
                  **{k: v for k, v in r.items() if k not in hidden}} for r in rows[:MAX_ROWS]]
    return {"transfers": transfers, "total_found": len(rows)}


def _pending_transfer(ctx: ToolContext, transfer_code: str, party: str, verb: str, not_yours: str
                      ) -> tuple[dict, dict]:
    """The logged-in user and their pending transfer (`party` names their side of it), or a ToolError."""
    me = current_user(ctx)
    transfer = find_transfer(ctx, transfer_code)
    if transfer is None or transfer[party] != me["id"]:
        raise ToolError(not_yours)
    if transfer["status"] != "pending":
        raise ToolError(f"transfer {transfer['transfer_code']} is already {transfer['status']}; "
                        f"only pending transfers can be {verb}")
    return me, transfer


@tool
def accept_ticket_transfer(ctx: ToolContext, transfer_code: str) -> dict:
    """Accept a pending transfer sent to the logged-in user: its tickets become yours.

    Args:
        transfer_code: The transfer code, e.g. 'TR-8XM3PA' (see list_my_ticket_transfers).
    """
    me, transfer = _pending_transfer(
        ctx, transfer_code, "to_user_id", "accepted",
        f"argument 'transfer_code': no transfer {transfer_code!r} was sent to you; "
        "see list_my_ticket_transfers(direction='received')")
    today = today_iso(ctx)
    if transfer["event_status"] == "cancelled":
        raise ToolError(f"{transfer['title']} on {transfer['date']} is cancelled; its tickets cannot be accepted")
    if transfer["date"] < today:
        raise ToolError(f"{transfer['title']} on {transfer['date']} is in the past; the transfer can no longer be accepted")
    ctx.db.execute("UPDATE transfers SET status='accepted', responded_on=? WHERE id=?", (today, transfer["id"]))
    ctx.db.execute("UPDATE tickets SET holder_id=?, status='valid' WHERE transfer_id=?", (me["id"], transfer["id"]))
    seats = ctx.query("SELECT row_number, seat_number FROM tickets WHERE transfer_id=? ORDER BY id", (transfer["id"],))
    return {
        "transfer_code": transfer["transfer_code"], "status": "accepted", "from_username": transfer["from_username"],
        "title": transfer["title"], "date": transfer["date"], "venue": transfer["venue"],
        "ticket_count": transfer["ticket_count"], "seats": seat_labels(seats),
    }


@tool
def cancel_ticket_transfer(ctx: ToolContext, transfer_code: str) -> dict:
    """Cancel a pending transfer the logged-in user sent; its tickets come back to you.

    Args:
        transfer_code: The transfer code, e.g. 'TR-8XM3PA' (see list_my_ticket_transfers).
    """
    _, transfer = _pending_transfer(
        ctx, transfer_code, "from_user_id", "cancelled",
        f"argument 'transfer_code': you sent no transfer {transfer_code!r}; "
        "see list_my_ticket_transfers(direction='sent')")
    today = today_iso(ctx)
    ctx.db.execute("UPDATE transfers SET status='cancelled', responded_on=? WHERE id=?", (today, transfer["id"]))
    ctx.db.execute("UPDATE tickets SET status='valid', transfer_id=NULL WHERE transfer_id=?", (transfer["id"],))
    return {
        "transfer_code": transfer["transfer_code"], "status": "cancelled", "to_username": transfer["to_username"],
        "title": transfer["title"], "date": transfer["date"], "tickets_returned": transfer["ticket_count"],
    }


@tool
def request_ticket_refund(ctx: ToolContext, order_code: str) -> dict:
    """Refund a whole order of the logged-in user; only orders for cancelled events can be refunded.

    Args:
        order_code: The order code, e.g. 'TK-4F7QK2'.
    """
    me = current_user(ctx)
    order = my_order(ctx, me["id"], order_code)
    label = f"{order['title']} on {order['date']}"
    if order["status"] == "refunded":
        raise ToolError(f"order {order['code']} was already refunded on {order['refunded_on']}")
    if order["event_status"] != "cancelled":
        state = "sold out" if order["event_status"] == "sold_out" else "still on"
        raise ToolError(f"order {order['code']} cannot be refunded: {label} is {state}, not cancelled; "
                        "only orders for cancelled events can be refunded")
    pending = ctx.one("SELECT code FROM transfers WHERE order_id=? AND status='pending' ORDER BY id LIMIT 1",
                      (order["id"],))
    if pending is not None:
        raise ToolError(f"order {order['code']} has a pending transfer {pending['code']}; cancel it first")
    today = today_iso(ctx)
    ctx.db.execute("UPDATE orders SET status='refunded', refunded_on=? WHERE id=?", (today, order["id"]))
    ctx.db.execute("UPDATE tickets SET status='refunded' WHERE order_id=?", (order["id"],))
    card = ctx.one("SELECT kind, last4 FROM payment_methods WHERE id=?", (order["payment_method_id"],))
    assert card is not None
    return {
        "order_code": order["code"], "status": "refunded", "title": order["title"], "date": order["date"],
        "refund_amount": order["total_price"], "refunded_to": f"{card['kind']} ending {card['last4']}",
    }
