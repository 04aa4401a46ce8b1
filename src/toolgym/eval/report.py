"""`toolgym report RUN_DIR`: report.md and one self-contained report.html about a run folder.

What it reads under RUN_DIR (each part optional; a missing part is said, not guessed):
- `manifest.json`, `summary.json`: provenance and pipeline stages (`stages`: a list of
  {name|stage, seconds|duration_s|elapsed_s|wall_s, status} or a {name: {...} | seconds} map); without
  them, the `seconds` recorded in sub-folders' manifest.json files;
- the dataset: `tasks.jsonl` in RUN_DIR or a sub-folder (≤ 2 deep), or a manifest's `tasks_path`;
- training curves: every `metrics.jsonl` (x = `step`, `global_step` or the row number);
- runs: every folder holding `results.jsonl` or `trial-<t>/results.jsonl` (see `toolgym.eval.records`);
  checkpoint evals in `evals/step-<N>/` also give the sweep tables (`toolgym.eval.sweep`);
- training data for the leakage check: the dataset's train split and `*sft*.jsonl` files.
"Before" and "after" are the first and last runs in stage order (untrained/base → sft → rft → grpo →
step-N), unless named; `runs` limits the report to some run folders.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgym.eval import charts
from toolgym.eval.leakage import LeakageReport, PromptItem, check_leakage, read_items
from toolgym.eval.records import RunRecords, load_run
from toolgym.eval.report_page import VIEWER_HTML, page
from toolgym.eval.report_sources import (
    CONTROL_STAGES,
    Stage,
    discover_runs,
    find_tasks_file,
    metric_rank,
    names_stage,
    pipeline_stages,
    read_json,
    read_metrics,
    stage_rank,
)
from toolgym.eval.report_viewer import choose_episodes, viewer_episode
from toolgym.eval.stage_flips import stage_flips, stage_flips_table
from toolgym.eval.stats import Rate
from toolgym.eval.summary import SPLIT_GROUPS, SPLIT_TITLES, EvalSummary, count_causes, summarize
from toolgym.eval.sweep import EVALS_DIR, SweepResult, find_evals, sweep, sweep_tables
from toolgym.eval.tables import (
    SPLIT_SHORT,
    TextTable,
    format_causes,
    format_estimate,
    format_rate,
    summary_tables,
)
from toolgym.eval.traces import TraceDiff, behaviour_table, diff_runs, success_table, tool_calls_table
from toolgym.schema import Task
from toolgym.schema.jsonl import read_models

MAX_PANELS = 12


@dataclass
class Section:
    anchor: str
    title: str
    lead: str = ""
    html_parts: list[str] = field(default_factory=list)
    md_parts: list[str] = field(default_factory=list)

    def table(self, table: TextTable) -> None:
        self.html_parts.append(table.to_html())
        self.md_parts.append(table.to_markdown())

    def text(self, text: str, css: str = "") -> None:
        css_attr = f' class="{css}"' if css else ""
        self.html_parts.append(f"<p{css_attr}>{html.escape(text)}</p>")
        self.md_parts.append(text + "\n")

    def callout(self, text: str, tone: str = "") -> None:
        self.html_parts.append(f'<div class="callout {tone}">{html.escape(text)}</div>')
        self.md_parts.append(f"> **{text}**\n")

    def heading(self, text: str) -> None:
        self.html_parts.append(f"<h3>{html.escape(text)}</h3>")
        self.md_parts.append(f"### {text}\n")


@dataclass
class Report:
    title: str
    run_dir: Path
    sections: list[Section] = field(default_factory=list)
    charts: dict[str, str] = field(default_factory=dict)  # file stem → svg
    cards: list[tuple[str, str, str]] = field(default_factory=list)  # label, value, sub
    episodes: list[dict[str, Any]] = field(default_factory=list)
    episode_ids: dict[tuple[str, str], str] = field(default_factory=dict)  # (run, path:line) → viewer id
    meta: dict[str, str] = field(default_factory=dict)
    teacher: dict[str, Any] | None = None  # summary.json's teacher numbers (pass rate, mistake mix)

    def chart(self, section: Section, stem: str, svg: str, caption: str) -> None:
        stem = re.sub(r"[^a-z0-9_-]+", "-", stem.lower()).strip("-")
        self.charts[stem] = svg
        section.html_parts.append(f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>")
        section.md_parts.append(f"![{caption}](report-charts/{stem}.svg)\n")


# -- building -------------------------------------------------------------------------------------


@dataclass
class ReportOptions:
    ks: list[int] = field(default_factory=lambda: [1])
    before: Path | None = None
    after: Path | None = None
    max_episodes_per_run: int = 200
    train_data: list[Path] = field(default_factory=list)
    title: str | None = None
    runs: list[str] = field(default_factory=list)  # run folders to include (relative to RUN_DIR); empty: all


def _bar(rate: Rate) -> charts.Bar | None:
    if not rate.total:
        return None
    low, high = rate.interval
    return charts.Bar(rate.value, low, high, f"{rate.successes}/{rate.total}")


def _run_label(path: Path, run_dir: Path) -> str:
    if path.resolve() == run_dir.resolve():
        return run_dir.name
    return str(path.resolve().relative_to(run_dir.resolve()))


def build_report(run_dir: str | Path, options: ReportOptions | None = None) -> Report:
    """Gather everything under run_dir into sections; `write_report` renders them."""
    options = options or ReportOptions()
    root = Path(run_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such run folder")
    manifest = read_json(root / "manifest.json")
    summary_json = read_json(root / "summary.json")
    report = Report(title=options.title or f"Run {root.resolve().name}", run_dir=root)
    report.teacher = summary_json.get("teacher") if isinstance(summary_json, dict) else None
    report.meta = {
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "run folder": str(root),
        **{k: str(manifest[k]) for k in ("git_commit", "policy", "toolgym_version") if manifest.get(k)},
    }

    run_paths = discover_runs(root)
    if options.runs:
        wanted = {_run_label(root / r if not Path(r).is_absolute() else Path(r), root) for r in options.runs}
        missing = wanted - {_run_label(p, root) for p in run_paths}
        if missing:
            raise ValueError(f"{', '.join(sorted(missing))}: not run folders under {root}")
        run_paths = [p for p in run_paths if _run_label(p, root) in wanted]
    runs = {_run_label(p, root): load_run(p, name=_run_label(p, root)) for p in run_paths}
    ks = sorted(set(options.ks) | {k for r in runs.values() for k in _recorded_ks(r.manifest)})
    ordered = sorted(runs, key=stage_rank)
    step_runs = {name for name in runs if name.startswith(f"{EVALS_DIR}/")}
    summaries = {name: summarize(runs[name], ks) for name in ordered}

    tasks_path = find_tasks_file(root, [manifest, *(r.manifest for r in runs.values())])
    tasks = read_models(tasks_path, Task) if tasks_path else []

    _overview_cards(report, ordered, summaries, runs)
    _dataset_section(report, tasks, tasks_path, runs)
    _stages_section(report, pipeline_stages(root, summary_json, manifest))
    _curves_section(report, root)
    sweep_result = sweep(root, k=ks[0]) if find_evals(root) else None
    _results_section(report, ordered, step_runs, summaries, sweep_result)
    before_name, after_name = _before_after(runs, ordered, step_runs, options, root)
    diff = diff_runs(runs[before_name], runs[after_name]) if before_name and after_name else None
    viewer = _viewer_section(report, runs, ordered, diff, options.max_episodes_per_run, root)  # assigns ids
    if diff is not None:
        _before_after_section(report, summaries[before_name], summaries[after_name], diff)  # type: ignore[index]
        _stage_flips(report, [runs[n] for n in ordered if n not in step_runs and not _is_control(n)])
    _leakage_section(report, tasks, root, options.train_data, runs)
    report.sections.append(viewer)
    _provenance_section(report, manifest, summary_json)
    return report


def _recorded_ks(manifest: dict[str, Any]) -> list[int]:
    """The k values an eval folder was run with (its manifest's config.ks), if any."""
    config = manifest.get("config")
    ks = config.get("ks") if isinstance(config, dict) else None
    return [int(k) for k in ks if isinstance(k, int) and k >= 1] if isinstance(ks, list) else []


def _overview_cards(report: Report, ordered: list[str], summaries: dict[str, EvalSummary],
                    runs: dict[str, RunRecords]) -> None:
    if not ordered:
        return
    last = summaries[ordered[-1]]
    for split in ("heldout_tasks", "heldout_env", "train"):
        group = last.group(split)
        if group is None:
            continue
        rate = group.total.pass_rate
        low, high = rate.interval if rate.total else (math.nan, math.nan)
        value = f"{rate.successes}/{rate.total}" if rate.total else "n/a"
        sub = f"{100 * rate.value:.1f}% · 95% CI {100 * low:.1f}–{100 * high:.1f}% · {ordered[-1]}" if rate.total else ""
        report.cards.append((f"{SPLIT_TITLES[split].split(' (')[0]} · passes", value, sub))
    teacher = report.teacher
    if teacher and teacher.get("scored"):
        mix = ", ".join(f"{kind} {n['episodes']}" for kind, n in teacher.get("mistakes", {}).items())
        report.cards.append(("Teacher · passes", f"{teacher['successes']}/{teacher['scored']}",
                             f"{100 * teacher['successes'] / teacher['scored']:.1f}% · mistakes: {mix}"))
    episodes = sum(len(r.all) for r in runs.values())
    records = [r for run in runs.values() for r in run.all]
    errored = sum(r.errored for r in records)
    causes = format_causes(count_causes(records))
    report.cards.append(("Errored episodes", f"{errored}/{episodes}",
                         f"infrastructure failures, never scored as 0{': ' + causes if causes else ''}"))


def _dataset_section(report: Report, tasks: list[Task], tasks_path: Path | None, runs: dict[str, RunRecords]) -> None:
    section = Section("dataset", "Dataset", "Tasks per environment and split.")
    splits = ["train", "heldout_tasks", "heldout_env"]
    if tasks:
        counts = Counter((t.env, t.split) for t in tasks)
        section.text(f"From {tasks_path} ({len(tasks)} tasks).")
    else:
        seen = {(r.env, r.split, r.task_id) for run in runs.values() for r in run.all}
        counts = Counter((env, split) for env, split, _ in seen)
        section.text("No tasks.jsonl found: counting the distinct tasks that appear in the runs.", "empty")
    envs = sorted({env for env, _ in counts})
    table = TextTable(title="", header=["Environment", "Train", "Held-out tasks", "Held-out env", "Total"])
    for env in envs:
        row = [counts[(env, s)] for s in splits]
        table.rows.append([env, *(f"{n:,}" for n in row), f"{sum(row):,}"])
    totals = [sum(counts[(env, s)] for env in envs) for s in splits]
    table.rows.append(["TOTAL", *(f"{n:,}" for n in totals), f"{sum(totals):,}"])
    table.emphasis.add(len(table.rows) - 1)
    section.table(table)
    report.sections.append(section)


def _stages_section(report: Report, stages: list[Stage]) -> None:
    section = Section("stages", "Pipeline stages", "Each stage of the run and its wall-clock time.")
    if not stages:
        section.text("No stage timings recorded (no summary.json stages and no manifest with seconds).", "empty")
    else:
        table = TextTable(title="", header=["Stage", "Status", "Time"], left={0, 1})
        for stage in stages:
            table.rows.append([stage.name, stage.status or "—",
                               charts.duration_text(stage.seconds) if stage.seconds is not None else "not recorded"])
        timed = [(s.name, s.seconds) for s in stages if s.seconds is not None]
        total = sum(s for _, s in timed)
        table.rows.append(["total", "", charts.duration_text(total)])
        table.emphasis.add(len(table.rows) - 1)
        if timed:
            report.chart(section, "stage-times", charts.stage_bars("Wall-clock time per stage", timed),
                         "Seconds per stage.")
        section.table(table)
    report.sections.append(section)


def _curves_section(report: Report, root: Path) -> None:
    section = Section("training", "Training curves", "Every numeric column of each metrics.jsonl, by step.")
    files = sorted(root.rglob("metrics.jsonl"))
    panels: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for path in files:
        source = _run_label(path.parent, root)
        for column, points in read_metrics(path).items():
            if len(points) >= 1:
                panels.setdefault(column, {})[source] = points
    if not panels:
        section.text("No metrics.jsonl found under the run folder.", "empty")
    else:
        names = sorted(panels, key=metric_rank)
        shown, hidden = names[:MAX_PANELS], names[MAX_PANELS:]
        svg = charts.line_panels("Training metrics", {n: panels[n] for n in shown})
        report.chart(section, "training-curves", svg,
                     f"From {', '.join(_run_label(p.parent, root) + '/metrics.jsonl' for p in files)}.")
        if hidden:
            section.text(f"Also recorded, not plotted: {', '.join(hidden)}.", "empty")
        rate_columns = [n for n in names if "tool_call" in n.lower()]
        for column in rate_columns:
            for source, points in panels[column].items():
                if len(points) >= 4 and points[0][1] > 0 and points[-1][1] < 0.5 * points[0][1]:
                    section.callout(f"{source}: {column} fell from {points[0][1]:.3g} to {points[-1][1]:.3g} "
                                    "(possible turn collapse: the policy stops calling tools).", "bad")
    report.sections.append(section)


def _results_section(report: Report, ordered: list[str], step_runs: set[str], summaries: dict[str, EvalSummary],
                     sweep_result: SweepResult | None) -> None:
    section = Section("results", "Results",
                      "Per environment and split. Errored episodes are counted, listed by cause, and left out of "
                      "every denominator.")
    if not ordered:
        section.text("No results.jsonl found under the run folder.", "empty")
        report.sections.append(section)
        return
    shown = [n for n in ordered if n not in step_runs]
    steps = [n for n in ordered if n in step_runs]
    shown += [n for n in dict.fromkeys(steps[:1] + steps[-1:])]
    panels: list[charts.BarPanel] = []
    for split, _ in SPLIT_GROUPS:
        envs = sorted({c.label for n in shown if (g := summaries[n].group(split)) for c in g.rows})
        if not envs:
            continue
        series: dict[str, list[charts.Bar | None]] = {}
        for name in shown:
            group = summaries[name].group(split)
            if group is None:
                continue
            cells = {c.label: c for c in group.rows}
            bars = [_bar(cells[e].pass_rate) if e in cells else None for e in envs]
            if len(envs) > 1:
                bars.append(_bar(group.total.pass_rate))
            series[name] = bars
        panels.append(charts.BarPanel(SPLIT_SHORT[split], [*envs, "all"] if len(envs) > 1 else envs, series))
    if panels:
        svg = charts.bar_panels("Passes / scored episodes per environment", panels, "passes (%)")
        report.chart(section, "pass-by-env", svg,
                     "Bar label: passes / scored episodes; whisker: Wilson 95% interval; one colour per run.")
    for name in shown:
        section.heading(f"Run: {name}")
        for table in summary_tables(summaries[name]):
            section.table(table)
    if sweep_result is not None:
        section.heading(f"Checkpoint sweep (pass@{sweep_result.k})")
        curves = {}
        for split, _ in SPLIT_GROUPS:
            points = [(s, e) for s, e in sweep_result.curve(split) if e.available]
            if points:
                curves[SPLIT_SHORT[split]] = [(s, charts.Bar(e.value, *e.interval, f"{e.expected:.1f}/{e.tasks}")) for s, e in points]
        if curves:
            report.chart(section, "sweep", charts.step_curve(f"pass@{sweep_result.k} by step", curves,
                                                             f"pass@{sweep_result.k} (%)"),
                         "All environments of each split; labels: expected tasks solved / tasks; band: Wilson 95%.")
        for table in sweep_tables(sweep_result):
            section.table(table)
    report.sections.append(section)


def _before_after(runs: dict[str, RunRecords], ordered: list[str], step_runs: set[str], options: ReportOptions,
                  root: Path) -> tuple[str | None, str | None]:
    def resolve(path: Path | None) -> str | None:
        if path is None:
            return None
        label = _run_label(path if path.is_absolute() else root / path, root)
        if label not in runs:
            raise ValueError(f"{path}: not a run folder under {root} (runs: {', '.join(runs) or 'none'})")
        return label

    before, after = resolve(options.before), resolve(options.after)
    candidates = [n for n in ordered if n not in step_runs] or ordered
    if step_runs and len(candidates) < 2:
        steps = [n for n in ordered if n in step_runs]
        candidates = [steps[0], steps[-1]] if len(steps) > 1 else candidates
    if before is None and len(candidates) > 1:
        before = candidates[0]
    if after is None and len(candidates) > 1:
        after = candidates[-1]
    if before == after:
        return None, None
    return before, after


def _before_after_section(report: Report, before: EvalSummary, after: EvalSummary, diff: TraceDiff) -> None:
    section = Section("before-after", "Before / after",
                      f"A = {before.name} (before), B = {after.name} (after), on the same tasks.")
    k_max = max(before.ks)
    for split, title in SPLIT_GROUPS:
        group_a, group_b = before.group(split), after.group(split)
        if group_a is None or group_b is None:
            continue
        header = ["Environment", "Before: passes", "After: passes", "Δ"]
        if k_max > 1:
            header += [f"Before pass@{k_max}", f"After pass@{k_max}"]
        table = TextTable(title=title, header=header)
        cells_a = {c.label: c for c in [*group_a.rows, group_a.total]}
        cells_b = {c.label: c for c in [*group_b.rows, group_b.total]}
        labels = [c.label for c in group_a.rows if c.label in cells_b]
        if len(labels) > 1:
            labels.append(group_a.total.label)
        for label in labels:
            a, b = cells_a[label], cells_b[label]
            delta = "—"
            if a.scored and b.scored:
                delta = f"{100 * (b.pass_rate.value - a.pass_rate.value):+.1f} pp"
            row = [label, format_rate(a.pass_rate), format_rate(b.pass_rate), delta]
            if k_max > 1:
                row += [format_estimate(a.pass_at[k_max]), format_estimate(b.pass_at[k_max])]
            table.rows.append(row)
            if label == group_a.total.label:
                table.emphasis.add(len(table.rows) - 1)
        table.notes = ["Δ: difference of passes / scored episodes. Both runs scored the same tasks, so their "
                       "rates are not independent samples: the paired test is in the trace diff."]
        section.table(table)
    report.sections.append(section)
    measure = "their greedy passes" if diff.measure == "greedy" else "their sampled episodes"
    trace = Section("trace-diff", "Trace diff",
                    f"How behaviour changed between the two runs ({measure}), and which tasks flipped.")
    trace.table(success_table(diff))
    trace.table(behaviour_table(diff))
    trace.table(tool_calls_table(diff))
    _flips(trace, diff, report.episode_ids)
    report.sections.append(trace)
    report.meta["compared"] = f"{before.name} → {after.name}"


def _is_control(name: str) -> bool:
    return any(names_stage(name, word) for word in CONTROL_STAGES)


def _stage_flips(report: Report, runs: list[RunRecords]) -> None:
    """With three or more runs of the same tasks: what each one won and lost against the one before it."""
    chain = stage_flips(runs)
    if len(chain) < 2:
        return
    section = Section("stage-flips", "Stage by stage", "Which tasks each run won and lost against the one before it, "
                      "by task family.")
    section.table(stage_flips_table(chain))
    report.sections.append(section)


def _episode_link(episode_id: str | None, text: str) -> str:
    if episode_id is None:  # not among the episodes embedded in the viewer
        return f'<span class="muted">{html.escape(text)}</span>'
    return f'<a href="#ep={html.escape(episode_id, quote=True)}">{html.escape(text)}</a>'


def _flips(section: Section, diff: TraceDiff, episode_ids: dict[tuple[str, str], str]) -> None:
    title = f"Tasks that flipped ({len(diff.fail_to_pass)} fail→pass, {len(diff.pass_to_fail)} pass→fail)"
    section.heading(title)
    if not diff.flips:
        section.text("No task flipped between the two runs.", "empty")
        return
    rows_html, rows_md = [], ["| Task | Env | Split | Direction | A passes | B passes | Episodes |", "|---|---|---|---|---:|---:|---|"]
    for flip in sorted(diff.flips, key=lambda f: (f.direction, f.env, f.task_id)):
        links = " ".join(
            _episode_link(episode_ids.get((run, r.location)), f"{side}{'·' + r.trial if r.trial else ''}#{r.sample_index}")
            for side, run, records in (("A", diff.a.name, flip.a_records), ("B", diff.b.name, flip.b_records))
            for r in records
        )
        rows_html.append(
            f'<tr><td class="l"><code>{html.escape(flip.task_id)}</code></td><td class="l">{html.escape(flip.env)}</td>'
            f'<td class="l">{html.escape(flip.split)}</td><td class="l">{flip.direction}</td>'
            f'<td class="r">{flip.a_passes}/{flip.pairs}</td><td class="r">{flip.b_passes}/{flip.pairs}</td>'
            f'<td class="l">{links}</td></tr>'
        )
        where = ", ".join(r.location for r in flip.a_records + flip.b_records)
        rows_md.append(f"| {flip.task_id} | {flip.env} | {flip.split} | {flip.direction} | "
                       f"{flip.a_passes}/{flip.pairs} | {flip.b_passes}/{flip.pairs} | {where} |")
    section.html_parts.append(
        '<div class="table-wrap"><table><thead><tr><th class="l">Task</th><th class="l">Env</th><th class="l">Split</th>'
        '<th class="l">Direction</th><th class="r">A passes</th><th class="r">B passes</th><th class="l">Episodes</th>'
        "</tr></thead><tbody>" + "".join(rows_html) + "</tbody></table>"
        '<ul class="notes"><li>Solved = at least one paired sample passed. Links open the episode in the '
        "trajectory viewer (A = before, B = after, with the sample index).</li></ul></div>"
    )
    section.md_parts.append("\n".join(rows_md) + "\n")


def _leakage_section(report: Report, tasks: list[Task], root: Path, train_data: list[Path],
                     runs: dict[str, RunRecords]) -> None:
    section = Section("leakage", "Leakage check",
                      "Eval tasks against the training data, by task id and by normalized prompt.")
    train: list[PromptItem] = [PromptItem(t.id, t.prompt, "tasks.jsonl (train split)") for t in tasks if t.split == "train"]
    sft_files = sorted(root.rglob("*sft*.jsonl")) + list(train_data)
    for path in sft_files:
        train += read_items(path, train_only=True)
    if tasks:
        evals = [PromptItem(t.id, t.prompt, "tasks.jsonl (held-out)") for t in tasks if t.split != "train"]
    else:
        seen: dict[str, PromptItem] = {}
        for run in runs.values():
            for record in run.all:
                if record.split != "train" and record.task_id not in seen:
                    prompt = next((m.get("content") or "" for m in record.row.get("prompt") or []
                                   if m.get("role") == "user"), "")
                    seen[record.task_id] = PromptItem(record.task_id, prompt, record.location)
        evals = list(seen.values())
    if not train or not evals:
        section.text("Not checked: no training data (tasks.jsonl train split or *sft*.jsonl) "
                     "or no held-out tasks under the run folder.", "empty")
    else:
        result: LeakageReport = check_leakage(train, evals)
        section.callout(result.headline(), "good" if result.clean else "bad")
        if sft_files:
            section.text("Training data read: tasks.jsonl train split, " + ", ".join(str(p) for p in sft_files) + ".")
        if not result.clean:
            table = TextTable(title="", header=["Eval task", "Matched by", "Training item", "Where"], left={0, 1, 2, 3})
            for overlap in result.overlaps[:200]:
                table.rows.append([str(overlap.eval_item.task_id), overlap.by, str(overlap.train_item.task_id),
                                   overlap.train_item.origin])
            section.table(table)
    report.sections.append(section)


def _viewer_section(report: Report, runs: dict[str, RunRecords], ordered: list[str], diff: TraceDiff | None,
                    cap: int, root: Path) -> Section:
    """Choose the embedded episodes (flipped tasks first, then a mix of outcomes) and give each an id."""
    section = Section("trajectories", "Trajectories",
                      "Filter by run, environment, status or task; each episode shows its messages, tool calls "
                      "and results, and its checks.")
    flipped = {f.task_id for f in diff.flips} if diff else set()
    notes = []
    for name in ordered:
        run = runs[name]
        records = run.all
        chosen = choose_episodes(records, cap, flipped)
        if len(chosen) < len(records):
            notes.append(f"{name}: {len(chosen)} of {len(records)} episodes shown (raise --max-episodes for more)")
        for record in chosen:
            episode_id = f"e{len(report.episodes)}"
            report.episodes.append(viewer_episode(record, name, episode_id, root))
            report.episode_ids[(name, record.location)] = episode_id
    if not report.episodes:
        section.text("No episodes to show.", "empty")
    else:
        section.html_parts.append(VIEWER_HTML)
        section.md_parts.append(f"{len(report.episodes)} episodes are browsable in report.html.\n")
    for note in notes:
        section.text(note, "empty")
    return section


def _provenance_section(report: Report, manifest: dict[str, Any], summary: dict[str, Any]) -> None:
    section = Section("provenance", "Provenance", "The run's manifest.json and summary.json as recorded.")
    for name, data in (("manifest.json", manifest), ("summary.json", summary)):
        if data:
            body = html.escape(json.dumps(data, indent=2, default=str))
            section.html_parts.append(f'<details class="raw"><summary>{name}</summary><pre>{body}</pre></details>')
            section.md_parts.append(f"<details><summary>{name}</summary>\n\n```json\n"
                                    f"{json.dumps(data, indent=2, default=str)}\n```\n</details>\n")
    if not manifest and not summary:
        section.text("No manifest.json or summary.json in the run folder.", "empty")
    report.sections.append(section)


# -- rendering ------------------------------------------------------------------------------------


def render_html(report: Report) -> str:
    cards = "".join(
        f'<div class="card"><div class="label">{html.escape(label)}</div><div class="value">{html.escape(value)}</div>'
        f'<div class="sub">{html.escape(sub)}</div></div>' for label, value, sub in report.cards
    )
    body = [f'<section class="cards">{cards}</section>'] if cards else []
    for section in report.sections:
        lead = f'<p class="lead">{html.escape(section.lead)}</p>' if section.lead else ""
        body.append(f'<section class="block" id="{section.anchor}"><h2>{html.escape(section.title)}</h2>{lead}'
                    + "".join(section.html_parts) + "</section>")
    meta = " · ".join(f"{html.escape(k)} <code>{html.escape(v)}</code>" for k, v in report.meta.items())
    nav = [(s.anchor, s.title) for s in report.sections]
    return page(report.title, meta, nav, "".join(body), {"episodes": report.episodes})


def render_markdown(report: Report) -> str:
    lines = [f"# {report.title}", ""]
    lines += [f"- {k}: `{v}`" for k, v in report.meta.items()]
    lines.append("")
    if report.cards:
        lines += ["| " + " | ".join(c[0] for c in report.cards) + " |", "|" + "---|" * len(report.cards),
                  "| " + " | ".join(f"{c[1]} ({c[2]})" if c[2] else c[1] for c in report.cards) + " |", ""]
    for section in report.sections:
        lines += [f"## {section.title}", ""]
        if section.lead:
            lines += [section.lead, ""]
        lines += section.md_parts
        lines.append("")
    return "\n".join(lines)


def write_report(run_dir: str | Path, out_dir: str | Path | None = None,
                 options: ReportOptions | None = None) -> tuple[Path, Path]:
    """Build and write report.md (+ report-charts/*.svg) and the self-contained report.html."""
    report = build_report(run_dir, options)
    out = Path(out_dir) if out_dir is not None else Path(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    chart_dir = out / "report-charts"
    chart_dir.mkdir(exist_ok=True)
    for stem, svg in report.charts.items():
        (chart_dir / f"{stem}.svg").write_text('<?xml version="1.0" encoding="utf-8"?>\n' + svg + "\n")
    markdown_path = out / "report.md"
    html_path = out / "report.html"
    markdown_path.write_text(render_markdown(report))
    html_path.write_text(render_html(report))
    return markdown_path, html_path
