"""What each stage won and lost: tasks that flipped between consecutive runs of the same tasks, by family.

A pipeline's headline numbers hide churn: a stage that wins 3 tasks and loses 3 leaves the count
where it was. Counting the flips per task family shows whether a stage learned something across a
family or swung one decision between two families (one family's wins are the other's losses).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from toolgym.eval.records import EpisodeRecord, RunRecords
from toolgym.eval.stats import Comparison
from toolgym.eval.tables import TextTable
from toolgym.eval.traces import diff_runs


@dataclass(frozen=True)
class StageFlips:
    before: str
    after: str
    measure: str  # "sampled" or "greedy" (see traces.diff_runs)
    tasks: int  # tasks with at least one scored pair
    won: Counter[str]  # family → tasks that went from no passing sample to at least one
    lost: Counter[str]
    paired_test: Comparison | None


def family_of(record: EpisodeRecord) -> str:
    """`env/family` from the episode's info (the task's family), else the env alone."""
    info = record.row.get("info")
    family = info.get("family") if isinstance(info, dict) else None
    return f"{record.env}/{family}" if family else record.env


def only_split(run: RunRecords, split: str | None) -> RunRecords:
    if split is None:
        return run
    return RunRecords(run.name, run.root, [r for r in run.sampled if r.split == split],
                      [r for r in run.greedy if r.split == split], run.manifest)


def flips_between(run_a: RunRecords, run_b: RunRecords, split: str | None = None) -> StageFlips | None:
    """B against A on the headline measure (the greedy passes when both runs have one, else the trials),
    over one split or all; None when no scored episode pairs up."""
    a, b = only_split(run_a, split), only_split(run_b, split)
    diff = diff_runs(a, b, greedy=bool(a.greedy and b.greedy))
    if not diff.pairs:
        return None
    won: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    for flip in diff.flips:
        (won if flip.b_passes else lost)[family_of(flip.a_records[0])] += 1
    return StageFlips(run_a.name, run_b.name, diff.measure, len({x.task_id for x, _ in diff.pairs}), won, lost,
                      diff.paired_test)


def stage_flips(runs: list[RunRecords]) -> list[StageFlips]:
    """Flips between each run and the next; runs that share no scored task with the one before are skipped."""
    chain: list[StageFlips] = []
    before: RunRecords | None = None
    for run in runs:
        if before is None:
            before = run
            continue
        item = flips_between(before, run)
        if item is None:
            continue
        chain.append(item)
        before = run
    return chain


def _won_lost(won: int, lost: int) -> str:
    return " / ".join(part for part in (f"+{won}" if won else "", f"−{lost}" if lost else "") if part)


def stage_flips_table(chain: list[StageFlips]) -> TextTable:
    table = TextTable(
        title="Stage by stage: tasks won and lost",
        header=["A → B", "Compared", "Tasks", "Won", "Lost", "Net", "McNemar p", "By family (won / lost)"],
        left={0, 1, 7},
        notes=["Each run against the one before it, on the tasks scored in both. Won: no passing sample in A, at "
               "least one in B; lost: the reverse. McNemar's exact test is over the paired episodes. A family "
               "that loses what another wins is one decision swung between them, not learning."],
    )
    for item in chain:
        families = sorted(set(item.won) | set(item.lost))
        by_family = "; ".join(f"{name} {_won_lost(item.won[name], item.lost[name])}" for name in families)
        won, lost = sum(item.won.values()), sum(item.lost.values())
        p = f"{item.paired_test.p_value:.3g}" if item.paired_test is not None else "—"
        table.rows.append([f"{item.before} → {item.after}", item.measure, str(item.tasks), str(won), str(lost),
                           f"{won - lost:+d}", p, by_family or "no task flipped"])
    return table
