"""How a command reports a usage error and reads its settings, said once for every command."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from toolgym.config.cli import Shortcut, with_config

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


def settings_command(model: type[Model], shortcuts: Sequence[Shortcut], *,
                     prepare: Callable[[dict[str, Any]], None] | None = None,
                     console: Console = STDOUT) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`with_config`, then the settings loaded: the command takes them as its parameter `settings` beside its
    own arguments, and a bad file, flag or override is a usage error before it runs. `prepare` may first adjust
    the shortcut values given (by dotted path), where an older flag keeps a meaning of its own."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        hints = typing.get_type_hints(fn)
        own = [p for name, p in inspect.signature(fn).parameters.items() if name != "settings"]

        @functools.wraps(fn)
        def command(*, config: Path | None, overrides: list[str], values: dict[str, Any], **kwargs: Any) -> Any:
            if prepare is not None:
                prepare(values)
            return fn(settings=load_settings(model, config, overrides, values, console), **kwargs)

        command.__signature__ = inspect.Signature(own)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: hints[p.name] for p in own}
        del command.__wrapped__  # with_config reads the signature above, not fn's
        return with_config(model, shortcuts)(command)

    return decorate
