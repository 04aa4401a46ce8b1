"""Text pools the seed draws realistic mail and calendar content from.

Each topic's subjects contain its `keyword`, and no topic's text contains another topic's keyword,
so "the latest email about the <keyword>" has one clear meaning (tests/test_app_mail.py checks it).
Placeholders in braces are filled by the seed: {first} recipient first name, {me} sender first
name, {company}, {city}, {amount}, {date}, {day}, {num}, {q}, {product}, {role}, {team}, {pct}, {v}.
The pools are data, in texts/content.json.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolgym.envs import kit

TEXTS = kit.module_texts(__file__)


@dataclass(frozen=True)
class Topic:
    keyword: str
    subjects: tuple[str, ...]
    openers: tuple[str, ...]
    replies: tuple[str, ...]
    attachments: tuple[str, ...]


TOPICS: tuple[Topic, ...] = tuple(Topic(**fields) for fields in TEXTS["TOPICS"])

GENERIC_REPLIES: tuple[str, ...] = TEXTS["GENERIC_REPLIES"]

# (sender name, address, subject templates, body template): notifications, never from contacts.
AUTOMATED: tuple[tuple[str, str, tuple[str, ...], str], ...] = TEXTS["AUTOMATED"]

SPAM: tuple[tuple[str, str, str, str], ...] = TEXTS["SPAM"]

EVENT_TITLES: tuple[str, ...] = TEXTS["EVENT_TITLES"]

LOCATIONS: tuple[str, ...] = TEXTS["LOCATIONS"]

PRODUCTS: tuple[str, ...] = TEXTS["PRODUCTS"]
ROLES: tuple[str, ...] = TEXTS["ROLES"]
TEAMS: tuple[str, ...] = TEXTS["TEAMS"]
CONFERENCES: tuple[str, ...] = TEXTS["CONFERENCES"]
CUSTOM_FOLDERS: tuple[str, ...] = TEXTS["CUSTOM_FOLDERS"]
SYSTEM_FOLDERS: tuple[str, ...] = TEXTS["SYSTEM_FOLDERS"]

DEPARTMENTS: dict[str, tuple[str, ...]] = TEXTS["DEPARTMENTS"]

CONTENT_TYPES: dict[str, str] = TEXTS["CONTENT_TYPES"]
