"""code_host: a GitHub-like code hosting app — repositories, issues, pull requests, reviews."""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.code_host.data import seed_code_host
from toolgym.envs.apps.code_host.schema import SCHEMA
from toolgym.envs.apps.code_host.tasks import FAMILIES
from toolgym.envs.apps.code_host.tools import TOOLS


class CodeHostApp(kit.PackagedApp):
    """Repositories with collaborators, issues with labels and milestones, PRs with reviews and CI."""

    name = "code_host"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = TOOLS
    families = FAMILIES
    seed_data = staticmethod(seed_code_host)


APP = CodeHostApp()
