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
from pathlib import Path
from typing import Any

from toolgym.config.report import ReportOptions as ReportOptions
from toolgym.eval.records import RunRecords, load_run, read_run_json
from toolgym.eval.report_compare import before_after_section, is_control, stage_flips_section
from toolgym.eval.report_document import Report, render_html, render_markdown
from toolgym.eval.report_sections import (
    curves_section,
    dataset_section,
    leakage_section,
    overview_cards,
    provenance_section,
    results_section,
    stages_section,
    viewer_section,
)
from toolgym.eval.report_sources import (
    discover_runs,
    find_tasks_file,
    pipeline_stages,
    run_label,
    stage_rank,
)
from toolgym.eval.summary import summarize
from toolgym.eval.sweep import EVALS_DIR, find_evals, sweep
from toolgym.eval.traces import diff_runs
from toolgym.schema import Task
from toolgym.schema.jsonl import read_models

__all__ = ["Report", "ReportOptions", "build_report", "render_html", "render_markdown", "write_report"]


def build_report(run_dir: str | Path, options: ReportOptions | None = None) -> Report:
    """Gather everything under run_dir into sections; `write_report` renders them."""
    options = options or ReportOptions()
    root = Path(run_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such run folder")
    manifest = read_run_json(root / "manifest.json")
    summary_json = read_run_json(root / "summary.json")
    report = Report(title=options.title or f"Run {root.resolve().name}", run_dir=root)
    report.teacher = summary_json.get("teacher") if isinstance(summary_json, dict) else None
    report.meta = {
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "run folder": str(root),
        **{k: str(manifest[k]) for k in ("git_commit", "policy", "toolgym_version") if manifest.get(k)},
    }

    run_paths = discover_runs(root)
    if options.runs:
        wanted = {run_label(root / r if not Path(r).is_absolute() else Path(r), root) for r in options.runs}
        missing = wanted - {run_label(p, root) for p in run_paths}
        if missing:
            raise ValueError(f"{', '.join(sorted(missing))}: not run folders under {root}")
        run_paths = [p for p in run_paths if run_label(p, root) in wanted]
    runs = {run_label(p, root): load_run(p, name=run_label(p, root)) for p in run_paths}
    ks = sorted(set(options.ks) | {k for r in runs.values() for k in _recorded_ks(r.manifest)})
    ordered = sorted(runs, key=stage_rank)
    step_runs = {name for name in runs if name.startswith(f"{EVALS_DIR}/")}
    summaries = {name: summarize(runs[name], ks) for name in ordered}

    tasks_path = find_tasks_file(root, [manifest, *(r.manifest for r in runs.values())])
    tasks = read_models(tasks_path, Task) if tasks_path else []

    overview_cards(report, ordered, summaries, runs)
    dataset_section(report, tasks, tasks_path, runs)
    stages_section(report, pipeline_stages(root, summary_json, manifest))
    curves_section(report, root)
    sweep_result = sweep(root, k=ks[0]) if find_evals(root) else None
    results_section(report, ordered, step_runs, summaries, sweep_result)
    before_name, after_name = _before_after(runs, ordered, step_runs, options, root)
    diff = diff_runs(runs[before_name], runs[after_name]) if before_name and after_name else None
    viewer = viewer_section(report, runs, ordered, diff, options.max_episodes_per_run, root)  # assigns ids
    if diff is not None:
        before_after_section(report, summaries[before_name], summaries[after_name], diff)  # type: ignore[index]
        stage_flips_section(report, [runs[n] for n in ordered if n not in step_runs and not is_control(n)])
    leakage_section(report, tasks, root, options.train_data, runs)
    report.sections.append(viewer)
    provenance_section(report, manifest, summary_json)
    return report


def _recorded_ks(manifest: dict[str, Any]) -> list[int]:
    """The k values an eval folder was run with (its manifest's config.ks), if any."""
    config = manifest.get("config")
    ks = config.get("ks") if isinstance(config, dict) else None
    return [int(k) for k in ks if isinstance(k, int) and k >= 1] if isinstance(ks, list) else []


def _before_after(runs: dict[str, RunRecords], ordered: list[str], step_runs: set[str], options: ReportOptions,
                  root: Path) -> tuple[str | None, str | None]:
    def resolve(path: Path | None) -> str | None:
        if path is None:
            return None
        label = run_label(path if path.is_absolute() else root / path, root)
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
