"""`toolgym report RUN_DIR...`: report.md and one self-contained report.html (no network requests).

One run folder gives the run's report; several pipeline runs of one config under different seeds, or one study
folder holding seed-<N>/ runs, give the seeds report (`toolgym.eval.report_seeds`), with study.json beside it.
Its settings are `toolgym.config.report.ReportConfig`: `--config FILE`, the shortcut flags below and
`--set KEY=VALUE` (docs/config-reference.md lists every setting).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from toolgym.cli.errors import settings_command, usage_error
from toolgym.config.report import ReportConfig

console = Console()
# Flag names older than the config tree: --k (ks), --max-episodes, --train-data and --run (runs).
REPORT_SHORTCUTS = ["out", ("ks", "--k"), "before", "after", ("max_episodes_per_run", "--max-episodes"),
                    ("train_data", "--train-data"), "title", ("runs", "--run"), "detect_points"]
ONE_RUN_ONLY = ("before", "after", "runs")


@settings_command(ReportConfig, REPORT_SHORTCUTS)
def report(
    settings: ReportConfig,
    run_dirs: list[Path] = typer.Argument(..., metavar="RUN_DIR", help="A run folder (pipeline run, eval or rollout "
                                          "folder); or several seed runs of one pipeline, or a study folder."),
) -> None:
    """Dataset, stages, training curves, pass@k per env, before/after, trace diff, trajectory viewer; over seeds:
    pooled success per stage and paired tests stratified by seed."""
    from toolgym.eval.report import write_report
    from toolgym.eval.report_seeds import write_seeds_report
    from toolgym.eval.report_seeds_runs import is_study_folder

    try:
        if len(run_dirs) > 1 or is_study_folder(run_dirs[0]):
            given = [name for name in ONE_RUN_ONLY if getattr(settings, name)]
            if given:
                raise ValueError(f"{', '.join(given)}: settings of one run's report, not of a seeds report")
            written = write_seeds_report(run_dirs, settings.out, settings.options())
        else:
            written = write_report(run_dirs[0], settings.out, settings.options())
    except (FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    console.print(f"wrote {', '.join(map(str, written[:-1]))} and {written[-1]}")
