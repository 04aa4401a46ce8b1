"""booking: travel booking for flights and hotels (search, book, cancel, review) over shared users."""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.booking.data import seed_booking
from toolgym.envs.apps.booking.schema import SCHEMA
from toolgym.envs.apps.booking.tasks import FAMILIES
from toolgym.envs.apps.booking.tools import TOOLS


class BookingApp(kit.PackagedApp):
    """Flights between twelve cities, hotels in each, and the bookings of the shared population."""

    name = "booking"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = TOOLS
    families = FAMILIES
    seed_data = staticmethod(seed_booking)


APP = BookingApp()
