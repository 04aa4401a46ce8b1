"""`toolgym train grpo --config FILE`: GRPO with shaped rewards, curriculum, checkpoints and resume."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from toolgym.cli.errors import usage_error
from toolgym.config.cli import with_config
from toolgym.config.grpo import GRPOConfig

console = Console()
GRPO_SHORTCUTS = ["tasks", "model", "out", "steps", "seed", "threads", "optim.lr", "loss.objective"]
DRY_RUN_HELP = ("Validate the config, print the memory plan of one process (WORLD_SIZE processes under DDP) and "
                "exit without loading weights: 0 when it fits, 1 when it does not.")


def print_plan(settings: GRPOConfig) -> int:
    """Print the run's memory plan (from config.json alone); the exit code: 0 fits (or cannot be planned), 1 not."""
    from toolgym.config import ConfigError
    from toolgym.train.architecture import UnknownArchitecture
    from toolgym.train.grpo.preflight import grpo_preflight

    try:
        settings.check_engine()
    except ConfigError as exc:
        console.print(f"note: {exc}", markup=False, highlight=False, soft_wrap=True)
    try:
        preflight = grpo_preflight(settings, processes=int(os.environ.get("WORLD_SIZE", "1")))
    except UnknownArchitecture as exc:
        console.print(f"config valid; no memory plan: {exc}", markup=False, highlight=False, soft_wrap=True)
        return 0
    console.print(preflight.render(), markup=False, highlight=False, soft_wrap=True)
    return 0 if preflight.fits else 1


def print_trl_settings(settings: GRPOConfig) -> None:
    """backend trl: the GRPOConfig fields TRL would get (refused settings stop here, by name); TRL not imported."""
    from toolgym.integrations.trl_grpo.settings import trl_arguments
    from toolgym.train.runtime import resolve_device

    processes = int(os.environ.get("WORLD_SIZE", "1"))
    device = "cuda" if settings.engine.device == "cuda" else resolve_device(settings.engine.device)
    arguments = trl_arguments(settings, processes=processes, device=device)
    console.print(f"TRL GRPOConfig ({processes} training process(es), device {device}):", markup=False,
                  highlight=False)
    for name, value in arguments.items():
        console.print(f"  {name}: {value}", markup=False, highlight=False, soft_wrap=True)


@with_config(GRPOConfig, GRPO_SHORTCUTS)
def grpo(config: Path | None, overrides: list[str], values: dict[str, Any],
         progress: bool = typer.Option(True, "--progress/--no-progress"),
         dry_run: bool = typer.Option(False, "--dry-run", help=DRY_RUN_HELP)) -> None:
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
        if dry_run:
            if settings.backend == "trl":
                print_trl_settings(settings)
            raise typer.Exit(print_plan(settings))
        if settings.backend == "trl":
            from toolgym.integrations.trl_grpo.run import run_trl_grpo

            result = run_trl_grpo(settings, console=console)
        else:
            result = run_grpo(settings, console=console, progress=progress)
    except (ConfigError, GRPOError, FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    if is_main_process():  # under `accelerate launch` every rank returns the same result: print it once
        console.print(result.render())
