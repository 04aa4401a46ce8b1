"""Wording helpers for prompts and answers: a phrasing drawn from several (its index goes into the
task's metadata, where the contract test counts distinct phrasings), counts, lists, money and times."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any


def pick_phrasing(rng: random.Random, templates: Sequence[str]) -> tuple[int, str]:
    """One of several wordings as given (already filled), and its index: one `rng.randrange` draw."""
    index = rng.randrange(len(templates))
    return index, templates[index]


def phrase(rng: random.Random, templates: Sequence[str], **slots: Any) -> tuple[int, str]:
    """One of several `str.format` templates, filled with `slots`, and its index."""
    index, template = pick_phrasing(rng, templates)
    return index, template.format(**slots)


def plural(count: int, word: str) -> str:
    """'1 ticket', '3 tickets'."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def names_list(names: Sequence[str]) -> str:
    """'A', 'A and B', 'A, B and C'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def with_article(noun: str) -> str:
    """'an editor', 'a viewer': the indefinite article a noun phrase takes."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def money(amount: int) -> str:
    """'$412,000'."""
    return f"${amount:,}"


def clock(hhmm: str, style: int = 1) -> str:
    """'14:30' in one of three spoken styles: 0 '14:30', 1 '2:30pm', 2 '2:30 PM' ('2pm' on the hour)."""
    if style == 0:
        return hhmm
    hour, minute = int(hhmm[:2]), int(hhmm[3:])
    suffix = "pm" if hour >= 12 else "am"
    twelve = hour % 12 or 12
    text = f"{twelve}" if minute == 0 else f"{twelve}:{minute:02d}"
    return f"{text}{suffix}" if style == 1 else f"{text} {suffix.upper()}"
