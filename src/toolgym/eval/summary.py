"""Per-environment, per-split success statistics of a run: passes, errors, pass@k and pass^k.

Errored episodes (infrastructure failures) are counted in their own column, by cause, and left out of every
denominator (docs/architecture.md, "infrastructure errors are not rewards"). pass@k and pass^k are the unbiased estimators averaged
over tasks; a task needs at least k scored samples, and tasks with fewer are left out and counted
instead of being estimated from too few samples.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from toolgym.eval.passk import pass_at_k, pass_hat_k
from toolgym.eval.records import EpisodeRecord, RunRecords
from toolgym.eval.stats import Rate, wilson_interval

# Split groups in the seed's order of interest; each gets its own table.
SPLIT_GROUPS: tuple[tuple[str, str], ...] = (
    ("heldout_env", "Held-out environment"),
    ("heldout_tasks", "Held-out tasks (from training environments)"),
    ("train", "Training environments (train tasks)"),
)
SPLIT_TITLES = dict(SPLIT_GROUPS)


@dataclass(frozen=True)
class Estimate:
    """pass@k or pass^k over tasks: `expected` tasks solved out of `tasks` (those with n ≥ k)."""

    kind: str  # "pass@k" or "pass^k"
    k: int
    expected: float
    tasks: int
    short_tasks: int = 0  # tasks with some scored samples but fewer than k: left out, counted
    max_n: int = 0  # the most scored samples any task has (says why an estimate is unavailable)

    @property
    def name(self) -> str:
        return f"pass@{self.k}" if self.kind == "pass@k" else f"pass^{self.k}"

    @property
    def available(self) -> bool:
        return self.tasks > 0

    @property
    def value(self) -> float:
        return self.expected / self.tasks if self.tasks else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson 95% on the expected count over tasks (approximate: a mean of per-task probabilities)."""
        return wilson_interval(min(self.expected, self.tasks), self.tasks) if self.tasks else (float("nan"),) * 2

    @property
    def unavailable_reason(self) -> str:
        return f"n={self.max_n} < k={self.k}"

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "name": self.name, "k": self.k, "expected_tasks": self.expected, "tasks": self.tasks,
            "value": self.value if self.available else None, "ci95": [low, high] if self.available else None,
            "short_tasks": self.short_tasks,
            "unavailable": None if self.available else self.unavailable_reason,
        }


def task_counts(records: Iterable[EpisodeRecord]) -> dict[str, tuple[int, int]]:
    """task_id → (n scored samples, c successes); errored rows count for neither."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        entry = counts[record.task_id]  # every task appears, even one whose rows all errored
        if record.errored:
            continue
        entry[0] += 1
        entry[1] += int(record.passed)
    return {task: (n, c) for task, (n, c) in counts.items()}


def estimate(counts: dict[str, tuple[int, int]], k: int, kind: str = "pass@k") -> Estimate:
    """Average the unbiased estimator over tasks with n ≥ k; count the tasks that have fewer."""
    function = pass_at_k if kind == "pass@k" else pass_hat_k
    eligible = [(n, c) for n, c in counts.values() if n >= k]
    short = sum(1 for n, _ in counts.values() if 0 < n < k)
    max_n = max((n for n, _ in counts.values()), default=0)
    return Estimate(kind=kind, k=k, expected=sum(function(n, c, k) for n, c in eligible),
                    tasks=len(eligible), short_tasks=short, max_n=max_n)


@dataclass
class CellStats:
    """The statistics of one set of episodes (an env, a split, a trial)."""

    label: str
    tasks: int
    episodes: int
    errored: int
    passes: int
    scored_tasks: int = 0
    errored_by_cause: dict[str, int] = field(default_factory=dict)
    pass_at: dict[int, Estimate] = field(default_factory=dict)
    pass_hat: dict[int, Estimate] = field(default_factory=dict)

    @property
    def scored(self) -> int:
        return self.episodes - self.errored

    @property
    def unscored_tasks(self) -> int:
        """Tasks whose every episode errored: in no estimate's denominator, counted here."""
        return self.tasks - self.scored_tasks

    @property
    def pass_rate(self) -> Rate:
        """Successful episodes over scored episodes (the seed's 24/180 form)."""
        return Rate(self.passes, self.scored)

    @property
    def error_rate(self) -> Rate:
        return Rate(self.errored, self.episodes)

    def to_dict(self) -> dict[str, Any]:
        low, high = self.pass_rate.interval
        return {
            "label": self.label, "tasks": self.tasks, "unscored_tasks": self.unscored_tasks, "episodes": self.episodes, "errored": self.errored,
            "errored_by_cause": dict(self.errored_by_cause), "scored": self.scored, "passes": self.passes,
            "pass_rate": self.pass_rate.value if self.scored else None,
            "pass_rate_ci95": [low, high] if self.scored else None,
            "pass_at_k": {str(k): e.to_dict() for k, e in self.pass_at.items()},
            "pass_hat_k": {str(k): e.to_dict() for k, e in self.pass_hat.items()},
        }


def cell_stats(label: str, records: list[EpisodeRecord], ks: Iterable[int]) -> CellStats:
    counts = task_counts(records)
    ks = sorted(set(ks))
    return CellStats(
        label=label,
        tasks=len(counts),
        episodes=len(records),
        errored=sum(r.errored for r in records),
        passes=sum(r.passed for r in records),
        errored_by_cause=count_causes(records),
        scored_tasks=sum(1 for n, _ in counts.values() if n > 0),
        pass_at={k: estimate(counts, k, "pass@k") for k in ks},
        pass_hat={k: estimate(counts, k, "pass^k") for k in ks if k > 1},  # pass^1 = pass@1
    )


def count_causes(records: Iterable[EpisodeRecord]) -> dict[str, int]:
    """Errored episodes per cause, most frequent first."""
    counts = Counter(r.error_cause for r in records if r.errored)
    return {cause: n for cause, n in sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))}


@dataclass
class ErrorCause:
    """The errored episodes of one cause, with one of them to start reading from."""

    cause: str
    episodes: int
    example: str  # the error text of the first such episode
    location: str  # its results row, path:line

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.cause, "episodes": self.episodes, "example": self.example, "location": self.location}


def errors_by_cause(records: Iterable[EpisodeRecord]) -> list[ErrorCause]:
    """Every errored episode of a run, grouped by cause (most frequent first): never dropped silently."""
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        if record.errored:
            groups[record.error_cause or "unknown"].append(record)
    return [
        ErrorCause(cause, len(found), str(found[0].row.get("error") or ""), found[0].location)
        for cause, found in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    ]


SPREAD = ("never", "sometimes", "always")


@dataclass
class SampledSpread:
    """Tasks by how often their samples succeed: never, sometimes, always.

    GRPO learns only from a task whose samples sometimes succeed (a group with reward variance); the
    cross with the greedy pass says what sharpening can flip: greedy fails that sometimes succeed can
    rise, greedy passes that do not always succeed can fall.
    """

    tasks: int
    counts: dict[str, int]
    by_greedy: dict[str, dict[str, int]] = field(default_factory=dict)  # "fails"/"passes" → counts

    def to_dict(self) -> dict[str, Any]:
        return {"tasks": self.tasks, **self.counts, "by_greedy": self.by_greedy}


def sampled_spread(sampled: list[EpisodeRecord], greedy: list[EpisodeRecord]) -> SampledSpread | None:
    """None unless every scored task has at least two samples (one sample cannot be "sometimes")."""
    counts = {task: nc for task, nc in task_counts(sampled).items() if nc[0] > 0}
    if not counts or min(n for n, _ in counts.values()) < 2:
        return None

    def kind(n: int, c: int) -> str:
        return "never" if c == 0 else "always" if c == n else "sometimes"

    spread = SampledSpread(tasks=len(counts), counts=dict.fromkeys(SPREAD, 0))
    for n, c in counts.values():
        spread.counts[kind(n, c)] += 1
    greedy_passed = {r.task_id: r.passed for r in greedy if not r.errored}
    if greedy_passed:
        spread.by_greedy = {"fails": dict.fromkeys(SPREAD, 0), "passes": dict.fromkeys(SPREAD, 0)}
        for task, (n, c) in counts.items():
            if task in greedy_passed:
                spread.by_greedy["passes" if greedy_passed[task] else "fails"][kind(n, c)] += 1
    return spread


@dataclass
class GroupTable:
    """One split group's table: a row per environment, an all-envs row, and the greedy row."""

    split: str
    title: str
    rows: list[CellStats]
    total: CellStats
    greedy: CellStats | None = None
    greedy_rows: dict[str, CellStats] = field(default_factory=dict)
    spread: SampledSpread | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "split": self.split, "title": self.title, "rows": [r.to_dict() for r in self.rows],
            "total": self.total.to_dict(), "greedy": self.greedy.to_dict() if self.greedy else None,
            "greedy_by_env": {env: s.to_dict() for env, s in self.greedy_rows.items()},
            "sampled_spread": self.spread.to_dict() if self.spread else None,
        }


@dataclass
class TrialRow:
    trial: str
    split: str
    stats: CellStats


@dataclass
class EvalSummary:
    """Everything the eval tables print, as data (written to eval.json)."""

    name: str
    ks: list[int]
    groups: list[GroupTable]
    trials: list[TrialRow]
    samples_per_task: dict[str, int]  # min/max scored samples per task over the sampled runs
    errors: list[ErrorCause] = field(default_factory=list)  # every errored episode (trials and greedy), by cause

    def group(self, split: str) -> GroupTable | None:
        return next((g for g in self.groups if g.split == split), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "k": self.ks, "samples_per_task": self.samples_per_task,
            "groups": [g.to_dict() for g in self.groups],
            "errored_by_cause": [e.to_dict() for e in self.errors],
            "trials": [{"trial": t.trial, "split": t.split, **t.stats.to_dict()} for t in self.trials],
        }


def by_split_and_env(records: Iterable[EpisodeRecord]) -> dict[str, dict[str, list[EpisodeRecord]]]:
    grouped: dict[str, dict[str, list[EpisodeRecord]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        grouped[record.split][record.env].append(record)
    return grouped


def summarize(run: RunRecords, ks: Iterable[int] = (1,)) -> EvalSummary:
    """The tables of one run: per split group × env, all-env totals, greedy rows and per-trial rows."""
    ks = sorted(set(ks))
    if not ks or ks[0] < 1:
        raise ValueError(f"k values must be ≥ 1, got {ks}")
    scored = run.sampled or run.greedy  # a greedy-only eval (trials 0): the tables are its greedy pass
    sampled = by_split_and_env(scored)
    greedy = by_split_and_env(run.greedy)
    known = [s for s, _ in SPLIT_GROUPS]
    unknown = sorted(set(sampled) - set(known))
    if unknown:
        raise ValueError(f"{run.root}: rows with unknown split(s) {unknown}; expected one of {known}")
    groups: list[GroupTable] = []
    for split, title in SPLIT_GROUPS:
        if split not in sampled:
            continue
        envs = sampled[split]
        rows = [cell_stats(env, envs[env], ks) for env in sorted(envs)]
        total = cell_stats("All environments", [r for env in envs.values() for r in env], ks)
        table = GroupTable(split=split, title=title, rows=rows, total=total)
        greedy_records = [r for env in greedy.get(split, {}).values() for r in env]
        if split in greedy:
            table.greedy = cell_stats("greedy pass@1 (T=0)", greedy_records, [1])
            table.greedy_rows = {env: cell_stats(env, greedy[split][env], [1]) for env in sorted(greedy[split])}
        if run.sampled:
            table.spread = sampled_spread([r for env in envs.values() for r in env], greedy_records)
        groups.append(table)
    trials: list[TrialRow] = []
    if len(run.trials) > 1 or (run.trials and run.trials[0]):
        for trial in run.trials:
            in_trial = by_split_and_env(r for r in run.sampled if r.trial == trial)
            for split, _ in SPLIT_GROUPS:
                if split in in_trial:
                    records = [r for env in in_trial[split].values() for r in env]
                    trials.append(TrialRow(trial, split, cell_stats(trial, records, ks)))
    per_task = [n for n, _ in task_counts(scored).values()]
    return EvalSummary(
        name=run.name, ks=ks, groups=groups, trials=trials,
        samples_per_task={"min": min(per_task, default=0), "max": max(per_task, default=0)},
        errors=errors_by_cause(run.all),
    )
