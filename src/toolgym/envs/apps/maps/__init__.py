"""maps: places, opening hours, reviews, directions, saved lists and visit timelines over shared users."""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.maps.data import seed_maps
from toolgym.envs.apps.maps.schema import SCHEMA
from toolgym.envs.apps.maps.tasks import FAMILIES
from toolgym.envs.apps.maps.tools import TOOLS


class MapsApp(kit.PackagedApp):
    """About 190 places in Boston, Cambridge, Somerville and Brookline, and the shared people who go there."""

    name = "maps"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = TOOLS
    families = FAMILIES
    seed_data = staticmethod(seed_maps)


APP = MapsApp()
