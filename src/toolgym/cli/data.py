"""`toolgym data validate PATH [--strict]` and `toolgym data convert RUN_DIR --out FILE …`.

Both read their settings from `toolgym.config.data` (`--config FILE`, the shortcut flags below, `--set
KEY=VALUE`; docs/config-reference.md lists every setting).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from toolgym.cli.errors import settings_command, usage_error
from toolgym.config.data import ConvertConfig, DataValidateConfig

if TYPE_CHECKING:
    from toolgym.data.context import ContextCheck

app = typer.Typer(no_args_is_help=True)
console = Console()
# Flag name older than the config tree: --status (statuses).
CONVERT_SHORTCUTS = ["out", "min_reward", ("statuses", "--status"), "row_mode", "dedupe", "train_malformed_turns",
                     "model"]


def _context_check(model: str | None) -> ContextCheck | None:
    """The model's tokenizer and context to measure rows against (None: no model given); a bad one is a usage error."""
    if model is None:
        return None
    from toolgym.data.context import ContextCheck

    try:
        return ContextCheck(model)
    except (OSError, ValueError) as exc:
        raise usage_error(f"--model: {exc}") from exc


@app.command("validate")
@settings_command(DataValidateConfig, ["strict", "model"])
def validate(
    settings: DataValidateConfig,
    path: Path = typer.Argument(..., help="A results.jsonl, a run folder holding one, or an SFT rows file."),
) -> None:
    """Check roles, system placement, tool-call ids, arguments, tools and token samples; count reasons.

    Exits 1 when the file has no valid row (empty, or every row invalid), with or without --strict."""
    from toolgym.data.validate import validate_file

    context = _context_check(settings.model)
    try:
        report = validate_file(path, context)
    except OSError as exc:
        raise usage_error(exc) from exc
    console.print(report.render(), markup=False, highlight=False)  # rows' text is data, never markup
    if not report.valid:
        raise typer.Exit(1)
    if settings.strict and report.invalid:
        console.print(f"[red]--strict: {report.invalid} invalid row(s)[/red]")
        raise typer.Exit(1)


def _empty_status_means_default(values: dict[str, Any]) -> None:
    if values.get("statuses") == []:  # `--status ""`: the default statuses, as it has always meant
        del values["statuses"]


@app.command("convert")
@settings_command(ConvertConfig, CONVERT_SHORTCUTS, prepare=_empty_status_means_default)
def convert(
    settings: ConvertConfig,
    run_dir: Path = typer.Argument(..., help="A rollout folder (results.jsonl inside) or a results.jsonl file."),
) -> None:
    """Write `{messages, tools, …provenance, token_samples}` rows; report rows in/out and skips by reason.

    Rows `data validate` flags are skipped and listed by file, line and field; exits 1 when no row is valid."""
    from toolgym.data.convert import convert_run

    if settings.out is None:
        raise usage_error("toolgym data convert needs --out (or out in --config)")
    out = Path(settings.out)
    context = _context_check(settings.model)
    try:
        report = convert_run(run_dir, out, settings.options(), context)
    except (OSError, ValueError) as exc:
        raise usage_error(exc) from exc
    console.print(report.render(), markup=False, highlight=False)
    console.print(f"wrote {escape(str(out))}")
    if not report.valid_rows:
        what = "is empty" if not report.rows_in else f"has no valid row ({report.rows_in} rejected)"
        console.print(f"[red]error:[/red] {escape(report.source)} {what}: nothing to convert")
        raise typer.Exit(1)
    if not report.rows_out:
        console.print("[yellow]warning:[/yellow] every valid row was skipped by the filters: the output is empty")
