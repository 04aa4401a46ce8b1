"""The config tree's plumbing: a strict base model, YAML reading, dotted overrides and error messages.

Every settings model derives from `Section` (unknown keys are errors). A file is read with
`read_yaml`, which keeps each key's line so a bad value is named by file, field and line;
`--set a.b=value` overrides are parsed as YAML scalars and merged into the file's data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError, field_validator

from toolgym.schema import documents
from toolgym.schema.section import Section as Section  # defined at the bottom layer, for the agent's limits

Model = TypeVar("Model", bound=BaseModel)
REPEATABLE = "repeatable"  # a list field's json_schema_extra key: its flag repeats (items may hold commas)


def one_of(field: str, choices: Sequence[Any], message: str, *, allow_none: bool = False) -> Any:
    """A validator refusing a `field` value outside `choices` with `message` (formatted with `value` and the
    comma-joined `choices`), so a flag, a config file and `--set` word the mistake alike."""

    def check(cls: type, value: Any) -> Any:
        if (value is None and allow_none) or value in choices:
            return value
        raise ValueError(message.format(value=value, choices=", ".join(map(str, choices))))

    return field_validator(field, mode="before")(classmethod(check))  # type: ignore[arg-type]


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and the field."""


def _model_at(cls: type[BaseModel], loc: tuple[Any, ...]) -> Any:
    """The model class that holds the field at `loc` (None when the path leaves the model tree)."""
    current: Any = cls
    parts = list(loc)
    while parts:
        part = parts.pop(0)
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(str(part))
        if field is None:
            field = next((f for f in current.model_fields.values() if f.alias == part), None)
        if field is None:
            return None
        annotation = field.annotation
        if getattr(annotation, "__origin__", None) is dict and parts:
            parts.pop(0)  # a mapping's key
        current = _submodel(annotation)
    return current if _known_names(current) else None


def _known_names(cls: Any) -> list[str]:
    """The setting names of a model (or a dataclass used as a section)."""
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return sorted(cls.model_fields)
    if dataclasses.is_dataclass(cls):
        return sorted(f.name for f in dataclasses.fields(cls))
    return []


def _submodel(annotation: Any) -> Any:
    if _known_names(annotation):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        if _known_names(arg):
            return arg
    return annotation


def format_validation_error(source: str, error: ValidationError, model: type[BaseModel] | None = None,
                            lines: dict[tuple[str, ...], int] | None = None) -> str:
    """One line per problem: `SOURCE: field a.b: what is wrong` (+ the known keys, + the YAML line)."""
    out = []
    for item in error.errors():
        loc = tuple(item["loc"])
        where = ".".join(str(part) for part in loc) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")  # a validator's own words say enough
        if item["type"] in ("extra_forbidden", "unexpected_keyword_argument") and model is not None:
            holder = model if len(loc) == 1 else _model_at(model, loc[:-1])
            if holder is not None:
                message = f"unknown setting; known: {', '.join(_known_names(holder))}"
        line = (lines or {}).get(tuple(str(part) for part in loc))
        out.append(f"{source}: field {where}: {message}" + (f" (line {line})" if line else ""))
    return "\n".join(out)


def read_yaml_lines(path: str | Path) -> tuple[dict[str, Any], dict[tuple[str, ...], int]]:
    """A YAML mapping and the line of each key path; a parse error names the file, line and column."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        data, lines = documents.read_yaml(path)
    except documents.FileError as exc:
        raise ConfigError(str(exc)) from None
    if data is None:
        return {}, lines
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(data).__name__}")
    return data, lines


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML mapping; a parse error names the file, line and column."""
    return read_yaml_lines(path)[0]


def parse_override(text: str) -> tuple[list[str], Any]:
    """`a.b=value` → (["a", "b"], value parsed as a YAML scalar or flow list/mapping)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip() or any(not part for part in key.strip().split(".")):
        raise ConfigError(f"--set {text!r}: write KEY=VALUE with a dotted key, e.g. --set optim.lr=3e-4")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {text!r}: the value is not valid YAML: {getattr(exc, 'problem', exc)}") from None
    return key.strip().split("."), value


def set_dotted(data: dict[str, Any], keys: list[str], value: Any) -> None:
    """data[k1][k2]… = value, creating mappings on the way (a scalar in the way is replaced)."""
    for key in keys[:-1]:
        child = data.get(key)
        if not isinstance(child, dict):
            child = data[key] = {}
        data = child
    data[keys[-1]] = value


def apply_overrides(data: dict[str, Any], overrides: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The data with each `KEY=VALUE` override applied in order."""
    for text in overrides:
        keys, value = parse_override(text)
        set_dotted(data, keys, value)
    return data


def validate_config(cls: type[Model], data: dict[str, Any], source: str = "config",
                    lines: dict[tuple[str, ...], int] | None = None) -> Model:
    """`cls` from a mapping; a bad key or value is a ConfigError naming `source` and the field."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc, cls, lines)) from exc


def load_config(cls: type[Model], path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = (),
                values: dict[str, Any] | None = None) -> Model:
    """`cls` from an optional YAML file, then `values` (dotted keys: the CLI's shortcut flags), then
    `--set` overrides; errors name the file (and line) or the override."""
    data, lines = read_yaml_lines(path) if path is not None else ({}, {})
    for key, value in (values or {}).items():
        set_dotted(data, key.split("."), value)
    apply_overrides(data, overrides)
    if path is None:
        source = "command line" if overrides or values else "settings"
    else:
        source = str(path) + (" (with command-line settings)" if overrides or values else "")
    return validate_config(cls, data, source, lines)


def deep_merge(base: dict[str, Any], *layers: dict[str, Any]) -> dict[str, Any]:
    """`base` with each layer on top; mappings merge key by key (a section written in part keeps the rest)."""
    merged = dict(base)
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = deep_merge(merged[key], value)
            else:
                merged[key] = value
    return merged
