"""How a command reports a usage error and reads its settings, said once for every command."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

Model = TypeVar("Model", bound=BaseModel)
STDOUT = Console()


def usage_error(message: object, console: Console = STDOUT) -> typer.Exit:
    """A usage error (exit 2), said whole: brackets in a value print as written, and a setting's file, field
    and line stay on one line. The servers pass their stderr console (stdio MCP keeps stdout for the protocol)."""
    console.print(f"[red]error:[/red] {escape(str(message))}", soft_wrap=True)
    return typer.Exit(2)


def load_settings(model: type[Model], config: Path | None, overrides: list[str], values: dict[str, Any],
                  console: Console = STDOUT) -> Model:
    """A command's settings from its --config file, flags and --set overrides; a bad one is a usage error."""
    from toolgym.config import ConfigError, load_config

    try:
        return load_config(model, config, overrides, values)
    except ConfigError as exc:
        raise usage_error(exc, console) from exc
