"""`toolgym report RUN_DIR`: report.md and one self-contained report.html (no network requests).

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
                    ("train_data", "--train-data"), "title", ("runs", "--run")]


@settings_command(ReportConfig, REPORT_SHORTCUTS)
def report(
    settings: ReportConfig,
    run_dir: Path = typer.Argument(..., help="A run folder: pipeline run, eval folder or rollout folder."),
) -> None:
    """Dataset, stages, training curves, pass@k per env, before/after, trace diff, trajectory viewer."""
    from toolgym.eval.report import write_report
    try:
        markdown_path, html_path = write_report(run_dir, settings.out, settings.options())
    except (FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    console.print(f"wrote {markdown_path} and {html_path}")
