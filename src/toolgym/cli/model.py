"""`toolgym model init-tiny | pretrain-tiny | verify-default`: build, pre-train and check the tiny model.

Each reads its settings from `toolgym.config.model` (`--config FILE`, the shortcut flags below,
`--set KEY=VALUE`; docs/config-reference.md lists every setting), e.g.
`toolgym model pretrain-tiny OUT --config recipe.yaml --set train.lr=1e-3 --steps 10`.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from toolgym.cli.errors import settings_command, usage_error
from toolgym.config.model import InitTinyConfig, PretrainTinyConfig, VerifyDefaultConfig

app = typer.Typer(no_args_is_help=True)
console = Console()
INIT_TINY_SHORTCUTS = ["hidden_size", "layers", "heads", "kv_heads", "seed", "prompt_style", "context_length",
                       "vocab_size"]
# --seed sets both seeds (the run's follows the recipe's); --steps and --threads keep their older names.
PRETRAIN_TINY_SHORTCUTS = ["seed", ("train.steps", "--steps"), ("train.threads", "--threads")]
VERIFY_DEFAULT_SHORTCUTS = ["steps", "tolerance"]


@app.command("init-tiny")
@settings_command(InitTinyConfig, INIT_TINY_SHORTCUTS)
def init_tiny_command(
    settings: InitTinyConfig,
    out: Path = typer.Argument(..., help="Folder to write the model, tokenizer and toolgym.json into."),
) -> None:
    """Train the tokenizer on the env suite and write a randomly initialised Qwen3ForCausalLM."""
    from toolgym.model.tiny import init_tiny
    try:
        path = init_tiny(out, **settings.model_dump())
    except ValueError as exc:  # a shape whose heads do not divide: said in the model layer's words
        raise usage_error(exc) from exc
    files = ", ".join(sorted(p.name for p in path.iterdir()))
    console.print(f"wrote tiny model to [bold]{path}[/bold]: {files}")


def _warn_if_bf16_is_emulated(bf16: bool, advice: str) -> None:
    """Say before a long run starts that this machine will take many times the recorded CPU time."""
    from toolgym.model.pretrain.train import EMULATED_BF16_COST, fast_bf16

    if bf16 and not fast_bf16():
        console.print(
            "[yellow]note:[/yellow] this CPU has no native bfloat16 (oneDNN: no AVX-512/AMX bf16), so the recipe's "
            f"bf16 autocast is emulated, about 14x slower than fp32 ({EMULATED_BF16_COST}). The recorded losses "
            f"need bf16, so fp32 is no way around it; {advice}."
        )


@app.command("pretrain-tiny")
@settings_command(PretrainTinyConfig, PRETRAIN_TINY_SHORTCUTS)
def pretrain_tiny_command(
    settings: PretrainTinyConfig,
    out: Path = typer.Argument(..., help="Folder to write the pre-trained model, tokenizer, toolgym.json and MODEL_CARD.md."),
) -> None:
    """Pre-train the tiny default model from scratch on the generic synthetic tool-use corpus (CPU)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from toolgym.model.pretrain.recipe import pretrain_tiny

    _warn_if_bf16_is_emulated(settings.train.bf16, "the model card's CPU time was measured where bf16 is native")
    columns = (TextColumn("[bold]pre-training[/bold]"), BarColumn(), TextColumn("{task.completed}/{task.total} steps"),
               TextColumn("loss {task.fields[loss]:.3f}"), TextColumn("{task.fields[cpu]:.1f} CPU-min"), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("pretrain", total=settings.train.steps, loss=float("nan"), cpu=0.0)

        def on_step(record) -> None:  # type: ignore[no-untyped-def]
            progress.update(bar, completed=record.step + 1, loss=record.loss, cpu=record.cpu_s / 60)

        def on_eval(step: int, cpu_s: float, result: dict) -> None:  # type: ignore[type-arg]
            exact = result["exact"]
            keys = ("copy_entity", "select_extreme", "date_relative", "copy_from_result", "answer_quote")
            progress.console.print(
                f"step {step}: held-out loss {result['loss']:.3f}, token accuracy {result['token_accuracy']:.3f}; "
                + ", ".join(f"{k} {exact.get(k, 0):.2f}" for k in keys)
            )

        report = pretrain_tiny(out, settings, on_step=on_step, on_eval=on_eval)
    console.print(
        f"wrote [bold]{report.out}[/bold]: {report.parameters / 1e6:.2f}M parameters, {report.steps} steps, "
        f"{report.tokens:,} tokens, {report.cpu_seconds / 60:.1f} CPU-minutes ({report.wall_seconds / 60:.1f} wall)"
    )


@app.command("verify-default")
@settings_command(VerifyDefaultConfig, VERIFY_DEFAULT_SHORTCUTS)
def verify_default_command(
    settings: VerifyDefaultConfig,
    model_dir: Path | None = typer.Argument(None, help="Model folder to verify (default: the shipped default)."),
) -> None:
    """Rebuild the tokenizer and re-run the first training steps from the seed; the losses must match."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from toolgym.model.pretrain.recipe import (
        DEFAULT_MODEL_DIR,
        read_pretrain_settings,
        steps_to_verify,
        stored_recipe,
        verify_default,
    )

    folder = model_dir or DEFAULT_MODEL_DIR
    try:
        pretrain = read_pretrain_settings(folder)
        recipe = stored_recipe(pretrain, folder)
        count = steps_to_verify(pretrain, settings.steps)
        _warn_if_bf16_is_emulated(recipe.train.bf16, "--steps 3 checks the first 3 steps only")
        columns = (TextColumn("[bold]re-running[/bold]"), BarColumn(), TextColumn("{task.completed}/{task.total} steps"),
                   TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
        with Progress(*columns, console=console) as progress:
            bar = progress.add_task("verify", total=count)
            result = verify_default(folder, steps=settings.steps, tolerance=settings.tolerance,
                                    on_step=lambda record: progress.update(bar, completed=record.step + 1))
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]cannot verify:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    for index, (expected, observed) in enumerate(zip(result.expected, result.observed, strict=True)):
        console.print(f"step {index:3d}: recorded {expected:.6f}  rebuilt {observed:.6f}  diff {abs(expected - observed):.1e}")
    colour = "green" if result.ok else "red"
    console.print(f"[{colour}]{'OK' if result.ok else 'FAILED'}[/{colour}]: {result.message}")
    if not result.ok:
        raise typer.Exit(1)
