"""`toolgym report RUN_DIR`: report.md and one self-contained report.html (no network requests)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

console = Console()


def report(
    run_dir: Path = typer.Argument(..., help="A run folder: pipeline run, eval folder or rollout folder."),
    out: Path | None = typer.Option(None, "--out", help="Where to write report.md / report.html (default: RUN_DIR)."),
    k: str = typer.Option("1", "--k", help="Comma-separated k values for pass@k tables."),
    before: Path | None = typer.Option(None, "--before", help="Run folder (under RUN_DIR) to compare from."),
    after: Path | None = typer.Option(None, "--after", help="Run folder (under RUN_DIR) to compare to."),
    max_episodes: int = typer.Option(200, "--max-episodes", min=1, help="Episodes per run in the viewer."),
    train_data: list[Path] = typer.Option([], "--train-data", help="Extra training data for the leakage check."),
    title: str | None = typer.Option(None, "--title", help="Page title (default: Run <folder name>)."),
    run: list[str] = typer.Option([], "--run", help="Only these run folders (relative to RUN_DIR); repeatable."),
) -> None:
    """Dataset, stages, training curves, pass@k per env, before/after, trace diff, trajectory viewer."""
    from toolgym.cli.eval import parse_ks
    from toolgym.eval.report import ReportOptions, write_report

    options = ReportOptions(ks=parse_ks(k), before=before, after=after, max_episodes_per_run=max_episodes,
                            train_data=list(train_data), title=title, runs=list(run))
    try:
        markdown_path, html_path = write_report(run_dir, out, options)
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"wrote {markdown_path} and {html_path}")
