"""phone_support: a mobile carrier's support desk with dual control (tau2 telecom in spirit).

The agent holds the account tools; the customer holds the phone's settings (`owner="user"` tools)
and must be instructed. `user_actions` tells a scripted user simulator which instruction means
which device tool call.
"""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.phone_support.data import seed_phone_support
from toolgym.envs.apps.phone_support.schema import SCHEMA
from toolgym.envs.apps.phone_support.tasks import FAMILIES
from toolgym.envs.apps.phone_support.tools import AGENT_TOOLS
from toolgym.envs.apps.phone_support.tools_device import USER_TOOLS
from toolgym.envs.apps.phone_support.user_actions import USER_ACTIONS, UserAction


class PhoneSupportApp(kit.PackagedApp):
    """Plans, accounts, lines, bills and the customers' phones of one carrier over the shared population."""

    name = "phone_support"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = [*AGENT_TOOLS, *USER_TOOLS]
    user_actions: tuple[UserAction, ...] = USER_ACTIONS
    families = FAMILIES
    seed_data = staticmethod(seed_phone_support)


APP = PhoneSupportApp()
