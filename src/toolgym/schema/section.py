"""The strict base of every settings model, kept at the bottom layer so the agent's own settings (episode
limits) and the config tree that composes them share one definition."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict

Part = TypeVar("Part", bound=BaseModel)


class Section(BaseModel):
    """A piece of the config tree: unknown keys are errors, field docstrings are the help text."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    def part(self, model: type[Part]) -> Part:
        """The settings of `model` that this larger settings object holds (a command's config is built from
        pieces; the code that runs one piece takes just that piece)."""
        return model.model_validate(self.model_dump(include=set(model.model_fields)))
