"""Entry point: `toolgym <group> <command>`; each group lives in its own module."""

from __future__ import annotations

import typer

from toolgym.cli import tasks

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Train tool-using LLM agents and prove what training did.")
app.add_typer(tasks.app, name="tasks", help="Build, validate and import task datasets.")


if __name__ == "__main__":
    app()
