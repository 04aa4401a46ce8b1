"""forum: a Reddit-like forum app — communities, posts, threaded comments, votes and moderation."""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.forum.data import seed_forum
from toolgym.envs.apps.forum.schema import SCHEMA
from toolgym.envs.apps.forum.tasks import FAMILIES
from toolgym.envs.apps.forum.tools import TOOLS


class ForumApp(kit.PackagedApp):
    """Communities with rules and flairs, posts, comments, one-per-user votes, reports, removals and bans."""

    name = "forum"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = TOOLS
    families = FAMILIES
    seed_data = staticmethod(seed_forum)


APP = ForumApp()
