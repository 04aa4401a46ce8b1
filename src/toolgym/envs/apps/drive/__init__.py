"""drive: a Google-Drive-like file store for the logged-in user: folders, files, versions, sharing, trash."""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.drive.data import seed_drive
from toolgym.envs.apps.drive.schema import SCHEMA
from toolgym.envs.apps.drive.tasks import FAMILIES
from toolgym.envs.apps.drive.tools import TOOLS


class DriveApp(kit.PackagedApp):
    """Per-user folder trees of files with version histories, shared with people, folders and links."""

    name = "drive"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = TOOLS
    families = FAMILIES
    seed_data = staticmethod(seed_drive)


APP = DriveApp()
