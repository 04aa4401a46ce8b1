"""mail: an Outlook-like mailbox with calendar for the logged-in user (the held-out evaluation environment)."""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.mail.data import seed_mail
from toolgym.envs.apps.mail.schema import SCHEMA
from toolgym.envs.apps.mail.tasks import FAMILIES
from toolgym.envs.apps.mail.tools import TOOLS


class MailApp(kit.PackagedApp):
    """Folders, messages, attachments and contacts per mailbox, plus a shared calendar with invitations."""

    name = "mail"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = TOOLS
    families = FAMILIES
    seed_data = staticmethod(seed_mail)


APP = MailApp()
