"""CRM rules shared by the seed, the tools and the task generators, so all three agree exactly.

The pipeline is HubSpot's default sales pipeline: five open stages, then Closed Won (reachable only
from the last open stage) and Closed Lost (reachable from any open stage). Lifecycle stages of
contacts only move forward.
"""

from __future__ import annotations

import datetime as dt
import re

# (name, win probability %, outcome), in pipeline order; positions are 1-based.
from toolgym.envs import kit

TEXTS = kit.module_texts(__file__)

PIPELINE = TEXTS["PIPELINE"]
OPEN_STAGES = tuple(name for name, _, outcome in PIPELINE if outcome == "open")
WON_STAGE = "Closed Won"
LOST_STAGE = "Closed Lost"
LAST_OPEN_POSITION = len(OPEN_STAGES)

LIFECYCLE_STAGES = TEXTS["LIFECYCLE_STAGES"]
LIFECYCLE_LABELS = TEXTS["LIFECYCLE_LABELS"]

LOST_REASONS = TEXTS["LOST_REASONS"]

ACTIVITY_KINDS = ("call", "email", "meeting", "note")
SALES_ROLES = ("sales_rep", "sales_manager")

EMAIL_PATTERN = re.compile(r"^[A-Za-z0-9._%+'-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
               "october", "november", "december")


def lifecycle_rank(stage: str) -> int:
    return LIFECYCLE_STAGES.index(stage)


def month_bounds(text: str, today: dt.date) -> tuple[str, str]:
    """'this month', 'next month', 'last month', 'YYYY-MM' or a month name (this year) -> first and last day.

    Raises ValueError for anything else, so the tool can name the argument.
    """
    phrase = " ".join(text.strip().lower().split())
    year, month = today.year, today.month
    if phrase in ("this month", "current month"):
        pass
    elif phrase == "next month":
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    elif phrase in ("last month", "previous month"):
        year, month = (year - 1, 12) if month == 1 else (year, month - 1)
    elif match := _MONTH.match(phrase):
        year, month = int(match.group(1)), int(match.group(2))
        if not 1 <= month <= 12:
            raise ValueError(f"month {month} does not exist")
    elif phrase in MONTH_NAMES:
        month = MONTH_NAMES.index(phrase) + 1
    else:
        raise ValueError(f"cannot read month {text!r}; use YYYY-MM, 'this month', 'next month' or a month name")
    first = dt.date(year, month, 1)
    following = dt.date(year + 1, 1, 1) if month == 12 else dt.date(year, month + 1, 1)
    return first.isoformat(), (following - dt.timedelta(days=1)).isoformat()
