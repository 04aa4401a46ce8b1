"""A WHERE clause built from a tool's optional filters: each filter is one line, a filter left as None adds
nothing, and the parameters stay in step with their placeholders."""

from __future__ import annotations

from typing import Any


class Where:
    """SQL conditions joined by AND with their parameters, in the order they were added."""

    def __init__(self, *conditions: str, params: tuple[Any, ...] | list[Any] = ()) -> None:
        self.conditions = list(conditions)
        self.params: list[Any] = list(params)

    def add(self, condition: str, *params: Any) -> Where:
        """`condition` with the values of its `?` placeholders."""
        self.conditions.append(condition)
        self.params.extend(params)
        return self

    def when(self, value: Any, condition: str) -> Where:
        """`condition` with `value` as its one parameter, unless `value` is None (the filter was not given)."""
        if value is not None:
            self.add(condition, value)
        return self

    @property
    def sql(self) -> str:
        """The conditions joined by AND ('1=1' when there are none)."""
        return " AND ".join(self.conditions) or "1=1"
