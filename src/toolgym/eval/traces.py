"""Trace analysis: how two runs of the same tasks behave differently, and which tasks flipped.

Behaviour (tool calls per tool, turns, format errors, final answers, tokens, tool-call rate) is
measured over scored episodes; error and timeout rates over all episodes. Success is compared on
the same denominator: only episodes present and scored in both runs, paired by
(trial, task, sample) — or by the i-th sample of each task when the runs' trials differ — with
a two-proportion z-test and McNemar's exact test on the pairs. The sampled trials are compared when
both runs have them, else the greedy passes (a greedy-only eval, `--trials 0`, has nothing else).
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from toolgym.eval.records import EpisodeRecord, RunRecords
from toolgym.eval.stats import (
    Comparison,
    Rate,
    mcnemar_test,
    paired_task_test,
    two_proportion_test,
)
from toolgym.eval.tables import TextTable, format_rate

Key = tuple[str, str, int]


def _tool_calls(record: EpisodeRecord) -> dict[str, int]:
    row = record.row
    calls = (row.get("info") or {}).get("tool_calls_by_tool")
    if calls is None:
        calls = (row.get("episode") or {}).get("tool_calls_by_tool") or {}
    return {str(k): int(v) for k, v in calls.items()}


@dataclass
class TraceStats:
    """Behaviour of one run's episodes."""

    name: str
    episodes: int = 0
    errored: int = 0
    passes: int = 0
    timeouts: int = 0
    final_answers: int = 0
    with_tool_calls: int = 0
    with_format_errors: int = 0
    format_errors: list[int] = field(default_factory=list)
    tool_errors: list[int] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    tool_calls: list[int] = field(default_factory=list)
    input_tokens: list[int] = field(default_factory=list)
    output_tokens: list[int] = field(default_factory=list)
    calls_by_tool: Counter[str] = field(default_factory=Counter)
    stop_reasons: Counter[str] = field(default_factory=Counter)
    error_causes: Counter[str] = field(default_factory=Counter)

    @property
    def scored(self) -> int:
        return self.episodes - self.errored

    @property
    def has_tokens(self) -> bool:
        """Chat-mode policies (oracle, hosted APIs) record no token ids."""
        return any(self.output_tokens)

    def rates(self) -> dict[str, Rate]:
        return {
            "success (passes / scored episodes)": Rate(self.passes, self.scored),
            "error rate (errored / all episodes)": Rate(self.errored, self.episodes),
            "timeout rate (timed out / all episodes)": Rate(self.timeouts, self.episodes),
            "final-answer rate (answered / scored)": Rate(self.final_answers, self.scored),
            "tool-call rate (episodes with ≥1 call / scored)": Rate(self.with_tool_calls, self.scored),
            "format-error rate (episodes with ≥1 / scored)": Rate(self.with_format_errors, self.scored),
        }

    def means(self) -> dict[str, list[int]]:
        means = {
            "turns per episode": self.turns,
            "tool calls per episode": self.tool_calls,
            "format errors per episode": self.format_errors,
            "tool errors per episode": self.tool_errors,
        }
        if self.has_tokens:
            means["output tokens per episode"] = self.output_tokens
            means["input tokens per episode (sum over turns)"] = self.input_tokens
        return means


def trace_stats(name: str, records: list[EpisodeRecord]) -> TraceStats:
    stats = TraceStats(name=name)
    for record in records:
        row = record.row
        stats.episodes += 1
        stats.stop_reasons[str(row.get("stop_condition") or "")] += 1
        if row.get("stop_condition") == "timeout":
            stats.timeouts += 1
        if record.errored:
            stats.errored += 1
            stats.error_causes[str(row.get("error") or "unknown").split(":", 1)[0]] += 1
            continue
        metrics = row.get("metrics") or {}
        calls = _tool_calls(record)
        stats.passes += record.passed
        stats.final_answers += bool((row.get("final_answer") or "").strip())
        total_calls = sum(calls.values())
        stats.with_tool_calls += total_calls > 0
        stats.tool_calls.append(total_calls)
        stats.calls_by_tool.update(calls)
        format_errors = int(metrics.get("format_errors") or 0)
        stats.format_errors.append(format_errors)
        stats.with_format_errors += format_errors > 0
        stats.tool_errors.append(int(metrics.get("tool_errors") or 0))
        stats.turns.append(int(metrics.get("turns") or 0))
        usage = row.get("token_usage") or {}
        stats.input_tokens.append(int(usage.get("input_tokens") or 0))
        stats.output_tokens.append(int(usage.get("output_tokens") or 0))
    return stats


@dataclass
class Flip:
    """A task whose outcome changed: solved in one run (≥1 paired sample passed) and not in the other."""

    task_id: str
    env: str
    split: str
    a_passes: int
    b_passes: int
    pairs: int
    a_records: list[EpisodeRecord]
    b_records: list[EpisodeRecord]

    @property
    def direction(self) -> str:
        return "fail→pass" if self.b_passes else "pass→fail"


@dataclass
class TraceDiff:
    a: TraceStats
    b: TraceStats
    pairs: list[tuple[EpisodeRecord, EpisodeRecord]]
    unpaired_a: int  # episodes of A with no counterpart in B (or vice versa), left out
    unpaired_b: int
    errored_pairs: int  # pairs where either side errored, left out and counted
    pairing: str
    same_denominator: Comparison | None
    paired_test: Comparison | None
    flips: list[Flip]
    measure: str = "sampled"  # which episodes were compared: "sampled" (the trials) or "greedy"

    @property
    def fail_to_pass(self) -> list[Flip]:
        return [f for f in self.flips if f.b_passes]

    @property
    def pass_to_fail(self) -> list[Flip]:
        return [f for f in self.flips if not f.b_passes]


def _ordinal_keys(records: list[EpisodeRecord]) -> dict[Key, EpisodeRecord]:
    """The i-th sample of each task (ordered by trial, then sample index)."""
    by_task: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        by_task[record.task_id].append(record)
    keyed: dict[Key, EpisodeRecord] = {}
    for task, items in by_task.items():
        for ordinal, record in enumerate(sorted(items, key=lambda r: (r.trial, r.sample_index))):
            keyed[("", task, ordinal)] = record
    return keyed


def pair_records(a: list[EpisodeRecord], b: list[EpisodeRecord]) -> tuple[dict[Key, EpisodeRecord], dict[Key, EpisodeRecord], str]:
    """Exact (trial, task, sample) keys when both runs have the same trials, else sample ordinals."""
    if {r.trial for r in a} == {r.trial for r in b}:
        return {r.key: r for r in a}, {r.key: r for r in b}, "(trial, task, sample index)"
    return _ordinal_keys(a), _ordinal_keys(b), "i-th sample of each task (the runs' trials differ)"


def compares_greedy(run_a: RunRecords, run_b: RunRecords) -> bool:
    """Whether the default comparison is the greedy passes: both runs have one, and a side has no trials."""
    return bool(run_a.greedy and run_b.greedy and not (run_a.sampled and run_b.sampled))


def diff_runs(run_a: RunRecords, run_b: RunRecords, *, greedy: bool | None = None) -> TraceDiff:
    """Compare B against A (A = before, B = after); greedy None: the trials, or the greedy passes when a side
    has no trials (so a greedy-only eval is not reported as "no scored pairs")."""
    if greedy is None:
        greedy = compares_greedy(run_a, run_b)
    records_a = run_a.greedy if greedy else run_a.sampled
    records_b = run_b.greedy if greedy else run_b.sampled
    if greedy and not (records_a and records_b):
        raise ValueError("--greedy: both runs need a greedy/ sub-run")
    keyed_a, keyed_b, pairing = pair_records(records_a, records_b)
    shared = sorted(set(keyed_a) & set(keyed_b))
    pairs_all = [(keyed_a[k], keyed_b[k]) for k in shared]
    pairs = [(x, y) for x, y in pairs_all if not x.errored and not y.errored]
    same_denominator = paired_test = None
    if pairs:
        a_passed = [x.passed for x, _ in pairs]
        b_passed = [y.passed for _, y in pairs]
        same_denominator = two_proportion_test(Rate(sum(a_passed), len(pairs)), Rate(sum(b_passed), len(pairs)))
    by_task: dict[str, list[tuple[EpisodeRecord, EpisodeRecord]]] = defaultdict(list)
    for x, y in pairs:
        by_task[x.task_id].append((x, y))
    if pairs and all(len(task_pairs) == 1 for task_pairs in by_task.values()):
        paired_test = mcnemar_test(a_passed, b_passed)  # one outcome per task: McNemar is exact
    elif pairs:  # several samples per task are correlated: the task is the unit
        a_fractions = [sum(x.passed for x, _ in tp) / len(tp) for tp in by_task.values()]
        b_fractions = [sum(y.passed for _, y in tp) / len(tp) for tp in by_task.values()]
        paired_test = paired_task_test(a_fractions, b_fractions, Rate(sum(a_passed), len(pairs)),
                                       Rate(sum(b_passed), len(pairs)))
    flips = []
    for task_id, task_pairs in sorted(by_task.items()):
        a_passes = sum(x.passed for x, _ in task_pairs)
        b_passes = sum(y.passed for _, y in task_pairs)
        if (a_passes > 0) != (b_passes > 0):
            first = task_pairs[0][0]
            flips.append(Flip(task_id, first.env, first.split, a_passes, b_passes, len(task_pairs),
                              [x for x, _ in task_pairs], [y for _, y in task_pairs]))
    return TraceDiff(
        a=trace_stats(run_a.name, records_a), b=trace_stats(run_b.name, records_b), pairs=pairs,
        unpaired_a=len(keyed_a) - len(shared), unpaired_b=len(keyed_b) - len(shared),
        errored_pairs=len(pairs_all) - len(pairs), pairing=pairing, same_denominator=same_denominator,
        paired_test=paired_test, flips=flips, measure="greedy" if greedy else "sampled",
    )


# -- rendering ------------------------------------------------------------------------------------


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _pp(a: Rate, b: Rate) -> str:
    if not a.total or not b.total:
        return "—"
    return f"{100 * (b.value - a.value):+.1f} pp"


def behaviour_table(diff: TraceDiff) -> TextTable:
    a, b = diff.a, diff.b
    table = TextTable(
        title="Behaviour",
        header=["Metric", f"A: {a.name}", f"B: {b.name}", "Δ (B − A)"],
        notes=[
            "Behaviour is measured over scored episodes (errored ones excluded); error and timeout rates over "
            "all episodes. Descriptive: both runs played the same tasks, so episodes are not independent "
            "samples and no unpaired test is shown.",
        ],
    )
    rates_a, rates_b = a.rates(), b.rates()
    for name in rates_a:
        table.rows.append([name, format_rate(rates_a[name]), format_rate(rates_b[name]),
                           _pp(rates_a[name], rates_b[name])])
    means_a, means_b = a.means(), b.means()
    for name in means_a:
        if name not in means_b:
            continue
        xa, xb = means_a[name], means_b[name]
        table.rows.append([name, f"{_mean(xa):.2f} (n={len(xa)})", f"{_mean(xb):.2f} (n={len(xb)})",
                           f"{_mean(xb) - _mean(xa):+.2f}" if xa and xb else "—"])
    if not (a.has_tokens and b.has_tokens):
        missing = [s.name for s in (a, b) if not s.has_tokens]
        table.notes.append(f"Tokens: not recorded for {', '.join(missing)} (chat-mode policy: no token ids).")
    return table


def tool_calls_table(diff: TraceDiff) -> TextTable:
    """Calls of each tool: total calls over scored episodes, and per episode."""
    a, b = diff.a, diff.b
    table = TextTable(
        title="Calls per tool",
        header=["Tool", f"A: {a.name}", f"B: {b.name}", "Δ per episode (B − A)"],
        notes=["calls / scored episodes = calls per episode; errored episodes are not counted."],
    )
    for tool in sorted(set(a.calls_by_tool) | set(b.calls_by_tool)):
        ca, cb = a.calls_by_tool[tool], b.calls_by_tool[tool]
        pa = ca / a.scored if a.scored else float("nan")
        pb = cb / b.scored if b.scored else float("nan")
        table.rows.append([tool, f"{ca}/{a.scored} · {pa:.2f} per episode", f"{cb}/{b.scored} · {pb:.2f} per episode",
                           f"{pb - pa:+.2f}"])
    if not table.rows:
        table.rows.append(["no tool calls in either run", "—", "—", "—"])
    return table


_MEASURES = {"sampled": "sampled episodes", "greedy": "greedy (temperature 0) episodes"}


def success_table(diff: TraceDiff) -> TextTable:
    table = TextTable(
        title="Success on the same denominator",
        header=["Comparison", "A", "B", "Δ (B − A) [95% CI]", "p"],
        notes=[
            f"Pairs: {_MEASURES[diff.measure]} present and scored in both runs, matched by {diff.pairing}. "
            "Left out and counted: "
            f"{diff.errored_pairs} pair(s) with an errored side, {diff.unpaired_a} episode(s) only in A, "
            f"{diff.unpaired_b} only in B.",
            "Paired tests only: McNemar when each task has one outcome per run (Wald interval on the paired "
            "differences), else Wilcoxon signed-rank over tasks on their success fractions (Student's t "
            "interval of the mean per-task difference); intervals clipped to ±100 pp. The same tasks scored "
            "twice are not independent samples, so no two-proportion test is shown.",
        ],
    )
    for comparison in (diff.paired_test,):
        if comparison is None:
            continue
        low, high = max(-1.0, comparison.interval[0]), min(1.0, comparison.interval[1])
        table.rows.append([
            comparison.test, format_rate(comparison.a), format_rate(comparison.b),
            f"{100 * comparison.difference:+.2f} pp [{100 * low:+.2f}, {100 * high:+.2f}]",
            f"{comparison.p_value:.3g}",
        ])
    if not table.rows:
        table.rows.append(["no scored pairs", "—", "—", "—", "—"])
    return table


def _where(records: list[EpisodeRecord], root: Path | None) -> str:
    locations = []
    for record in records:
        path = record.path
        if root is not None:
            with contextlib.suppress(ValueError):
                path = path.resolve().relative_to(root.resolve())
        locations.append(f"{path}:{record.line}")
    return ", ".join(locations)


def flips_table(diff: TraceDiff, root: Path | None = None) -> TextTable:
    table = TextTable(
        title=f"Tasks that flipped ({len(diff.fail_to_pass)} fail→pass, {len(diff.pass_to_fail)} pass→fail)",
        header=["Task", "Env", "Split", "Direction", "A passes", "B passes", "Episodes A", "Episodes B"],
        left={0, 1, 2, 3, 6, 7},
        notes=["A task counts as solved in a run when at least one of its paired samples passed; "
               "episodes are given as results file:line."],
    )
    for flip in sorted(diff.flips, key=lambda f: (f.direction, f.env, f.task_id)):
        table.rows.append([
            flip.task_id, flip.env, flip.split, flip.direction, f"{flip.a_passes}/{flip.pairs}",
            f"{flip.b_passes}/{flip.pairs}", _where(flip.a_records, root), _where(flip.b_records, root),
        ])
    if not diff.flips:
        table.rows.append(["no task flipped", "", "", "", "", "", "", ""])
    return table


def diff_tables(diff: TraceDiff, root: Path | None = None) -> list[TextTable]:
    return [success_table(diff), behaviour_table(diff), tool_calls_table(diff), flips_table(diff, root)]
