"""`toolgym data validate PATH [--strict]` and `toolgym data convert RUN_DIR --out FILE …`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

app = typer.Typer(no_args_is_help=True)
console = Console()


@app.command("validate")
def validate(
    path: Path = typer.Argument(..., help="A results.jsonl, a run folder holding one, or an SFT rows file."),
    strict: bool = typer.Option(False, "--strict", help="Exit with status 1 if any row is invalid."),
) -> None:
    """Check roles, system placement, tool-call ids, arguments, tools and token samples; count reasons.

    Exits 1 when the file has no valid row (empty, or every row invalid), with or without --strict."""
    from toolgym.data.validate import validate_file

    try:
        report = validate_file(path)
    except OSError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    console.print(report.render(), markup=False, highlight=False)  # rows' text is data, never markup
    if not report.valid:
        raise typer.Exit(1)
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
    """Write `{messages, tools, …provenance, token_samples}` rows; report rows in/out and skips by reason.

    Rows `data validate` flags are skipped and listed by file, line and field; exits 1 when no row is valid."""
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
    except (OSError, ValueError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    console.print(report.render(), markup=False, highlight=False)
    console.print(f"wrote {escape(str(out))}")
    if not report.valid_rows:
        what = "is empty" if not report.rows_in else f"has no valid row ({report.rows_in} rejected)"
        console.print(f"[red]error:[/red] {escape(report.source)} {what}: nothing to convert")
        raise typer.Exit(1)
    if not report.rows_out:
        console.print("[yellow]warning:[/yellow] every valid row was skipped by the filters: the output is empty")
