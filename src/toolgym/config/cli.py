"""Command-line flags derived from the config tree: `--config FILE`, `--set KEY=VALUE` and shortcut flags.

A command names the fields it offers as shortcuts; each flag's type, choices and help come from the
model's field, so no command re-declares a setting. A shortcut left off is not set (the file's value or
the model's default applies); values apply in the order file → shortcuts → `--set`.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from toolgym.config.base import REPEATABLE

SET_HELP = "Override any setting: KEY=VALUE with a dotted key (e.g. --set optim.lr=3e-4); repeatable; applied last."
CONFIG_HELP = "Config file (YAML) of this command's settings (docs/config-reference.md)."
# A dotted field path, or (path, flag name, …) where the flag keeps an older name (several names: aliases).
Shortcut = str | tuple[str, ...]


def field_at(model: type[BaseModel], path: str) -> FieldInfo:
    """The field a dotted path names (`optim.lr`), through nested sections."""
    current: Any = model
    info: FieldInfo | None = None
    for part in path.split("."):
        info = current.model_fields[part]
        current = info.annotation
    assert info is not None
    return info


def _plain(annotation: Any) -> tuple[Any, bool]:
    """(the annotation without None, whether None was allowed)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else str), True
    return annotation, False


def _comma_strings(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _comma_integers(text: str) -> list[int]:
    try:
        return [int(part) for part in _comma_strings(text)]
    except ValueError:
        raise ValueError("write comma-separated integers, e.g. 1,3,4") from None


def flag_type(info: FieldInfo) -> tuple[type, Callable[[Any], Any], str]:
    """(the flag's click type, how its value becomes the field's, a note for the help) of one field."""
    annotation, _ = _plain(info.annotation)
    origin = typing.get_origin(annotation)
    if origin is Literal:
        choices = [str(c) for c in typing.get_args(annotation)]
        return str, lambda v: v, f" ({' | '.join(choices)})"
    if origin is list and (info.json_schema_extra or {}).get(REPEATABLE):  # type: ignore[union-attr]
        return list[str], list, " (repeatable)"  # type: ignore[return-value]
    if origin is list:
        (item,) = typing.get_args(annotation) or (str,)
        return str, _comma_integers if item is int else _comma_strings, " (comma-separated)"
    if annotation in (bool, int, float):
        return annotation, lambda v: v, ""
    return str, lambda v: v, ""


def _names(shortcut: Shortcut) -> tuple[str, list[str]]:
    """(the dotted path, the flag names) of one shortcut; without names, the path's own flag."""
    if isinstance(shortcut, str):
        return shortcut, ["--" + shortcut.replace(".", "-").replace("_", "-")]
    path, *names = shortcut
    return path, names or ["--" + path.replace(".", "-").replace("_", "-")]


def _flag(path: str, names: list[str], info: FieldInfo) -> tuple[inspect.Parameter, Callable[[Any], Any]]:
    kind, convert, note = flag_type(info)
    decls = [f"{name}/--no-{name[2:]}" for name in names] if kind is bool else names
    help_text = " ".join((info.description or "").split()) + note
    option = typer.Option(None, *decls, help=help_text, show_default=False)
    parameter = inspect.Parameter("shortcut__" + path.replace(".", "__"), inspect.Parameter.KEYWORD_ONLY,
                                  default=option, annotation=kind | None)
    return parameter, convert


def with_config(model: type[BaseModel], shortcuts: Sequence[Shortcut], config_argument: str | None = None,
                ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a Typer command `--config`, `--set` and the shortcut flags of `model`'s fields `shortcuts`.

    The command receives `config: Path | None`, `overrides: list[str]` and `values: dict[str, Any]` (the
    shortcuts given, by dotted path); pass them to `toolgym.config.load_config`. With `config_argument` (its
    help), the file is a required argument instead (`toolgym pipeline CONFIG`).
    """
    config_parameter = (
        inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Path,
                          default=typer.Argument(..., help=config_argument)) if config_argument else
        inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Path | None,
                          default=typer.Option(None, "--config", help=CONFIG_HELP)))
    flags = [_names(s) for s in shortcuts]

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        own = [p for name, p in inspect.signature(fn).parameters.items()
               if name not in ("config", "overrides", "values")]
        hints = typing.get_type_hints(fn)
        added = [
            config_parameter,
            inspect.Parameter("overrides", inspect.Parameter.KEYWORD_ONLY, annotation=list[str] | None,
                              default=typer.Option(None, "--set", help=SET_HELP)),
        ]
        converters: dict[str, tuple[str, str, Callable[[Any], Any]]] = {}
        for path, names in flags:
            parameter, convert = _flag(path, names, field_at(model, path))
            added.append(parameter)
            converters[parameter.name] = (path, names[0], convert)

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            values = {}
            for name, (path, flag, convert) in converters.items():
                value = kwargs.pop(name)
                if value is None or value == []:  # a repeatable flag left off arrives as an empty list
                    continue
                try:
                    values[path] = convert(value)
                except ValueError as exc:  # e.g. --k 1,two: a usage error, not a traceback
                    raise typer.BadParameter(f"{value!r}: {exc}", param_hint=flag) from exc
            overrides = list(kwargs.pop("overrides") or [])
            return fn(**kwargs, overrides=overrides, values=values)

        positional = [p for p in own if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own
                   if p.kind is inspect.Parameter.KEYWORD_ONLY]
        command.__signature__ = inspect.Signature([*positional, *keyword, *added])  # type: ignore[attr-defined]
        command.__annotations__ = {**{p.name: hints[p.name] for p in own}, **{p.name: p.annotation for p in added}}
        del command.__wrapped__  # Typer reads the signature above, not the wrapped function's
        return command

    return decorate


def shortcut_flags(model: type[BaseModel], shortcuts: Sequence[Shortcut]) -> list[str]:
    """The flag names a command derives from `shortcuts` (what its --help lists)."""
    return [name for shortcut in shortcuts for name in _names(shortcut)[1]]
