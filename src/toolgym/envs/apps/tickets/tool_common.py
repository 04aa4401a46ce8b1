"""What the tickets tools share: the logged-in buyer, lookups of cities, events, orders, people and
payment methods that name the argument on failure, and the views tools return."""

from __future__ import annotations

from typing import Any, Literal, get_args

from toolgym.envs import ToolContext, ToolError, kit
from toolgym.envs.apps.tickets.rules import CATEGORIES, EVENT_COLUMNS, EVENT_JOINS, normalize_code
from toolgym.envs.kit.lookups import row_by_id

MAX_EVENTS = 20
MAX_ROWS = 25
Category = Literal["concert", "sports", "theater", "comedy", "family"]
assert get_args(Category) == CATEGORIES  # the Literal and the schema agree


def current_user(ctx: ToolContext) -> dict[str, Any]:
    return kit.logged_in_user(ctx, "the tickets app")


def today_iso(ctx: ToolContext) -> str:
    return ctx.env.today.isoformat()


def find_city(ctx: ToolContext, text: str) -> str:
    wanted = " ".join(text.split())
    row = ctx.one("SELECT city FROM venues WHERE lower(city)=lower(?) LIMIT 1", (wanted,))
    if row is None:
        known = ", ".join(r["city"] for r in ctx.query("SELECT DISTINCT city FROM venues ORDER BY city"))
        raise ToolError(f"argument 'city': no venues in {text!r}; cities with events: {known}")
    return str(row["city"])


def find_event(ctx: ToolContext, event_id: int) -> dict[str, Any]:
    return row_by_id(
        ctx, f"SELECT {EVENT_COLUMNS}, v.address, v.kind AS venue_kind, v.capacity AS venue_capacity, p.genre "
        f"{EVENT_JOINS} WHERE e.id=?", "event_id", event_id, "event", "use search_events to find one")


def event_view(ctx: ToolContext, row: dict[str, Any]) -> dict[str, Any]:
    view = {k: row[k] for k in ("event_id", "title", "performer", "category", "date", "start_time", "venue", "city",
                                "status")}
    if row["status"] == "cancelled":
        view["min_price"] = None
    else:
        view["min_price"] = row["min_price"]
        view["seats_available"] = row["seats_available"]
    if row["date"] < today_iso(ctx):
        view["past"] = True
    return view


def user_ref(ctx: ToolContext, name: str, text: str) -> dict[str, Any]:
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


def my_order(ctx: ToolContext, user_id: int, code: str) -> dict[str, Any]:
    row = ctx.one(
        "SELECT o.*, e.title, e.date, e.start_time, e.status AS event_status, v.name AS venue, v.city, "
        "s.name AS section FROM orders o JOIN events e ON e.id = o.event_id JOIN venues v ON v.id = e.venue_id "
        "JOIN sections s ON s.id = o.section_id WHERE o.code=? AND o.user_id=?", (normalize_code(code), user_id))
    if row is None:
        raise ToolError(f"argument 'order_code': you have no order with code {code!r}; see list_my_ticket_orders")
    return row


def seat_labels(rows: list[dict[str, Any]]) -> list[str]:
    return [f"row {r['row_number']} seat {r['seat_number']}" for r in rows]


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


TRANSFER_ROW = (
    "SELECT x.id, x.code AS transfer_code, fu.username AS from_username, fu.name AS from_name, "
    "tu.username AS to_username, tu.name AS to_name, e.title, e.date, v.name AS venue, e.status AS event_status, "
    "x.ticket_count, x.status, x.created_on, x.responded_on, x.from_user_id, x.to_user_id, o.event_id "
    "FROM transfers x JOIN users fu ON fu.id = x.from_user_id JOIN users tu ON tu.id = x.to_user_id "
    "JOIN orders o ON o.id = x.order_id JOIN events e ON e.id = o.event_id JOIN venues v ON v.id = e.venue_id"
)


def find_transfer(ctx: ToolContext, code: str) -> dict[str, Any] | None:
    return ctx.one(f"{TRANSFER_ROW} WHERE x.code=?", (normalize_code(code),))
