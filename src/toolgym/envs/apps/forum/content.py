"""The forum's communities and the text they are written in: rules, flairs, and post/comment templates.

Seed data and task generators both draw from here, so a generated "create a post" task reads like
the posts already in the community. Templates use `{slot}` fields filled from the community's slots.
The texts themselves are data, in texts/content.json; a community's rules there are a rule of its own
or the name of one of SHARED_RULES.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolgym.envs import kit


@dataclass(frozen=True)
class CommunitySpec:
    """One community: who it is for, its rules and flairs, and how its posts and comments read."""

    name: str
    description: str
    visibility: str  # "public" | "private"
    flairs: tuple[str, ...]
    rules: tuple[tuple[str, str], ...]  # (title, description); numbered from 1
    slots: dict[str, tuple[str, ...]]
    titles: tuple[str, ...]
    bodies: tuple[str, ...]
    comments: tuple[str, ...]
    flair_required: bool = False
    spam_rule: int = 2  # number of the "no self-promotion" rule (public communities)
    question_flair: str = "Question"


TEXTS = kit.module_texts(__file__)


def _community(fields: dict[str, Any]) -> CommunitySpec:
    rules = tuple(TEXTS["SHARED_RULES"][rule] if isinstance(rule, str) else rule for rule in fields["rules"])
    return CommunitySpec(**{**fields, "rules": rules})


COMMUNITIES: tuple[CommunitySpec, ...] = tuple(_community(fields) for fields in TEXTS["COMMUNITIES"])
GENERIC_COMMENTS: tuple[str, ...] = TEXTS["GENERIC_COMMENTS"]
# Posts that break the "no self-promotion" rule: the seed's reported content.
SPAM_TITLES: tuple[str, ...] = TEXTS["SPAM_TITLES"]
SPAM_BODIES: tuple[str, ...] = TEXTS["SPAM_BODIES"]
SPAM_TOPICS: dict[str, str] = TEXTS["SPAM_TOPICS"]
SPAM_REPORT_REASONS: tuple[str, ...] = TEXTS["SPAM_REPORT_REASONS"]
# Report reasons by rule title; a rule not listed gets "Breaks the '<title>' rule".
REASONS_BY_RULE: dict[str, tuple[str, ...]] = TEXTS["REASONS_BY_RULE"]
