"""`toolgym report` over several seeds of one pipeline: pooled success per stage and paired tests between stages.

The measure is each stage's greedy pass@1 on each held-out split. A stage's rate pools its tasks × seeds with
a cluster-aware Wilson interval (`toolgym.eval.stats.clustered_rate`: a task's seeds are one cluster); two
stages are compared over pairs (a task under one seed, scored by both) with the exact sign-flip test over
tasks and a cluster-robust interval of the effect (`stratified_paired_test`). Beside each comparison: the
power of this design against a difference of `detect_points` at the comparison's own discordance and design
effect, and the smallest difference it detects with power 0.8 (`toolgym.eval.power`). Errored episodes are
counted and left out of every denominator, as everywhere in the report.

Written as report.md, report.html and study.json (the same numbers as data).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolgym.config.report import ReportOptions
from toolgym.eval.power import detectable_difference, paired_power
from toolgym.eval.records import RunRecords
from toolgym.eval.report_document import Report, Section, render_html, render_markdown
from toolgym.eval.report_seeds_runs import SeedRun, StudyError, is_study_folder, load_study, task_ids
from toolgym.eval.report_sources import CONTROL_STAGES, stage_rank
from toolgym.eval.stats import (
    ClusteredRate,
    PairedOutcome,
    StratifiedComparison,
    clustered_rate,
    stratified_paired_test,
)
from toolgym.eval.summary import SPLIT_TITLES
from toolgym.eval.tables import TextTable

STUDY_JSON = "study.json"
POWER = 0.8
ALPHA = 0.05
UNTRAINED = ("untrained", "base", "baseline", "before")
MEASURE = "greedy pass@1 (temperature 0, one episode a task), pooled over tasks × seeds"


@dataclass(frozen=True)
class StageResult:
    stage: str
    rate: ClusteredRate
    errored: int
    by_seed: dict[int, tuple[int, int]]  # seed → (successes, scored)


@dataclass(frozen=True)
class StageComparison:
    before: str
    after: str
    test: StratifiedComparison
    power: float  # against a difference of detect_points (nan: not computable)
    detectable: float  # the smallest difference detected with power POWER (nan: none at this discordance)


@dataclass
class SplitResults:
    split: str
    stages: list[StageResult]
    comparisons: list[StageComparison]


def greedy_outcomes(run: RunRecords, split: str) -> tuple[dict[str, bool], int]:
    """task → passed, over the scored greedy episodes of one split, and the errored count; a task twice is
    an error naming both rows."""
    outcomes: dict[str, bool] = {}
    where: dict[str, str] = {}
    errored = 0
    for record in run.greedy:
        if record.split != split:
            continue
        if record.task_id in where:
            raise StudyError(f"{record.location}: task {record.task_id} is in the greedy pass twice (also at "
                             f"{where[record.task_id]}); a greedy pass scores each task once")
        where[record.task_id] = record.location
        if record.errored:
            errored += 1
        else:
            outcomes[record.task_id] = record.passed
    return outcomes, errored


def reported_stages(runs: list[SeedRun]) -> tuple[list[str], list[str]]:
    """(stages with a greedy pass in every run, in stage order; notes on the stages left out)."""
    names = sorted({name for run in runs for name in run.stages}, key=lambda n: (stage_rank(n), n))
    kept, notes = [], []
    for name in names:
        missing = [run.label for run in runs if name not in run.stages]
        no_greedy = [run.label for run in runs if name in run.stages and not run.stages[name].greedy]
        if missing:
            notes.append(f"{name}: left out, not evaluated in {', '.join(missing)}")
        elif no_greedy:
            notes.append(f"{name}: left out, no greedy pass in {', '.join(no_greedy)}")
        else:
            kept.append(name)
    return kept, notes


def comparison_pairs(stages: list[str]) -> list[tuple[str, str]]:
    """Each stage against the one before it, the first trained stage against the last, the control against
    the stage it controls for, and each GRPO variant against GRPO and against GRPO's start."""
    variants = [s for s in stages if s.startswith("grpo-")]
    controls = [s for s in stages if s in CONTROL_STAGES]
    chain = [s for s in stages if s not in variants and s not in controls]
    pairs = list(itertools.pairwise(chain))
    trained = [s for s in chain if s not in UNTRAINED]
    if len(trained) >= 3:
        pairs.append((trained[0], trained[-1]))
    pairs += [(control, "sft") for control in controls if "sft" in chain]
    start = chain[chain.index("grpo") - 1] if "grpo" in chain and chain.index("grpo") > 0 else None
    for variant in variants:
        pairs += [(before, variant) for before in ("grpo", start) if before in chain]
    return pairs


def _power(test: StratifiedComparison, detect: float) -> tuple[float, float]:
    """(power against `detect`, smallest difference detected with power POWER), at the comparison's own
    discordance (at least `detect`: a difference of d makes at least d of the pairs differ) and design effect."""
    if not test.won + test.lost:  # no pair differs: no discordance to size the power on
        return float("nan"), float("nan")
    design_effect = test.design_effect if math.isfinite(test.design_effect) and test.design_effect > 1 else 1.0
    discordance = test.discordance
    power = paired_power(test.pairs, detect, min(1.0, max(discordance, detect)), alpha=ALPHA,
                         design_effect=design_effect) if detect < 1 else float("nan")
    smallest = detectable_difference(test.pairs, discordance, alpha=ALPHA, power=POWER, design_effect=design_effect)
    return power, smallest


def split_results(runs: list[SeedRun], stages: list[str], split: str, detect: float) -> SplitResults:
    outcomes = {(stage, run.seed): greedy_outcomes(run.stages[stage], split) for stage in stages for run in runs}
    results = []
    for stage in stages:
        by_task: dict[str, list[bool]] = {}
        for run in runs:
            for task, passed in outcomes[(stage, run.seed)][0].items():
                by_task.setdefault(task, []).append(passed)
        by_seed = {run.seed: (sum(outcomes[(stage, run.seed)][0].values()), len(outcomes[(stage, run.seed)][0]))
                   for run in runs}
        results.append(StageResult(stage, clustered_rate(by_task), sum(outcomes[(stage, r.seed)][1] for r in runs),
                                   by_seed))
    comparisons = []
    for before, after in comparison_pairs(stages):
        pairs = [PairedOutcome(task, f"seed-{run.seed}", a_passed, b[task])
                 for run in runs
                 for b in [outcomes[(after, run.seed)][0]]
                 for task, a_passed in outcomes[(before, run.seed)][0].items() if task in b]
        if not pairs:
            continue
        test = stratified_paired_test(pairs)
        comparisons.append(StageComparison(before, after, test, *_power(test, detect)))
    return SplitResults(split, results, comparisons)


# -- rendering ---------------------------------------------------------------------------------------------


def _points(value: float, sign: bool = True) -> str:
    return "—" if not math.isfinite(value) else f"{100 * value:+.1f}" if sign else f"{100 * value:.1f}"


def _pooled_cell(rate: ClusteredRate) -> str:
    if not rate.total:
        return "0/0 · n/a"
    low, high = rate.interval
    return f"{rate.successes}/{rate.total} · {100 * rate.value:.1f}% [{100 * low:.1f}–{100 * high:.1f}]"


def _stages_table(results: SplitResults) -> TextTable:
    table = TextTable(
        title="Success by stage, pooled over seeds",
        header=["Stage", "Passes (tasks × seeds)", "Tasks", "Design effect", "Errored", "By seed"],
        left={0, 5},
        notes=["Passes: greedy passes / scored greedy episodes over every task under every seed, with a 95% "
               "interval that counts a task's seeds as one cluster: Wilson's at the effective sample size n / "
               "design effect (the design effect is the cluster-robust variance over the binomial one, kept "
               "between 1 and the seeds per task; at 0/n or n/n it is the seeds per task)."],
    )
    for item in results.stages:
        by_seed = ", ".join(f"s{seed} {s}/{n}" for seed, (s, n) in item.by_seed.items())
        table.rows.append([item.stage, _pooled_cell(item.rate), str(item.rate.tasks),
                           f"{item.rate.design_effect:.2f}", str(item.errored), by_seed])
    return table


def _comparisons_table(results: SplitResults, detect_points: float) -> TextTable:
    table = TextTable(
        title="Paired tests between stages (a pair: one task under one seed)",
        header=["A → B", "Pairs", "Won / lost", "Effect, points [95% CI]", "p", "By seed, points",
                f"Power at {detect_points:g} points", f"Detects at power {POWER:g}"],
        left={0, 5},
        notes=["Won: pairs B passed and A failed; lost: the reverse. Effect: mean paired difference (won − lost) "
               "/ pairs, with a cluster-robust 95% interval over tasks (Student's t).",
               "p: exact two-sided sign-flip test over tasks: each task's difference summed over its seeds, "
               "against all 2^m sign flips of the m tasks that differ (McNemar's exact test when there is one "
               "seed). Seeds are strata: a pair never mixes two seeds.",
               f"Power: of this test's normal approximation (McNemar, Connor 1987) at α = {ALPHA:g}, with this "
               "comparison's pairs, discordance (at least the difference tested) and design effect (the effect's "
               "cluster-robust variance over that of independent pairs, at least 1); Detects: the smallest "
               f"difference found with power {POWER:g}. —: no pair differs, or none is detectable."],
    )
    for item in results.comparisons:
        test = item.test
        low, high = test.interval
        by_seed = ", ".join(f"{seed.removeprefix('seed-')}: {_points((won - lost) / n)}"
                            for seed, (n, won, lost) in test.by_seed.items())
        table.rows.append([
            f"{item.before} → {item.after}", f"{test.pairs} ({test.tasks} tasks; design effect {test.design_effect:.2f})",
            f"{test.won} / {test.lost}",
            f"{_points(test.difference)} [{_points(low)} to {_points(high)}]", f"{test.p_value:.3g}", by_seed,
            "—" if not math.isfinite(item.power) else f"{item.power:.2f}",
            "—" if not math.isfinite(item.detectable) else f"{_points(item.detectable, sign=False)} points"])
    return table


def _runs_table(runs: list[SeedRun]) -> TextTable:
    table = TextTable(title="Runs", header=["Seed", "Run folder", "Stages", "Tasks by split"], left={1, 2, 3})
    for run in runs:
        tasks = ", ".join(f"{split} {len(ids)}" for split, ids in sorted(task_ids(run).items()))
        table.rows.append([str(run.seed), str(run.path), ", ".join(sorted(run.stages, key=stage_rank)), tasks])
    return table


def _splits(runs: list[SeedRun]) -> list[str]:
    present = {split for run in runs for split in task_ids(run)}
    return [split for split in ("heldout_tasks", "heldout_env", "train") if split in present]


def build_seeds_report(paths: list[Path], options: ReportOptions | None = None) -> tuple[Report, dict[str, Any]]:
    """The report document and its numbers as data, for seed runs or one study folder (see report_seeds_runs)."""
    options = options or ReportOptions()
    runs = load_study(paths)
    stages, notes = reported_stages(runs)
    root = paths[0] if len(paths) == 1 else Path(".")
    report = Report(title=options.title or f"Seeds report: {paths[0].resolve().name if len(paths) == 1 else 'runs'}",
                    run_dir=root)
    report.meta = {"generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                   "runs": ", ".join(str(run.path) for run in runs), "measure": MEASURE}
    overview = Section("study", "Study", f"{len(runs)} runs of one pipeline config under seeds "
                       f"{', '.join(str(run.seed) for run in runs)}: their configs differ only in the seed and they "
                       "scored the same tasks. Stages: " + (", ".join(stages) or "none with a greedy pass in every run")
                       + ".")
    overview.table(_runs_table(runs))
    for note in notes:
        overview.callout(note, "bad")
    report.sections.append(overview)
    detect = options.detect_points / 100
    data: dict[str, Any] = {
        "kind": "seeds_report", "measure": MEASURE, "alpha": ALPHA, "power": POWER,
        "detect_points": options.detect_points, "notes": notes,
        "runs": [{"seed": run.seed, "path": str(run.path), "stages": sorted(run.stages, key=stage_rank)}
                 for run in runs],
        "splits": {},
    }
    for split in _splits(runs):
        results = split_results(runs, stages, split, detect)
        tasks = max((item.rate.tasks for item in results.stages), default=0)
        section = Section(f"split-{split}", SPLIT_TITLES.get(split, split),
                          f"{tasks} tasks × {len(runs)} seeds: up to {tasks * len(runs)} pairs per comparison. The "
                          "power columns state what this design detects at each comparison's own discordance.")
        section.table(_stages_table(results))
        section.table(_comparisons_table(results, options.detect_points))
        report.sections.append(section)
        data["splits"][split] = split_data(results)
    return report, data


def split_data(results: SplitResults) -> dict[str, Any]:
    def number(value: float, scale: float = 1.0) -> float | None:
        return round(scale * value, 6) if math.isfinite(value) else None

    return {
        "stages": {item.stage: {
            "successes": item.rate.successes, "scored": item.rate.total, "tasks": item.rate.tasks,
            "errored": item.errored, "rate": number(item.rate.value), "ci95": [number(v) for v in item.rate.interval],
            "design_effect": number(item.rate.design_effect),
            "interval": "Wilson at n / design effect (tasks are clusters of their seeds)",
            "by_seed": {str(seed): {"successes": s, "scored": n} for seed, (s, n) in item.by_seed.items()},
        } for item in results.stages},
        "comparisons": [{
            "from": item.before, "to": item.after, "pairs": item.test.pairs, "tasks": item.test.tasks,
            "won": item.test.won, "lost": item.test.lost, "discordance": number(item.test.discordance),
            "difference_pp": number(item.test.difference, 100),
            "ci95_pp": [number(v, 100) for v in item.test.interval], "p_value": item.test.p_value,
            "test": item.test.test, "design_effect": number(item.test.design_effect),
            "by_seed": {seed: {"pairs": n, "won": won, "lost": lost} for seed, (n, won, lost) in item.test.by_seed.items()},
            "power_at_detect_points": number(item.power), "detectable_pp": number(item.detectable, 100),
        } for item in results.comparisons],
    }


def render_seeds_text(data: dict[str, Any]) -> str:
    """The study's numbers as the lines a terminal shows."""
    lines = [f"seeds: {', '.join(str(run['seed']) for run in data['runs'])}; {data['measure']}"]
    lines += [f"  note: {note}" for note in data["notes"]]
    for split, numbers in data["splits"].items():
        lines.append(f"{split}:")
        for stage, item in numbers["stages"].items():
            low, high = item["ci95"]
            interval = f" [{100 * low:.1f}–{100 * high:.1f}]" if low is not None and high is not None else ""
            lines.append(f"  {stage:<14} {item['successes']}/{item['scored']}{interval}")
        for item in numbers["comparisons"]:
            low, high = item["ci95_pp"]
            interval = f" [{low:+.1f} to {high:+.1f}]" if low is not None and high is not None else ""
            power = item["power_at_detect_points"]
            detects = item["detectable_pp"]
            lines.append(f"  {item['from']} → {item['to']}: {item['difference_pp']:+.1f} points{interval}, "
                         f"p = {item['p_value']:.3g} ({item['won']} won, {item['lost']} lost of {item['pairs']} pairs)"
                         + (f"; power {power:.2f} at {data['detect_points']:g} points" if power is not None else "")
                         + (f", detects {detects:.1f} points at power {data['power']:g}" if detects is not None else ""))
    return "\n".join(lines)


def write_seeds_report(paths: list[Path], out_dir: str | Path | None = None,
                       options: ReportOptions | None = None) -> tuple[Path, Path, Path]:
    """Write report.md, report.html and study.json; `out_dir` defaults to the study folder when given one."""
    if out_dir is None:
        if not (len(paths) == 1 and is_study_folder(paths[0])):
            raise ValueError("--out: say where to write the report of several runs")
        out_dir = paths[0]
    report, data = build_seeds_report(paths, options)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    markdown_path, html_path, json_path = out / "report.md", out / "report.html", out / STUDY_JSON
    markdown_path.write_text(render_markdown(report))
    html_path.write_text(render_html(report))
    json_path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
    return markdown_path, html_path, json_path
