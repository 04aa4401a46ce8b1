"""`toolgym train grpo --config FILE`: GRPO with shaped rewards, curriculum, checkpoints and resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from toolgym.cli.errors import usage_error
from toolgym.config.cli import with_config
from toolgym.config.grpo import GRPOConfig

console = Console()
GRPO_SHORTCUTS = ["tasks", "model", "out", "steps", "seed", "threads", "optim.lr", "loss.objective"]


@with_config(GRPOConfig, GRPO_SHORTCUTS)
def grpo(config: Path | None, overrides: list[str], values: dict[str, Any],
         progress: bool = typer.Option(True, "--progress/--no-progress")) -> None:
    """Sample G episodes per task with the current policy, score, group, update; eval and checkpoint as configured.
    The config file may be a GRPO config or a pipeline config (its grpo.settings)."""
    from toolgym.config import ConfigError, load_config
    from toolgym.config.loading import load_grpo_config
    from toolgym.train.distributed import is_main_process
    from toolgym.train.grpo.trainer import GRPOError, run_grpo

    try:
        if config is not None:
            settings = load_grpo_config(config, overrides, **values)
        else:
            settings = load_config(GRPOConfig, None, overrides, values)
        result = run_grpo(settings, console=console, progress=progress)
    except (ConfigError, GRPOError, FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    if is_main_process():  # under `accelerate launch` every rank returns the same result: print it once
        console.print(result.render())
