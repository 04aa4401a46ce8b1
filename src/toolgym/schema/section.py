"""The strict base of every settings model, kept at the bottom layer so the agent's own settings (episode
limits) and the config tree that composes them share one definition."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A piece of the config tree: unknown keys are errors, field docstrings are the help text."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
