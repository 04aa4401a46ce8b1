"""crm: a HubSpot-like CRM (companies, contacts, a deal pipeline, activities, reminders) over shared users."""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.crm.data import seed_crm
from toolgym.envs.apps.crm.schema import SCHEMA
from toolgym.envs.apps.crm.tasks import FAMILIES
from toolgym.envs.apps.crm.tools import TOOLS


class CrmApp(kit.PackagedApp):
    """A sales team from the shared population selling to sixty companies through a seven-stage pipeline."""

    name = "crm"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = TOOLS
    families = FAMILIES
    seed_data = staticmethod(seed_crm)


APP = CrmApp()
