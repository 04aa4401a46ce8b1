"""`toolgym train sft` (full or LoRA) and `toolgym train rft` (rejection sampling, then SFT)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from toolgym.cli import train_grpo

app = typer.Typer(no_args_is_help=True)
console = Console()

# Training options shared by `sft` and `rft` (the same flags mean the same thing in both).
LR = typer.Option(1e-4, "--lr", min=0.0, help="Peak learning rate.")
EPOCHS = typer.Option(1, "--epochs", min=1, help="Passes over the data (ignored with --max-steps).")
MAX_STEPS = typer.Option(None, "--max-steps", min=1, help="Optimizer steps (cycles epochs as needed).")
SCHEDULE = typer.Option("cosine", "--schedule", help="cosine | linear | constant (after warmup).")
WARMUP_RATIO = typer.Option(0.03, "--warmup-ratio", min=0.0, max=1.0, help="Warmup steps as a fraction of all steps.")
WEIGHT_DECAY = typer.Option(0.0, "--weight-decay", min=0.0)
BATCH_TOKENS = typer.Option(8192, "--batch-tokens", min=1, help="Padded tokens per micro-batch (length-bucketed).")
GRAD_ACCUM = typer.Option(1, "--grad-accum", min=1, help="Micro-batches per optimizer step.")
MAX_LENGTH = typer.Option(None, "--max-length", min=2, help="Longest sample kept (default: the model's context).")
SAVE_EVERY = typer.Option(100, "--save-every", min=1, help="Checkpoint (and evaluate) every N steps.")
EVAL_EVERY = typer.Option(0, "--eval-every", min=0, help="Evaluate every N steps (0: at each checkpoint).")
EVAL_FRACTION = typer.Option(0.05, "--eval-fraction", min=0.0, max=0.9, help="Tasks held out for eval loss.")
LORA = typer.Option(False, "--lora", help="Train a LoRA adapter instead of all weights.")
LORA_RANK = typer.Option(32, "--lora-rank", min=1)
LORA_ALPHA = typer.Option(64, "--lora-alpha", min=1)
LORA_DROPOUT = typer.Option(0.05, "--lora-dropout", min=0.0, max=1.0)
TARGET_MODULES = typer.Option(
    "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", "--target-modules",
    help="Comma-separated module names that get LoRA adapters.")
MERGE = typer.Option(False, "--merge", help="LoRA: also write the merged model to OUT/merged.")
PRECISION = typer.Option("auto", "--precision", help="auto (bf16 where the hardware has it) | bf16 | fp32.")
DEVICE = typer.Option("auto", "--device", help="auto | cpu | cuda.")
THREADS = typer.Option(None, "--threads", min=1, help="torch CPU threads.")
SEED = typer.Option(0, "--seed")
REPORT_TO = typer.Option("", "--report-to", help="Comma-separated: tensorboard, wandb (must be installed).")
PROGRESS = typer.Option(True, "--progress/--no-progress")


def _sft_fields(lr: float, epochs: int, max_steps: int | None, schedule: str, warmup_ratio: float,
                weight_decay: float, batch_tokens: int, grad_accum: int, max_length: int | None, save_every: int,
                eval_every: int, eval_fraction: float, lora: bool, lora_rank: int, lora_alpha: int,
                lora_dropout: float, target_modules: str, merge: bool, precision: str, threads: int | None,
                report_to: str) -> dict[str, Any]:
    return {
        "lr": lr, "epochs": epochs, "max_steps": max_steps, "schedule": schedule, "warmup_ratio": warmup_ratio,
        "weight_decay": weight_decay, "batch_tokens": batch_tokens, "grad_accum": grad_accum,
        "max_length": max_length, "save_every": save_every, "eval_every": eval_every,
        "eval_fraction": eval_fraction, "lora": lora, "lora_rank": lora_rank, "lora_alpha": lora_alpha,
        "lora_dropout": lora_dropout, "target_modules": [m for m in target_modules.split(",") if m],
        "merge": merge, "precision": precision, "threads": threads,
        "report_to": [r for r in report_to.split(",") if r],
    }


@app.command("sft")
def sft(
    data: Path = typer.Option(..., "--data", help="SFT rows (from `toolgym data convert`)."),
    model: Path = typer.Option(..., "--model", help="Model folder (config.json, weights, tokenizer[, toolgym.json])."),
    out: Path = typer.Option(..., "--out", help="Run folder: checkpoints, best/, final/, metrics.jsonl; re-run to resume."),
    eval_data: Path | None = typer.Option(None, "--eval-data", help="SFT rows for eval loss (default: held-out tasks)."),
    render_mode: str = typer.Option("rollout", "--render-mode",
                                    help="Rows without token samples: rollout (as toolgym's loop renders) | template."),
    token_samples: str = typer.Option("auto", "--token-samples", help="auto | always | never use rows' token samples."),
    gradient_checkpointing: bool = typer.Option(False, "--gradient-checkpointing"),
    enable_thinking: bool = typer.Option(False, "--enable-thinking",
                                         help="Render rows with the template's thinking on (rollouts use off)."),
    dtype: str = typer.Option("float32", "--dtype", help="Weights dtype: float32 | bfloat16."),
    lr: float = LR, epochs: int = EPOCHS, max_steps: int | None = MAX_STEPS, schedule: str = SCHEDULE,
    warmup_ratio: float = WARMUP_RATIO, weight_decay: float = WEIGHT_DECAY, batch_tokens: int = BATCH_TOKENS,
    grad_accum: int = GRAD_ACCUM, max_length: int | None = MAX_LENGTH, save_every: int = SAVE_EVERY,
    eval_every: int = EVAL_EVERY, eval_fraction: float = EVAL_FRACTION, lora: bool = LORA,
    lora_rank: int = LORA_RANK, lora_alpha: int = LORA_ALPHA, lora_dropout: float = LORA_DROPOUT,
    target_modules: str = TARGET_MODULES, merge: bool = MERGE, precision: str = PRECISION, device: str = DEVICE,
    threads: int | None = THREADS, seed: int = SEED, report_to: str = REPORT_TO, progress: bool = PROGRESS,
) -> None:
    """Train on assistant tokens only (content, tool calls, stop token); resumable; full or LoRA."""
    from toolgym.train.sft import SFTConfig, SFTError, run_sft
    from toolgym.train.sft_data import SFTDataError

    fields = _sft_fields(lr, epochs, max_steps, schedule, warmup_ratio, weight_decay, batch_tokens, grad_accum,
                         max_length, save_every, eval_every, eval_fraction, lora, lora_rank, lora_alpha,
                         lora_dropout, target_modules, merge, precision, threads, report_to)
    try:
        config = SFTConfig(data=str(data), model=str(model), out=str(out),
                           eval_data=str(eval_data) if eval_data else None, render_mode=render_mode,  # type: ignore[arg-type]
                           token_samples=token_samples, gradient_checkpointing=gradient_checkpointing,  # type: ignore[arg-type]
                           enable_thinking=enable_thinking,
                           dtype=dtype, device=device, seed=seed, **fields)
        result = run_sft(config, console=console, progress=progress)
    except (SFTError, SFTDataError, FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(result.render())


@app.command("rft")
def rft(
    tasks: Path = typer.Option(..., "--tasks", help="Dataset folder (tasks.jsonl) or a tasks.jsonl file."),
    model: Path = typer.Option(..., "--model", help="Model folder to sample from and fine-tune."),
    out: Path = typer.Option(..., "--out", help="Run folder: rollout/, rft_rows.jsonl, sft/; re-run to resume."),
    split: str = typer.Option("train", "--split", help="Tasks to sample (train; never the held-out splits you report)."),
    env: str | None = typer.Option(None, "--env", help="Comma-separated environments to keep."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="N of the selected tasks, drawn with --seed."),
    samples_per_task: int = typer.Option(8, "--samples-per-task", min=1, help="K episodes per task."),
    temperature: float = typer.Option(0.8, "--temperature", min=0.0),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0),
    max_new_tokens: int = typer.Option(512, "--max-new-tokens", min=1),
    max_turns: int = typer.Option(20, "--max-turns", min=1),
    max_context_tokens: int = typer.Option(4096, "--max-context-tokens", min=1),
    timeout: float = typer.Option(120.0, "--timeout", min=0.1, help="Wall clock per episode, seconds."),
    concurrency: int = typer.Option(8, "--concurrency", min=1),
    max_batch_size: int = typer.Option(32, "--max-batch-size", min=1),
    policy: str | None = typer.Option(
        None, "--policy", help="Sample with this policy spec instead of hf:MODEL (e.g. openai:URL#MODEL#token)."),
    min_reward: float = typer.Option(1.0, "--min-reward", help="Keep every episode with reward ≥ this."),
    min_partial: float = typer.Option(0.6, "--min-partial",
                                      help="Else keep the task's best episode if its partial_score ≥ this."),
    dedupe: bool = typer.Option(False, "--dedupe", help="Drop identical kept episodes."),
    replay: Path | None = typer.Option(None, "--replay", help="SFT rows (e.g. the teacher's) to mix into the fine-tune."),
    replay_ratio: float = typer.Option(1.0, "--replay-ratio", min=0.0,
                                       help="With --replay: replayed rows per kept episode."),
    lr: float = LR, epochs: int = EPOCHS, max_steps: int | None = MAX_STEPS, schedule: str = SCHEDULE,
    warmup_ratio: float = WARMUP_RATIO, weight_decay: float = WEIGHT_DECAY, batch_tokens: int = BATCH_TOKENS,
    grad_accum: int = GRAD_ACCUM, max_length: int | None = MAX_LENGTH, save_every: int = SAVE_EVERY,
    eval_every: int = EVAL_EVERY, eval_fraction: float = EVAL_FRACTION, lora: bool = LORA,
    lora_rank: int = LORA_RANK, lora_alpha: int = LORA_ALPHA, lora_dropout: float = LORA_DROPOUT,
    target_modules: str = TARGET_MODULES, merge: bool = MERGE, precision: str = PRECISION,
    device: str = typer.Option("cpu", "--device", help="cpu | cuda (sampling and training)."),
    threads: int | None = THREADS, seed: int = SEED, report_to: str = REPORT_TO, progress: bool = PROGRESS,
) -> None:
    """Sample K episodes per task at temperature T, keep successes (else the best partial), then SFT."""
    from toolgym.rollout.runner import RolloutError
    from toolgym.train.rft import RFTConfig, RFTError, run_rft
    from toolgym.train.sft import SFTError
    from toolgym.train.sft_data import SFTDataError

    fields = _sft_fields(lr, epochs, max_steps, schedule, warmup_ratio, weight_decay, batch_tokens, grad_accum,
                         max_length, save_every, eval_every, eval_fraction, lora, lora_rank, lora_alpha,
                         lora_dropout, target_modules, merge, precision, threads, report_to)
    config = RFTConfig(
        tasks=str(tasks), model=str(model), out=str(out), split=split,
        envs=[e for e in (env or "").split(",") if e] or None, limit=limit, samples_per_task=samples_per_task,
        temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, max_turns=max_turns,
        max_context_tokens=max_context_tokens, timeout_s=timeout, concurrency=concurrency,
        max_batch_size=max_batch_size, policy=policy, device=device, seed=seed, min_reward=min_reward, min_partial=min_partial,
        dedupe=dedupe, replay=str(replay) if replay else None, replay_ratio=replay_ratio if replay else 0.0,
        sft=fields,
    )
    try:
        result = run_rft(config, console=console, progress=progress)
    except (RFTError, RolloutError, SFTError, SFTDataError, FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(result.render())


app.command("grpo")(train_grpo.grpo)
