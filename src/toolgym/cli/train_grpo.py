"""`toolgym train grpo --config FILE`: GRPO with shaped rewards, curriculum, checkpoints and resume."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

console = Console()


def grpo(
    config: Path = typer.Option(..., "--config", help="GRPO config (YAML): tasks, model, out and the settings."),
    out: Path | None = typer.Option(None, "--out", help="Run folder (overrides the config's out); re-run to resume."),
    model: Path | None = typer.Option(None, "--model", help="Model folder (overrides the config's model)."),
    tasks: Path | None = typer.Option(None, "--tasks", help="Dataset folder or tasks.jsonl (overrides the config's)."),
    steps: int | None = typer.Option(None, "--steps", min=1, help="GRPO steps (overrides the config's)."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Sample G episodes per task with the current policy, score, group, update; eval and checkpoint as configured."""
    from toolgym.train.grpo.config import ConfigError, load_grpo_config
    from toolgym.train.grpo.trainer import GRPOError, run_grpo

    try:
        settings = load_grpo_config(config, out=str(out) if out else None, model=str(model) if model else None,
                                    tasks=str(tasks) if tasks else None, steps=steps)
        result = run_grpo(settings, console=console, progress=progress)
    except (ConfigError, GRPOError, FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(result.render())
