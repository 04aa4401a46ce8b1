"""`toolgym traces diff RUN_A RUN_B`: behaviour, same-denominator success tests, and flipped tasks.

Its settings are `toolgym.config.traces.TracesDiffConfig` (`--config FILE`, `--greedy`, `--markdown`, `--set
KEY=VALUE`)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from toolgym.cli.errors import settings_command, usage_error
from toolgym.config.traces import TracesDiffConfig

app = typer.Typer(no_args_is_help=True, help="Trace analysis of rollout and eval runs.")
console = Console()


@app.command("diff")
@settings_command(TracesDiffConfig, ["greedy", "markdown"])
def diff(
    settings: TracesDiffConfig,
    run_a: Path = typer.Argument(..., help="Run A (before): a rollout folder, an eval folder or a results.jsonl."),
    run_b: Path = typer.Argument(..., help="Run B (after), on the same tasks."),
) -> None:
    """Calls per tool, turns, format errors, error/timeout/final-answer/tool-call rates, tokens, flipped tasks."""
    from toolgym.eval.records import load_run
    from toolgym.eval.traces import diff_runs, diff_tables
    try:
        result = diff_runs(load_run(run_a, name=str(run_a)), load_run(run_b, name=str(run_b)),
                           greedy=settings.greedy or None)
    except (FileNotFoundError, ValueError) as exc:
        raise usage_error(exc) from exc
    tables = diff_tables(result, root=Path.cwd())
    for table in tables:
        console.print(table.to_rich())
    markdown = settings.markdown
    if markdown is not None:
        markdown.write_text(f"# Trace diff: {run_a} → {run_b}\n\n" + "\n".join(t.to_markdown() for t in tables))
        console.print(f"wrote {markdown}")
