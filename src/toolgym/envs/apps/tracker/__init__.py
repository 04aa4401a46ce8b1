"""tracker: a Jira-like issue tracker — projects with workflows, sprints, tickets, links and worklogs.

Its people are the shared population and its projects work on code_host repositories, so
multi-app tasks can join a ticket to the pull request it references.
"""

from __future__ import annotations

from toolgym.envs import kit
from toolgym.envs.apps.tracker.data import seed_tracker
from toolgym.envs.apps.tracker.schema import SCHEMA
from toolgym.envs.apps.tracker.tasks import FAMILIES
from toolgym.envs.apps.tracker.tools import TOOLS


class TrackerApp(kit.PackagedApp):
    """Projects with per-project workflows and sprints; tickets with links, comments, watchers, worklogs."""

    name = "tracker"
    version = "1.0.0"
    schema = SCHEMA
    policy = kit.read_policy(__file__)
    tools = TOOLS
    families = FAMILIES
    seed_data = staticmethod(seed_tracker)


APP = TrackerApp()
