"""`toolgym data validate PATH [--strict]` and `toolgym data convert RUN_DIR --out FILE …`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

app = typer.Typer(no_args_is_help=True)
console = Console()


@app.command("validate")
def validate(
    path: Path = typer.Argument(..., help="A results.jsonl, a run folder holding one, or an SFT rows file."),
    strict: bool = typer.Option(False, "--strict", help="Exit with status 1 if any row is invalid."),
) -> None:
    """Check roles, system placement, tool-call ids, arguments, tools and token samples; count reasons."""
    from toolgym.data.validate import validate_file

    try:
        report = validate_file(path)
    except (FileNotFoundError, OSError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(report.render())
    if strict and report.invalid:
        console.print(f"[red]--strict: {report.invalid} invalid row(s)[/red]")
        raise typer.Exit(1)


@app.command("convert")
def convert(
    run_dir: Path = typer.Argument(..., help="A rollout folder (results.jsonl inside) or a results.jsonl file."),
    out: Path = typer.Option(..., "--out", help="SFT rows file to write (JSONL); a .manifest.json goes beside it."),
    min_reward: float | None = typer.Option(None, "--min-reward", help="Keep episodes with reward ≥ R."),
    status: str | None = typer.Option(
        None, "--status", help="Comma-separated statuses to keep: ok, truncated (default both; error never)."),
    row_mode: str = typer.Option("episode", "--row-mode", help="episode: one row per episode; turn: one per assistant turn."),
    dedupe: bool = typer.Option(False, "--dedupe", help="Drop rows whose messages and tools repeat an earlier row."),
    train_malformed_turns: bool = typer.Option(
        False, "--train-malformed-turns",
        help="Also train assistant turns that wrote a malformed call (default: kept as context, weight 0)."),
) -> None:
    """Write `{messages, tools, …provenance, token_samples}` rows; report rows in/out and skips by reason."""
    from toolgym.data.convert import ConvertOptions, convert_run

    try:
        options = ConvertOptions(
            min_reward=min_reward,
            statuses=tuple(s for s in (status or "ok,truncated").split(",") if s),
            row_mode=row_mode,  # type: ignore[arg-type]
            dedupe=dedupe,
            train_malformed_turns=train_malformed_turns,
        )
        report = convert_run(run_dir, out, options)
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(report.render())
    console.print(f"wrote {out}")
