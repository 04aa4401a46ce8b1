"""homes: a real-estate app (search listings, agents, saved homes and searches, tours, offers) over shared users."""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.homes.data import seed_homes
from toolgym.envs.apps.homes.schema import SCHEMA
from toolgym.envs.apps.homes.tasks import FAMILIES
from toolgym.envs.apps.homes.tools import TOOLS


class HomesApp(kit.PackagedApp):
    """Homes for sale in ten cities, their agents and price history, and the shared users' searches, tours and offers."""

    name = "homes"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = TOOLS
    families = FAMILIES
    seed_data = staticmethod(seed_homes)


APP = HomesApp()
