"""The report's sections about one run folder: overview, dataset, stages, curves, results, leakage, episodes."""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from toolgym.eval import charts
from toolgym.eval.leakage import LeakageReport, PromptItem, check_leakage, read_items
from toolgym.eval.records import RunRecords
from toolgym.eval.report_document import Report, Section
from toolgym.eval.report_page import VIEWER_HTML
from toolgym.eval.report_sources import Stage, metric_rank, read_metrics, run_label
from toolgym.eval.report_viewer import choose_episodes, viewer_episode
from toolgym.eval.stats import Rate
from toolgym.eval.summary import SPLIT_GROUPS, SPLIT_TITLES, EvalSummary, count_causes
from toolgym.eval.sweep import SweepResult, sweep_tables
from toolgym.eval.tables import SPLIT_SHORT, TextTable, format_causes, summary_tables
from toolgym.eval.traces import TraceDiff
from toolgym.schema import Task

MAX_PANELS = 12


def _bar(rate: Rate) -> charts.Bar | None:
    if not rate.total:
        return None
    low, high = rate.interval
    return charts.Bar(rate.value, low, high, f"{rate.successes}/{rate.total}")


def overview_cards(report: Report, ordered: list[str], summaries: dict[str, EvalSummary],
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


def dataset_section(report: Report, tasks: list[Task], tasks_path: Path | None, runs: dict[str, RunRecords]) -> None:
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


def stages_section(report: Report, stages: list[Stage]) -> None:
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


def curves_section(report: Report, root: Path) -> None:
    section = Section("training", "Training curves", "Every numeric column of each metrics.jsonl, by step.")
    files = sorted(root.rglob("metrics.jsonl"))
    panels: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for path in files:
        source = run_label(path.parent, root)
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
                     f"From {', '.join(run_label(p.parent, root) + '/metrics.jsonl' for p in files)}.")
        if hidden:
            section.text(f"Also recorded, not plotted: {', '.join(hidden)}.", "empty")
        rate_columns = [n for n in names if "tool_call" in n.lower()]
        for column in rate_columns:
            for source, points in panels[column].items():
                if len(points) >= 4 and points[0][1] > 0 and points[-1][1] < 0.5 * points[0][1]:
                    section.callout(f"{source}: {column} fell from {points[0][1]:.3g} to {points[-1][1]:.3g} "
                                    "(possible turn collapse: the policy stops calling tools).", "bad")
    report.sections.append(section)


def results_section(report: Report, ordered: list[str], step_runs: set[str], summaries: dict[str, EvalSummary],
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


def leakage_section(report: Report, tasks: list[Task], root: Path, train_data: list[Path],
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


def viewer_section(report: Report, runs: dict[str, RunRecords], ordered: list[str], diff: TraceDiff | None,
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


def provenance_section(report: Report, manifest: dict[str, Any], summary: dict[str, Any]) -> None:
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
