"""Declarative checks a task's verifier is made of, and the Verdict they produce.

Checks are data (JSON in tasks.jsonl), so a dataset can be read, diffed and audited without
running code; `toolgym.verify` evaluates them against an episode's final state.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Scalar = str | int | float | bool | None


class _CheckBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    weight: float = Field(default=1.0, gt=0)
    label: str | None = None  # human-readable name shown in reports


class RowExists(_CheckBase):
    """A row matching `where` exists in `table` of the `current` (or `seed`) database."""

    kind: Literal["row_exists"] = "row_exists"
    table: str
    where: dict[str, Scalar]
    db: Literal["current", "seed"] = "current"
    count: int | None = None  # exact number of matching rows, when it matters


class RowAbsent(_CheckBase):
    """No row matching `where` exists in `table`."""

    kind: Literal["row_absent"] = "row_absent"
    table: str
    where: dict[str, Scalar]
    db: Literal["current", "seed"] = "current"


class FieldEquals(_CheckBase):
    """The single row matching `where` has `field == value`."""

    kind: Literal["field_equals"] = "field_equals"
    table: str
    where: dict[str, Scalar]
    field: str
    value: Scalar


class ExpectedChange(BaseModel):
    """One change the diff may contain: an insert, update or delete of rows matching `where`."""

    model_config = ConfigDict(extra="forbid")

    table: str
    op: Literal["insert", "update", "delete"]
    where: dict[str, Scalar] = Field(default_factory=dict)
    fields: list[str] | None = None  # for updates: the only columns allowed to change


class DiffOnly(_CheckBase):
    """The seed → current diff contains only the `expected` changes (empty list: no change at all)."""

    kind: Literal["diff_only"] = "diff_only"
    expected: list[ExpectedChange] = Field(default_factory=list)


class AnswerContains(_CheckBase):
    """The final answer contains every value (case-insensitive, whitespace-normalised).

    It passes with every value; each value found earns its share of the weight in partial_score.
    """

    kind: Literal["answer_contains"] = "answer_contains"
    values: list[str]


class AnswerEquals(_CheckBase):
    """The final answer equals `value` after normalisation (case, whitespace, trailing period)."""

    kind: Literal["answer_equals"] = "answer_equals"
    value: str


class ToolCalled(_CheckBase):
    """Tool `name` was called (optionally with these arguments) at least `min_count` times."""

    kind: Literal["tool_called"] = "tool_called"
    name: str
    arguments: dict[str, Any] | None = None
    min_count: int = 1


class ToolNotCalled(_CheckBase):
    """Tool `name` was never called (e.g. no write on an impossible request)."""

    kind: Literal["tool_not_called"] = "tool_not_called"
    name: str


Check = Annotated[
    RowExists | RowAbsent | FieldEquals | DiffOnly | AnswerContains | AnswerEquals | ToolCalled | ToolNotCalled,
    Field(discriminator="kind"),
]


class CheckResult(BaseModel):
    """The outcome of one check, with a detail line a person can read."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    label: str
    passed: bool
    weight: float
    detail: str = ""
    credit: float | None = Field(None, ge=0, le=1)  # share of the weight earned when partly met; None: passed

    @property
    def earned(self) -> float:
        """The weight this check adds to partial_score."""
        return self.weight * (1.0 if self.passed else (self.credit or 0.0))


class Verdict(BaseModel):
    """reward = 1 iff every check passes; partial_score = weighted fraction earned (a partly met check
    earns its `credit` share).

    `error` set means the verifier itself broke: the verdict carries no reward signal and the
    episode is an infrastructure error, never a 0.
    """

    model_config = ConfigDict(extra="forbid")

    reward: float = 0.0
    partial_score: float = 0.0
    checks: list[CheckResult] = Field(default_factory=list)
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and self.reward >= 1.0

    @classmethod
    def from_results(cls, results: list[CheckResult]) -> Verdict:
        total = sum(r.weight for r in results)
        passed = sum(r.earned for r in results)
        all_passed = all(r.passed for r in results)
        return cls(
            reward=1.0 if all_passed else 0.0,
            partial_score=(passed / total) if total else (1.0 if all_passed else 0.0),
            checks=results,
        )

    @classmethod
    def failure(cls, error: str) -> Verdict:
        return cls(reward=0.0, partial_score=0.0, error=error)
