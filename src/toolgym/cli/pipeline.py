"""`toolgym pipeline CONFIG`: the whole job in one run folder, resumable stage by stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from toolgym.cli.errors import usage_error
from toolgym.config.cli import with_config
from toolgym.config.pipeline import PipelineConfig

console = Console()
PIPELINE_SHORTCUTS = ["out"]


@with_config(PipelineConfig, PIPELINE_SHORTCUTS,
             config_argument="Pipeline config (YAML), e.g. configs/quickstart.yaml.")
def pipeline(
    config: Path, overrides: list[str], values: dict[str, Any],
    only: str | None = typer.Option(None, "--only", help="Comma-separated stages to run (the rest are left as they are)."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Build tasks → validate → teacher → SFT → RFT → GRPO → eval → report; a stage with output is skipped.
    With study.seeds: one run per seed in OUT/seed-<N> (and GRPO variants), then a report over the seeds."""
    from toolgym.config import ConfigError
    from toolgym.pipeline.config import STAGES, load_pipeline_config
    from toolgym.pipeline.run import PipelineError, render_summary, run_pipeline

    stages = [s for s in (only or "").split(",") if s] or None
    unknown = [s for s in stages or [] if s not in STAGES]
    if unknown:
        console.print(f"[red]error:[/red] --only: unknown stage(s) {', '.join(unknown)}; stages: {', '.join(STAGES)}")
        raise typer.Exit(2)
    try:
        settings = load_pipeline_config(config, out=values.get("out"), overrides=overrides)
        if settings.study.seeds:  # several seeds (and GRPO variants), then the report over them
            from toolgym.pipeline.study import run_study

            study = run_study(settings, console=console, progress=progress, only=stages)
            console.print(study["text"])
            console.print(f"report: {', '.join(study['report'] or ['none'])}")
            return
        summary = run_pipeline(settings, console=console, progress=progress, only=stages)
    except ConfigError as exc:
        raise usage_error(exc) from exc
    except PipelineError as exc:
        console.print(f"[red]error:[/red] {exc}")
        summary_file = Path(values["out"]) / "summary.json" if values.get("out") else None
        if summary_file is not None:
            console.print(f"summary so far: {summary_file}")
        raise typer.Exit(1) from exc
    console.print(render_summary(summary))
    console.print(f"summary: {Path(settings.out) / 'summary.json'}")
