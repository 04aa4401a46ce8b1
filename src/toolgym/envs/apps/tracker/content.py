"""Word lists the tracker seed and task generators draw ticket text from.

Kept apart from the seed logic so generators can build new, realistic summaries with the same
vocabulary (a created ticket reads like the seeded ones). The lists are data, in texts/content.json.
"""

from __future__ import annotations

from toolgym.envs import kit

TEXTS = kit.module_texts(__file__)

# key, name, description, workflow, areas (the components its tickets are about)
PROJECTS: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = TEXTS["PROJECTS"]

JOB_TITLES = TEXTS["JOB_TITLES"]

CONDITIONS = TEXTS["CONDITIONS"]
FEATURES = TEXTS["FEATURES"]
DEPENDENCIES = TEXTS["DEPENDENCIES"]
TARGETS = TEXTS["TARGETS"]

TEMPLATES: dict[str, tuple[str, ...]] = TEXTS["TEMPLATES"]

DESCRIPTIONS: dict[str, tuple[str, ...]] = TEXTS["DESCRIPTIONS"]

GOALS = TEXTS["GOALS"]

COMMENTS = TEXTS["COMMENTS"]

WORKLOG_NOTES = TEXTS["WORKLOG_NOTES"]
