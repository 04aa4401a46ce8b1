"""Tools of the tickets app: find events and seats, buy tickets, transfer them, refund cancelled shows.

Every rule an order must follow is checked here and broken rules come back as a ToolError saying what
was wrong and what is allowed. "My" means the LOGGED_IN_USER; dates go through the task's
CURRENT_DATE, so "tomorrow" and "this Saturday" work and nothing reads the wall clock. Names are
specific ("get_ticket_order", not "get_order") so the app composes with others in one environment.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from toolgym.envs import ToolContext, ToolError, tool
from toolgym.envs.apps.tickets.rules import (
    CATEGORIES,
    EVENT_COLUMNS,
    EVENT_JOINS,
    event_sections,
    find_events,
    next_seats,
    normalize_code,
    order_code,
    transfer_code,
)

MAX_EVENTS = 20
MAX_ROWS = 25
Category = Literal["concert", "sports", "theater", "comedy", "family"]


# ---------------------------------------------------------------- shared validation


def _date_arg(ctx: ToolContext, name: str, text: str) -> str:
    """A date argument resolved against CURRENT_DATE; the error names the argument."""
    try:
        return ctx.env.date(text)
    except ToolError as exc:
        raise ToolError(f"argument '{name}': {exc}") from None


def _me(ctx: ToolContext) -> dict[str, Any]:
    username = ctx.env.require_user()
    row = ctx.one("SELECT id, username, name FROM users WHERE username=?", (username,))
    if row is None:
        raise ToolError(f"the logged-in user {username!r} has no account in the tickets app")
    return row


def _today(ctx: ToolContext) -> str:
    return ctx.env.today.isoformat()


def _city(ctx: ToolContext, text: str) -> str:
    wanted = " ".join(text.split())
    row = ctx.one("SELECT city FROM venues WHERE lower(city)=lower(?) LIMIT 1", (wanted,))
    if row is None:
        known = ", ".join(r["city"] for r in ctx.query("SELECT DISTINCT city FROM venues ORDER BY city"))
        raise ToolError(f"argument 'city': no venues in {text!r}; cities with events: {known}")
    return str(row["city"])


def _event(ctx: ToolContext, event_id: int) -> dict[str, Any]:
    row = ctx.one(
        f"SELECT {EVENT_COLUMNS}, v.address, v.kind AS venue_kind, v.capacity AS venue_capacity, p.genre "
        f"{EVENT_JOINS} WHERE e.id=?", (event_id,))
    if row is None:
        raise ToolError(f"argument 'event_id': no event with id {event_id}; use search_events to find one")
    return row


def _event_view(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    view = {k: row[k] for k in ("event_id", "title", "performer", "category", "date", "start_time", "venue", "city",
                                "status")}
    if row["status"] == "cancelled":
        view["min_price"] = None
    else:
        view["min_price"] = row["min_price"]
        view["seats_available"] = row["seats_available"]
    if row["date"] < _today(ctx):
        view["past"] = True
    return view


def _user_ref(ctx: ToolContext, name: str, text: str) -> dict[str, Any]:
    """A user by username, email or exact full name (case-insensitive)."""
    wanted = " ".join(text.split()).lstrip("@")
    row = ctx.one("SELECT id, username, name FROM users WHERE lower(username)=lower(?) OR lower(email)=lower(?)",
                  (wanted, wanted))
    if row is not None:
        return row
    named = ctx.query("SELECT id, username, name FROM users WHERE lower(name)=lower(?) ORDER BY id", (wanted,))
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        options = ", ".join(r["username"] for r in named)
        raise ToolError(f"argument '{name}': several users are called {text!r} ({options}); give the username")
    raise ToolError(f"argument '{name}': no user {text!r}; give the recipient's username, e.g. 'jane.doe'")


def _my_order(ctx: ToolContext, user_id: int, code: str) -> dict[str, Any]:
    row = ctx.one(
        "SELECT o.*, e.title, e.date, e.start_time, e.status AS event_status, v.name AS venue, v.city, "
        "s.name AS section FROM orders o JOIN events e ON e.id = o.event_id JOIN venues v ON v.id = e.venue_id "
        "JOIN sections s ON s.id = o.section_id WHERE o.code=? AND o.user_id=?", (normalize_code(code), user_id))
    if row is None:
        raise ToolError(f"argument 'order_code': you have no order with code {code!r}; see list_my_ticket_orders")
    return row


def _payment_method(ctx: ToolContext, user_id: int, payment_method_id: int | None) -> dict[str, Any]:
    """The named card (must be the user's and unexpired) or the user's default one."""
    if payment_method_id is None:
        row = ctx.one("SELECT * FROM payment_methods WHERE user_id=? AND is_default=1 ORDER BY id LIMIT 1", (user_id,))
        if row is None:
            raise ToolError("you have no default payment method; name a payment_method_id "
                            "(see list_my_ticket_payment_methods)")
    else:
        row = ctx.one("SELECT * FROM payment_methods WHERE id=? AND user_id=?", (payment_method_id, user_id))
        if row is None:
            raise ToolError(f"argument 'payment_method_id': no payment method {payment_method_id} belongs to you; "
                            "see list_my_ticket_payment_methods")
    if row["expires"] < _today(ctx)[:7]:
        raise ToolError(f"payment method {row['id']} ({row['kind']} ending {row['last4']}) expired in {row['expires']}")
    return row


def _next_id(ctx: ToolContext, table: str) -> int:
    return int(ctx.one(f"SELECT COALESCE(MAX(id), 0) + 1 AS n FROM {table}")["n"])  # type: ignore[index]


def _seats(rows: list[dict[str, Any]]) -> list[str]:
    return [f"row {r['row_number']} seat {r['seat_number']}" for r in rows]


# ---------------------------------------------------------------- events and seats


@tool
def list_venues(ctx: ToolContext, city: str | None = None) -> list[dict[str, Any]]:
    """List the venues (all, or those of one city) with their kind, address and capacity.

    Args:
        city: Only venues in this city, e.g. 'Chicago'.
    """
    if city is None:
        return ctx.query("SELECT name AS venue, kind, city, state, address, capacity FROM venues ORDER BY city, name")
    return ctx.query("SELECT name AS venue, kind, city, state, address, capacity FROM venues WHERE city=? "
                     "ORDER BY name", (_city(ctx, city),))


@tool
def search_events(
    ctx: ToolContext, city: str | None = None, category: Category | None = None, date: str | None = None,
    end_date: str | None = None, performer: str | None = None,
) -> dict:
    """Find events, soonest first, with their cheapest available ticket price and seats left.

    With no dates, only events from today on are listed; with `date` alone, only that day; with
    `date` and `end_date`, every day from one to the other.

    Args:
        city: City of the venue, e.g. 'Austin'.
        category: One of 'concert', 'sports', 'theater', 'comedy', 'family'.
        date: A day (YYYY-MM-DD, 'today', 'tomorrow', 'Saturday', 'next Friday'), or the first day of a range.
        end_date: Last day of a date range (inclusive).
        performer: Part of a performer's, team's or show's name, e.g. 'Mara Quinn'.
    """
    today = _today(ctx)
    place = _city(ctx, city) if city is not None else None
    start = _date_arg(ctx, "date", date) if date is not None else None
    end = _date_arg(ctx, "end_date", end_date) if end_date is not None else None
    if start is not None and end is not None and end < start:
        raise ToolError(f"argument 'end_date' ({end}) is before 'date' ({start})")
    if start is None:
        date_from, date_to = today, end
    else:
        date_from, date_to = start, end if end is not None else start
    if performer is not None and not performer.strip():
        raise ToolError("argument 'performer' is empty; give part of a name or leave it out")
    rows = find_events(ctx, city=place, category=category, date_from=date_from, date_to=date_to, performer=performer)
    result: dict[str, Any] = {
        "today": today, "from": date_from, "to": date_to or "any later date",
        "events": [_event_view(ctx, r) for r in rows[:MAX_EVENTS]], "total_found": len(rows),
    }
    if len(rows) > MAX_EVENTS:
        result["note"] = f"showing the first {MAX_EVENTS}; narrow the search with a city, category or dates"
    if not rows:
        result["note"] = "no events match these filters"
    return result


@tool
def get_event_details(ctx: ToolContext, event_id: int) -> dict:
    """Show one event: performer, venue and address, date and time, status, price range, ticket limit.

    Args:
        event_id: The event_id from search_events.
    """
    row = _event(ctx, event_id)
    prices = ctx.one("SELECT MIN(price) AS lo, MAX(price) AS hi, COUNT(*) AS n FROM sections WHERE event_id=?",
                     (event_id,))
    assert prices is not None
    today = _today(ctx)
    return {
        **_event_view(ctx, row), "genre": row["genre"], "venue_kind": row["venue_kind"], "address": row["address"],
        "venue_capacity": row["venue_capacity"], "max_per_order": row["max_per_order"],
        "price_range": {"min": prices["lo"], "max": prices["hi"]}, "sections": prices["n"],
        "can_buy": row["status"] == "on_sale" and row["date"] >= today,
    }


@tool
def get_seat_map(ctx: ToolContext, event_id: int) -> dict:
    """Show an event's sections, cheapest first: price tier, price per ticket, rows, seats available.

    Args:
        event_id: The event_id from search_events.
    """
    row = _event(ctx, event_id)
    sections = [
        {"section": s["name"], "price_tier": s["price_tier"], "price": s["price"], "rows": f"1-{s['row_count']}",
         "seats_per_row": s["seats_per_row"], "seats_available": s["seats_available"]}
        for s in event_sections(ctx, event_id)
    ]
    result = {k: row[k] for k in ("event_id", "title", "date", "start_time", "venue", "city", "status",
                                  "max_per_order")}
    if row["date"] < _today(ctx):
        result["past"] = True
    result["sections"] = sections
    return result


@tool
def buy_tickets(
    ctx: ToolContext, event_id: int, section: str, quantity: int, payment_method_id: int | None = None
) -> dict:
    """Buy tickets in one section of an event for the logged-in user; returns the order code and seats.

    Args:
        event_id: The event_id from search_events.
        section: Section name exactly as get_seat_map shows it, e.g. 'Orchestra'.
        quantity: Number of tickets (at least 1, at most the event's max_per_order).
        payment_method_id: One of your payment methods; default: your default payment method.
    """
    me = _me(ctx)
    if quantity < 1:
        raise ToolError(f"argument 'quantity' must be at least 1; got {quantity}")
    event = _event(ctx, event_id)
    today = _today(ctx)
    label = f"{event['title']} on {event['date']}"
    if event["date"] < today:
        raise ToolError(f"{label} is in the past (today is {today}); only upcoming events can be bought")
    if event["status"] == "cancelled":
        raise ToolError(f"{label} is cancelled; no tickets are sold for it")
    if event["status"] == "sold_out":
        raise ToolError(f"{label} is sold out")
    if quantity > event["max_per_order"]:
        raise ToolError(f"argument 'quantity': at most {event['max_per_order']} tickets per order for {label}; "
                        f"got {quantity}")
    wanted = " ".join(section.split())
    seat_section = ctx.one("SELECT * FROM sections WHERE event_id=? AND lower(name)=lower(?)", (event_id, wanted))
    if seat_section is None:
        names = ", ".join(s["name"] for s in event_sections(ctx, event_id))
        raise ToolError(f"argument 'section': {label} has no section {section!r}; its sections: {names}")
    if seat_section["seats_available"] < quantity:
        left = seat_section["seats_available"]
        state = "is sold out" if left == 0 else f"has only {left} seat(s) left"
        raise ToolError(f"section {seat_section['name']} of {label} {state}; {quantity} requested")
    card = _payment_method(ctx, me["id"], payment_method_id)
    rowid = _next_id(ctx, "orders")
    code = order_code(rowid)
    total = seat_section["price"] * quantity
    ctx.db.execute(
        "INSERT INTO orders(id, code, user_id, event_id, section_id, quantity, unit_price, total_price, "
        "payment_method_id, status, ordered_on) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'confirmed', ?)",
        (rowid, code, me["id"], event_id, seat_section["id"], quantity, seat_section["price"], total, card["id"], today),
    )
    seats = next_seats(seat_section, quantity)
    ctx.db.executemany(
        "INSERT INTO tickets(order_id, section_id, row_number, seat_number, holder_id, status) "
        "VALUES (?, ?, ?, ?, ?, 'valid')", [(rowid, seat_section["id"], r, s, me["id"]) for r, s in seats])
    ctx.db.execute("UPDATE sections SET seats_available = seats_available - ? WHERE id=?",
                   (quantity, seat_section["id"]))
    left = ctx.one("SELECT SUM(seats_available) AS n FROM sections WHERE event_id=?", (event_id,))
    if left is not None and left["n"] == 0:
        ctx.db.execute("UPDATE events SET status='sold_out' WHERE id=?", (event_id,))
    return {
        "order_code": code, "status": "confirmed", "event_id": event_id, "title": event["title"],
        "date": event["date"], "start_time": event["start_time"], "venue": event["venue"],
        "section": seat_section["name"], "quantity": quantity, "unit_price": seat_section["price"],
        "total_price": total, "seats": [f"row {r} seat {s}" for r, s in seats],
        "paid_with": f"{card['kind']} ending {card['last4']}",
    }


# ---------------------------------------------------------------- my orders


ORDER_ROW = (
    "SELECT o.id, o.code AS order_code, o.event_id, e.title, p.name AS performer, e.date, e.start_time, "
    "v.name AS venue, v.city, e.status AS event_status, s.name AS section, o.quantity, o.unit_price, o.total_price, "
    "o.status, o.ordered_on, "
    "(SELECT COUNT(*) FROM tickets t WHERE t.order_id = o.id AND t.holder_id = o.user_id AND t.status = 'valid') "
    "AS tickets_you_hold, "
    "(SELECT COUNT(*) FROM tickets t WHERE t.order_id = o.id AND t.status = 'transfer_pending') "
    "AS tickets_pending_transfer "
    "FROM orders o JOIN events e ON e.id = o.event_id JOIN performers p ON p.id = e.performer_id "
    "JOIN venues v ON v.id = e.venue_id JOIN sections s ON s.id = o.section_id"
)


@tool
def list_my_ticket_orders(ctx: ToolContext, upcoming_only: bool = False) -> dict:
    """List the logged-in user's ticket orders, soonest event first, with event status and tickets held.

    Args:
        upcoming_only: True to show only confirmed (not refunded) orders for events from today on.
    """
    me = _me(ctx)
    today = _today(ctx)
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
    me = _me(ctx)
    order = _my_order(ctx, me["id"], order_code)
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
    me = _me(ctx)
    rows = ctx.query(
        "SELECT id AS payment_method_id, kind, last4, expires, is_default FROM payment_methods WHERE user_id=? "
        "ORDER BY is_default DESC, id", (me["id"],))
    month = _today(ctx)[:7]
    return [{**r, "is_default": bool(r["is_default"]), "expired": r["expires"] < month} for r in rows]


# ---------------------------------------------------------------- transfers and refunds


@tool
def transfer_tickets(ctx: ToolContext, order_code: str, to_username: str, quantity: int) -> dict:
    """Send tickets from one of your orders to another user; they stay pending until the recipient accepts.

    Args:
        order_code: The order the tickets come from, e.g. 'TK-4F7QK2'.
        to_username: The recipient's username, e.g. 'jane.doe'.
        quantity: How many of the order's tickets you still hold to send (at least 1).
    """
    me = _me(ctx)
    order = _my_order(ctx, me["id"], order_code)
    if quantity < 1:
        raise ToolError(f"argument 'quantity' must be at least 1; got {quantity}")
    label = f"{order['title']} on {order['date']}"
    today = _today(ctx)
    if order["status"] == "refunded":
        raise ToolError(f"order {order['code']} was refunded; its tickets are void")
    if order["event_status"] == "cancelled":
        raise ToolError(f"{label} is cancelled; its tickets cannot be transferred (request a refund instead)")
    if order["date"] < today:
        raise ToolError(f"{label} is in the past (today is {today}); its tickets cannot be transferred")
    recipient = _user_ref(ctx, "to_username", to_username)
    if recipient["id"] == me["id"]:
        raise ToolError("argument 'to_username': that is you; tickets can only be sent to another user")
    held = ctx.query("SELECT id, row_number, seat_number FROM tickets WHERE order_id=? AND holder_id=? "
                     "AND status='valid' ORDER BY id", (order["id"], me["id"]))
    if len(held) < quantity:
        raise ToolError(f"argument 'quantity': order {order['code']} has {len(held)} ticket(s) you can still send "
                        f"(the others are pending transfer or already transferred); {quantity} requested")
    rowid = _next_id(ctx, "transfers")
    code = transfer_code(rowid)
    ctx.db.execute(
        "INSERT INTO transfers(id, code, order_id, from_user_id, to_user_id, ticket_count, status, created_on) "
        "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)", (rowid, code, order["id"], me["id"], recipient["id"], quantity, today))
    moving = held[:quantity]
    ctx.db.executemany("UPDATE tickets SET status='transfer_pending', transfer_id=? WHERE id=?",
                       [(rowid, t["id"]) for t in moving])
    return {
        "transfer_code": code, "status": "pending", "order_code": order["code"], "to_username": recipient["username"],
        "to_name": recipient["name"], "ticket_count": quantity, "seats": _seats(moving), "title": order["title"],
        "date": order["date"],
    }


TRANSFER_ROW = (
    "SELECT x.id, x.code AS transfer_code, fu.username AS from_username, fu.name AS from_name, "
    "tu.username AS to_username, tu.name AS to_name, e.title, e.date, v.name AS venue, e.status AS event_status, "
    "x.ticket_count, x.status, x.created_on, x.responded_on, x.from_user_id, x.to_user_id, o.event_id "
    "FROM transfers x JOIN users fu ON fu.id = x.from_user_id JOIN users tu ON tu.id = x.to_user_id "
    "JOIN orders o ON o.id = x.order_id JOIN events e ON e.id = o.event_id JOIN venues v ON v.id = e.venue_id"
)


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
    me = _me(ctx)
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


def _transfer(ctx: ToolContext, code: str) -> dict[str, Any] | None:
    return ctx.one(f"{TRANSFER_ROW} WHERE x.code=?", (normalize_code(code),))


@tool
def accept_ticket_transfer(ctx: ToolContext, transfer_code: str) -> dict:
    """Accept a pending transfer sent to the logged-in user: its tickets become yours.

    Args:
        transfer_code: The transfer code, e.g. 'TR-8XM3PA' (see list_my_ticket_transfers).
    """
    me = _me(ctx)
    transfer = _transfer(ctx, transfer_code)
    if transfer is None or transfer["to_user_id"] != me["id"]:
        raise ToolError(f"argument 'transfer_code': no transfer {transfer_code!r} was sent to you; "
                        "see list_my_ticket_transfers(direction='received')")
    if transfer["status"] != "pending":
        raise ToolError(f"transfer {transfer['transfer_code']} is already {transfer['status']}; "
                        "only pending transfers can be accepted")
    today = _today(ctx)
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
        "ticket_count": transfer["ticket_count"], "seats": _seats(seats),
    }


@tool
def cancel_ticket_transfer(ctx: ToolContext, transfer_code: str) -> dict:
    """Cancel a pending transfer the logged-in user sent; its tickets come back to you.

    Args:
        transfer_code: The transfer code, e.g. 'TR-8XM3PA' (see list_my_ticket_transfers).
    """
    me = _me(ctx)
    transfer = _transfer(ctx, transfer_code)
    if transfer is None or transfer["from_user_id"] != me["id"]:
        raise ToolError(f"argument 'transfer_code': you sent no transfer {transfer_code!r}; "
                        "see list_my_ticket_transfers(direction='sent')")
    if transfer["status"] != "pending":
        raise ToolError(f"transfer {transfer['transfer_code']} is already {transfer['status']}; "
                        "only pending transfers can be cancelled")
    today = _today(ctx)
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
    me = _me(ctx)
    order = _my_order(ctx, me["id"], order_code)
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
    today = _today(ctx)
    ctx.db.execute("UPDATE orders SET status='refunded', refunded_on=? WHERE id=?", (today, order["id"]))
    ctx.db.execute("UPDATE tickets SET status='refunded' WHERE order_id=?", (order["id"],))
    card = ctx.one("SELECT kind, last4 FROM payment_methods WHERE id=?", (order["payment_method_id"],))
    assert card is not None
    return {
        "order_code": order["code"], "status": "refunded", "title": order["title"], "date": order["date"],
        "refund_amount": order["total_price"], "refunded_to": f"{card['kind']} ending {card['last4']}",
    }


TOOLS = [
    list_venues, search_events, get_event_details, get_seat_map, buy_tickets, list_my_ticket_orders,
    get_ticket_order, list_my_ticket_payment_methods, transfer_tickets, list_my_ticket_transfers,
    accept_ticket_transfer, cancel_ticket_transfer, request_ticket_refund,
]
assert get_args(Category) == CATEGORIES  # the Literal and the schema agree
