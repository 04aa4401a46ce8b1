"""Per-turn progress: the task's checks scored on the live state after every agent turn.

progress[t] is the partial_score the episode would get if it ended after turn t without an answer:
state checks (rows, fields, the diff, tool calls) are SQL over the episode's own database and run
every turn; checks only the end can judge (the final answer) earn nothing until the last turn, whose
progress is the verdict's partial_score itself, so the gains telescope to partial_score - progress[0].
progress[0] scores the seed state, so a first turn that does the work gets its credit. A check that
stops holding (a write undone, a collateral write caught by diff_only) is lost progress: a negative gain.
A Fleet-style Python verifier runs in a sandboxed process, so it runs every turn only where the task
opts in (`metadata["progress_verifier"]: true`); otherwise it is judged at the end, like the answer.
"""

from __future__ import annotations

import sqlite3

from toolgym.envs.environment import Environment
from toolgym.schema import CheckFlip, CheckResult, Task, Verdict
from toolgym.verify.checks import evaluate_check
from toolgym.verify.sandbox import run_python_verifier

END_ONLY_KINDS = frozenset({"answer_contains", "answer_equals"})
VERIFIER_EACH_TURN = "progress_verifier"  # Task.metadata key: run the Python verifier after every turn too
ZERO_CHANGE = 1e-12  # an earned share moving less than this did not flip (float noise of weighted sums)


class ProgressError(RuntimeError):
    """A check could not be scored mid-episode (the state is broken): the episode cannot be credited."""


def verifier_each_turn(task: Task) -> bool:
    """Whether the task asks for its Python verifier after every turn (it costs a sandboxed process each)."""
    return task.verifier_code is not None and task.metadata.get(VERIFIER_EACH_TURN) is True


def _unjudged(kind: str, label: str, weight: float) -> CheckResult:
    return CheckResult(kind=kind, label=label, passed=False, weight=weight, credit=0.0,
                       detail="judged at the end of the episode")


def state_verdict(task: Task, env: Environment) -> Verdict:
    """The verdict of the current state with no answer given: end-only checks earn nothing yet.

    Its checks line up with the final verdict's (the task's checks in order, then the Python verifier's),
    so `flips` can compare them one by one.
    """
    try:
        changes = env.diff()
        results = [_unjudged(c.kind, c.label or c.kind, c.weight) if c.kind in END_ONLY_KINDS
                   else evaluate_check(c, env, None, changes) for c in task.checks]
    except (sqlite3.Error, ValueError, KeyError) as exc:
        raise ProgressError(f"{type(exc).__name__}: {exc}") from exc
    if task.verifier_code is None:
        return Verdict.from_results(results)
    if verifier_each_turn(task):
        code = run_python_verifier(task.verifier_code, env, None)
        if code.error is not None:
            raise ProgressError(code.error)
    else:
        code = Verdict(checks=[_unjudged("python_verifier", "validate_task", 1.0)])
    if not task.checks:
        return code
    verifier = CheckResult(kind="python_verifier", label="validate_task", passed=code.reward >= 1.0, weight=1.0,
                           detail="" if code.reward >= 1.0 else "not yet")
    return Verdict.from_results([*results, verifier])


def flips(turn: int, before: Verdict, after: Verdict) -> list[CheckFlip]:
    """The checks whose earned share changed between two verdicts of the same task."""
    if len(before.checks) != len(after.checks):
        raise ProgressError(f"turn {turn}: {len(before.checks)} checks before it, {len(after.checks)} after it")
    changed: list[CheckFlip] = []
    for index, (old, new) in enumerate(zip(before.checks, after.checks, strict=True)):
        was, now = old.earned / old.weight, new.earned / new.weight
        if abs(now - was) > ZERO_CHANGE:
            changed.append(CheckFlip(turn=turn, check=index, label=new.label, before=was, after=now))
    return changed


class ProgressTracker:
    """One episode's progress: `score(turn, env)` after each turn, `finish(turns, verdict)` at the end."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.verdicts: list[Verdict] = []  # verdicts[t]: the state after turn t (0: the seed)

    def score(self, turn: int, env: Environment) -> None:
        """Score the state after `turn` (0: before the first turn); a turn already scored is kept."""
        if turn < len(self.verdicts):
            return
        if turn != len(self.verdicts):
            raise ProgressError(f"turn {turn} scored before turn {len(self.verdicts)}")
        self.verdicts.append(state_verdict(self.task, env))

    def finish(self, turns: int, verdict: Verdict) -> tuple[list[float], list[CheckFlip]]:
        """(progress, flips) of an episode that ended after `turns` turns with this final verdict.

        The last turn is scored by the verdict itself (answer checks and the verifier judged at last);
        a state scored after it (the loop stopped before another turn began) is replaced by it.
        """
        if len(self.verdicts) < turns:
            raise ProgressError(f"{turns} turns but only {len(self.verdicts)} states scored")
        states = [*self.verdicts[:turns], verdict]
        progress = [v.partial_score for v in states]
        changed = [f for t in range(1, len(states)) for f in flips(t, states[t - 1], states[t])]
        return progress, changed
