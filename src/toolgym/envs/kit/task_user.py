"""The user a task logs in as: an app's generators draw one, then give the task its env_variables for
the day they chose. Apps whose users carry more (a mailbox address) extend it with fields."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from toolgym.envs.kit.picks import env_vars


@dataclass(frozen=True)
class TaskUser:
    """A user to run a task as, with the name the task's LOGGED_IN_NAME shows."""

    username: str
    name: str

    def env(self, today: dt.date) -> dict[str, str]:
        """env_variables that log this user in on `today`."""
        return env_vars(self.username, self.name, today)
