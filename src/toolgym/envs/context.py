"""Runtime context from a task's env_variables: who "I" am and what "today" is."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from toolgym.envs.tool import ToolError

DEFAULT_DATE = "2026-06-15"
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_IN_DAYS = re.compile(r"^in (\d+) days?$")
_DAYS_AGO = re.compile(r"^(\d+) days? ago$")


def resolve_date(text: str, today: dt.date) -> dt.date:
    """Resolve ISO dates and relative phrases ("tomorrow", "next Friday", "in 3 days") against today.

    "Friday" / "this Friday" is the first Friday on or after today; "next Friday" the first one
    strictly after today; "last Friday" the latest one strictly before.
    """
    phrase = " ".join(text.strip().lower().split())
    try:
        return dt.date.fromisoformat(phrase)
    except ValueError:
        pass
    if phrase == "today":
        return today
    if phrase == "tomorrow":
        return today + dt.timedelta(days=1)
    if phrase == "yesterday":
        return today - dt.timedelta(days=1)
    if phrase in ("day after tomorrow", "the day after tomorrow"):
        return today + dt.timedelta(days=2)
    if match := _IN_DAYS.match(phrase):
        return today + dt.timedelta(days=int(match.group(1)))
    if match := _DAYS_AGO.match(phrase):
        return today - dt.timedelta(days=int(match.group(1)))
    if phrase in ("next week",):
        return today + dt.timedelta(days=7)
    words = phrase.split()
    if words and words[-1] in WEEKDAYS and len(words) <= 2:
        target = WEEKDAYS.index(words[-1])
        qualifier = words[0] if len(words) == 2 else "this"
        if qualifier in ("this", "on"):
            return today + dt.timedelta(days=(target - today.weekday()) % 7)
        if qualifier == "next":
            return today + dt.timedelta(days=(target - today.weekday()) % 7 or 7)
        if qualifier == "last":
            return today - dt.timedelta(days=(today.weekday() - target) % 7 or 7)
    raise ToolError(f"cannot read date {text!r}; use YYYY-MM-DD, 'today', 'tomorrow' or 'next Friday'")


@dataclass
class EnvContext:
    """The env_variables of a task, parsed: LOGGED_IN_USER decides whose data "my" means."""

    variables: dict[str, str] = field(default_factory=dict)

    @property
    def today(self) -> dt.date:
        return dt.date.fromisoformat(self.variables.get("CURRENT_DATE", DEFAULT_DATE)[:10])

    @property
    def user(self) -> str | None:
        return self.variables.get("LOGGED_IN_USER")

    @property
    def user_name(self) -> str | None:
        return self.variables.get("LOGGED_IN_NAME")

    def require_user(self) -> str:
        if not self.user:
            raise ToolError("no user is logged in (LOGGED_IN_USER is not set), so 'my' data cannot be found")
        return self.user

    def date(self, text: str) -> str:
        """A date argument resolved against CURRENT_DATE, as ISO text."""
        return resolve_date(text, self.today).isoformat()
