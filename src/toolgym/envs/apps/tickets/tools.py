"""Tools of the tickets app: find events and seats, buy tickets, transfer them, refund cancelled shows.

Every rule an order must follow is checked here and broken rules come back as a ToolError saying what
was wrong and what is allowed. "My" means the LOGGED_IN_USER; dates go through the task's
CURRENT_DATE, so "tomorrow" and "this Saturday" work and nothing reads the wall clock. Names are
specific ("get_ticket_order", not "get_order") so the app composes with others in one environment.
"""

from __future__ import annotations

from toolgym.envs.apps.tickets.tools_events import (
    buy_tickets,
    get_event_details,
    get_seat_map,
    list_venues,
    search_events,
)
from toolgym.envs.apps.tickets.tools_orders import (
    accept_ticket_transfer,
    cancel_ticket_transfer,
    get_ticket_order,
    list_my_ticket_orders,
    list_my_ticket_payment_methods,
    list_my_ticket_transfers,
    request_ticket_refund,
    transfer_tickets,
)

TOOLS = [
    list_venues, search_events, get_event_details, get_seat_map, buy_tickets, list_my_ticket_orders,
    get_ticket_order, list_my_ticket_payment_methods, transfer_tickets, list_my_ticket_transfers,
    accept_ticket_transfer, cancel_ticket_transfer, request_ticket_refund,
]
