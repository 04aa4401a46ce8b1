"""Check builders for the common grading patterns: no change but the expected ones, facts in the answer,
and the impossible request (no change, no write attempted, an 'I cannot' reply).

Labels are data in the built dataset, so the builders take the wording an app's tasks already use
instead of imposing one.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolgym.schema import AnswerContains, Check, DiffOnly, ExpectedChange, ToolNotCalled

SAYS_IT_CANNOT = "says it cannot"  # the shorter reply label several apps' impossible tasks use


def diff_only(expected: list[ExpectedChange], weight: float = 2.0, label: str | None = None) -> DiffOnly:
    """Nothing but the `expected` changes (none at all for an empty list)."""
    return DiffOnly(expected=expected, weight=weight,
                    label=label or ("no other changes" if expected else "nothing changed"))


def answer_has(values: list[str], weight: float = 1.0, label: str | None = None) -> AnswerContains:
    return AnswerContains(values=values, weight=weight, label=label or f"answer mentions {', '.join(values)}")


def lookup_checks(values: list[str], *, per_fact: bool = True) -> list[Check]:
    """A lookup: the facts in the answer and no change to the data. `per_fact` gives one answer check per
    fact (partial credit per fact); otherwise one check of weight 2 holds them all."""
    if per_fact:
        facts: list[Check] = [answer_has([v]) for v in values]
    else:
        facts = [answer_has(values, weight=2.0, label="answer has the facts")]
    return [*facts, diff_only([], weight=1.0)]


def impossible_checks(write_tools: str | Sequence[str], *, reply_label: str = "reply says it cannot be done",
                      attempt_label: str = "{tool} not called", unchanged_label: str = "nothing changed",
                      ) -> list[Check]:
    """The request cannot be done: no change, none of the write tools attempted, and an 'I cannot' reply."""
    tools = [write_tools] if isinstance(write_tools, str) else list(write_tools)
    return [
        diff_only([], weight=2.0, label=unchanged_label),
        *(ToolNotCalled(name=name, weight=1.0, label=attempt_label.format(tool=name)) for name in tools),
        answer_has(["cannot"], label=reply_label),
    ]
