"""tickets: an events marketplace (concerts, sports, theater) where the shared users buy, transfer and refund tickets."""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.tickets.data import seed_tickets
from toolgym.envs.apps.tickets.schema import SCHEMA
from toolgym.envs.apps.tickets.tasks import FAMILIES
from toolgym.envs.apps.tickets.tools import TOOLS


class TicketsApp(kit.PackagedApp):
    """Invented performers touring eight cities' venues, priced sections, and the shared population's orders."""

    name = "tickets"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = TOOLS
    families = FAMILIES
    seed_data = staticmethod(seed_tickets)


APP = TicketsApp()
