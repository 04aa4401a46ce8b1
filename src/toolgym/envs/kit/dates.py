"""Task dates: the CURRENT_DATE window every app's tasks share, random days in it, and dates worded the
way people write them, so every family picks and says days the same way."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence

from toolgym.envs.context import resolve_date

FIRST_DAY = dt.date(2026, 4, 1)  # the CURRENT_DATE range of every generated task
LAST_DAY = dt.date(2026, 8, 31)
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def iso(day: dt.date) -> str:
    return day.isoformat()


def day_of(text: str) -> dt.date:
    """'2026-05-03' as a date."""
    return dt.date.fromisoformat(text)


def random_day(rng: random.Random, first: dt.date = FIRST_DAY, last: dt.date = LAST_DAY) -> dt.date:
    """A uniform day in [first, last] from one `rng.randint` draw; `first` when the range is empty."""
    return first + dt.timedelta(days=rng.randint(0, max(0, (last - first).days)))


def day_in_window(rng: random.Random, low: dt.date, high: dt.date) -> dt.date | None:
    """A random CURRENT_DATE in [low, high] cut to the task window; None when nothing is left of it."""
    low, high = max(low, FIRST_DAY), min(high, LAST_DAY)
    if low > high:
        return None
    return random_day(rng, low, high)


def today_before(rng: random.Random, day: dt.date, lead_days: int = 45, *, same_day: bool = False,
                 earliest: dt.date | None = None) -> dt.date | None:
    """A CURRENT_DATE up to `lead_days` days before `day` (on it too with `same_day`), not before
    `earliest`, inside the task window; None when there is none (the draw is unusable)."""
    low = day - dt.timedelta(days=lead_days)
    if earliest is not None:
        low = max(low, earliest)
    return day_in_window(rng, low, day if same_day else day - dt.timedelta(days=1))


def human_date(day: dt.date | str, *, weekday: bool = False, year: bool = False) -> str:
    """A date as prompts say it: 'May 3', 'Sunday, May 3' (`weekday`) or 'May 3, 2026' (`year`)."""
    if isinstance(day, str):
        day = day_of(day)
    text = f"{day:%B} {day.day}"
    if weekday:
        text = f"{WEEKDAY_NAMES[day.weekday()]}, {text}"
    return f"{text}, {day.year}" if year else text


def relative_day(rng: random.Random, day: dt.date, kinds: Sequence[str], *, first: dt.date = FIRST_DAY,
                 last: dt.date = LAST_DAY, max_in_days: int = 6, this_lead: tuple[int, int] = (1, 6),
                 ) -> tuple[str, dt.date] | None:
    """A relative phrase for `day` and a CURRENT_DATE in [first, last] on which it means `day`, or None.

    The kind is drawn from `kinds` (repeat one to weight it): 'tomorrow', 'today', 'in_days' ('in 4 days',
    2..`max_in_days`), 'next_weekday' ('next Friday', 1..7 days before) or 'this_weekday' ('this Friday',
    `this_lead` days before).
    """
    kind = rng.choice(kinds)
    weekday = WEEKDAY_NAMES[day.weekday()]
    if kind == "tomorrow":
        phrase, today = "tomorrow", day - dt.timedelta(days=1)
    elif kind == "today":
        phrase, today = "today", day
    elif kind == "in_days":
        days = rng.randint(2, max_in_days)
        phrase, today = f"in {days} days", day - dt.timedelta(days=days)
    elif kind == "next_weekday":
        phrase, today = f"next {weekday}", day - dt.timedelta(days=rng.randint(1, 7))
    else:
        phrase, today = f"this {weekday}", day - dt.timedelta(days=rng.randint(*this_lead))
    if not first <= today <= last or resolve_date(phrase, today) != day:
        return None
    return phrase, today
