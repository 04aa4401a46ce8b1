"""`toolgym train sft` (full or LoRA), `toolgym train rft` (rejection sampling, then SFT), `toolgym train grpo`.

Each takes `--config FILE`, `--set KEY=VALUE` overrides and a few shortcut flags, all derived from the
config tree (`toolgym.config`); docs/config-reference.md lists every setting.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console

from toolgym.cli import train_grpo
from toolgym.cli.errors import settings_command, usage_error
from toolgym.config.train import RFTConfig, SFTConfig

app = typer.Typer(no_args_is_help=True)
console = Console()

SFT_SHORTCUTS = ["data", "model", "out", "eval_data", "eval_fraction", "lr", "epochs", "max_steps", "batch_tokens",
                 "grad_accum", "max_length", "schedule", "warmup_ratio", "warmup_steps", "weight_decay", "save_every",
                 ("lora.enabled", "--lora"), "merge", "precision", "device", "threads", "seed", "report_to"]
RFT_SHORTCUTS = ["tasks", "model", "out", "split", "envs", "limit", "samples_per_task", "temperature",
                 "max_new_tokens", "max_turns", "policy", "min_reward", "min_partial", "replay", "replay_ratio",
                 "device", "seed", ("sft.lr", "--lr"), ("sft.max_steps", "--max-steps"), ("sft.threads", "--threads"),
                 ("sft.lora.enabled", "--lora")]
PROGRESS = typer.Option(True, "--progress/--no-progress")


@app.command("sft")
@settings_command(SFTConfig, SFT_SHORTCUTS)
def sft(settings: SFTConfig, progress: bool = PROGRESS) -> None:
    """Train on assistant tokens only (content, tool calls, stop token); resumable; full or LoRA."""
    from toolgym.train.distributed import is_main_process
    from toolgym.train.sft import SFTError, run_sft
    from toolgym.train.sft_data import SFTDataError

    try:
        result = run_sft(settings, console=console, progress=progress)
    except (SFTError, SFTDataError, FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    if is_main_process():  # under `accelerate launch` every rank returns the same result: print it once
        console.print(result.render())


def _replay_alone_mixes_one_to_one(values: dict[str, Any]) -> None:
    if "replay" in values and "replay_ratio" not in values:
        values["replay_ratio"] = 1.0  # --replay alone mixes in as many replayed rows as kept episodes


@app.command("rft")
@settings_command(RFTConfig, RFT_SHORTCUTS, prepare=_replay_alone_mixes_one_to_one)
def rft(settings: RFTConfig, progress: bool = PROGRESS) -> None:
    """Sample K episodes per task at temperature T, keep successes (else the best partial), then SFT."""
    from toolgym.rollout.runner import RolloutError
    from toolgym.train.distributed import is_main_process
    from toolgym.train.rft import RFTError, run_rft
    from toolgym.train.sft import SFTError
    from toolgym.train.sft_data import SFTDataError

    try:
        result = run_rft(settings, console=console, progress=progress)
    except (RFTError, RolloutError, SFTError, SFTDataError, FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    if is_main_process():  # under `accelerate launch` every rank returns the same result: print it once
        console.print(result.render())


app.command("grpo")(train_grpo.grpo)
