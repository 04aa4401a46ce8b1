"""`@tool`: a typed Python function becomes an OpenAI function schema and a validated callable.

The JSON schema comes from the signature (types, defaults) and the docstring (summary and an
`Args:` section). Arguments are checked before the function runs, so a model gets a readable
error for a missing, extra or mistyped argument instead of a Python traceback.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from toolgym.schema import ToolSpec


class ToolError(Exception):
    """Raised by a tool for an expected failure (lookup failed, rule broken): shown to the model."""


@dataclass(frozen=True)
class _Param:
    name: str
    annotation: Any
    required: bool
    default: Any
    description: str


_ARG_LINE = re.compile(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary text and per-argument descriptions from a Google-style docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for raw in lines:
        stripped = raw.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section = "args"
            continue
        if stripped in ("Returns:", "Raises:", "Example:", "Examples:"):
            section = "other"
            continue
        if section == "summary":
            summary.append(stripped)
        elif section == "args":
            match = _ARG_LINE.match("  " + raw if not raw.startswith("  ") else raw)
            if match and not raw.startswith("      "):
                current = match.group(1)
                args[current] = match.group(2).strip()
            elif current and stripped:
                args[current] += " " + stripped
    return " ".join(s for s in summary if s).strip(), args


def _json_schema(annotation: Any) -> dict[str, Any]:
    """JSON schema of the small set of types tools may take."""
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        if len(options) == 1:
            return _json_schema(options[0])
        return {"anyOf": [_json_schema(a) for a in options]}
    if origin is Literal:
        values = list(get_args(annotation))
        kind = "integer" if all(isinstance(v, int) for v in values) else "string"
        return {"type": kind, "enum": values}
    if origin in (list, tuple):
        inner = get_args(annotation)
        return {"type": "array", "items": _json_schema(inner[0]) if inner else {}}
    if origin is dict or annotation is dict:
        return {"type": "object"}
    mapping = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if annotation in mapping:
        return {"type": mapping[annotation]}
    raise TypeError(f"unsupported tool argument type: {annotation!r}")


def _type_name(value: Any) -> str:
    names = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _check_value(name: str, value: Any, annotation: Any) -> Any:
    """Validate (and lightly normalise) one argument; raise ToolError with a readable reason."""
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = get_args(annotation)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _check_value(name, value, option)
            except ToolError as exc:
                errors.append(str(exc))
        raise ToolError(errors[0] if len(errors) == 1 else f"argument '{name}' has the wrong type: {value!r}")
    if origin is Literal:
        allowed = get_args(annotation)
        if value not in allowed:
            choices = ", ".join(repr(a) for a in allowed)
            raise ToolError(f"argument '{name}' must be one of {choices}; got {value!r}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise ToolError(f"argument '{name}' must be an array; got {_type_name(value)} {value!r}")
        inner = get_args(annotation)
        return [_check_value(f"{name}[{i}]", v, inner[0]) for i, v in enumerate(value)] if inner else value
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise ToolError(f"argument '{name}' must be an object; got {_type_name(value)} {value!r}")
        return value
    if annotation is bool:
        if not isinstance(value, bool):
            raise ToolError(f"argument '{name}' must be a boolean (true/false); got {_type_name(value)} {value!r}")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
            raise ToolError(f"argument '{name}' must be an integer; got {_type_name(value)} {value!r}")
        return int(value)
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ToolError(f"argument '{name}' must be a number; got {_type_name(value)} {value!r}")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise ToolError(f"argument '{name}' must be a string; got {_type_name(value)} {value!r}")
        return value
    return value


@dataclass
class Tool:
    """A tool function with its schema; the first parameter of `fn` is the ToolContext."""

    fn: Callable[..., Any]
    name: str
    description: str
    params: tuple[_Param, ...]
    owner: str = "agent"  # "agent" or "user" (dual control: user-side device tools)

    @property
    def spec(self) -> ToolSpec:
        properties: dict[str, Any] = {}
        for p in self.params:
            schema = _json_schema(p.annotation)
            if p.description:
                schema["description"] = p.description
            if not p.required and p.default is not None:
                schema["default"] = p.default
            properties[p.name] = schema
        parameters: dict[str, Any] = {"type": "object", "properties": properties}
        required = [p.name for p in self.params if p.required]
        if required:
            parameters["required"] = required
        return ToolSpec(name=self.name, description=self.description, parameters=parameters)

    def bind_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check names and types; return keyword arguments for `fn` or raise ToolError."""
        if not isinstance(arguments, dict):
            raise ToolError(f"arguments of '{self.name}' must be a JSON object; got {_type_name(arguments)}")
        known = {p.name: p for p in self.params}
        extra = sorted(set(arguments) - set(known))
        if extra:
            raise ToolError(
                f"unknown argument(s) {', '.join(repr(e) for e in extra)} for '{self.name}'; "
                f"it takes: {', '.join(known) or 'no arguments'}"
            )
        missing = [p.name for p in self.params if p.required and p.name not in arguments]
        if missing:
            raise ToolError(f"missing required argument(s) {', '.join(repr(m) for m in missing)} for '{self.name}'")
        bound: dict[str, Any] = {}
        for name, value in arguments.items():
            bound[name] = _check_value(name, value, known[name].annotation)
        return bound


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None, owner: str = "agent") -> Any:
    """Decorator: turn `def f(ctx, a: int, b: str = "x") -> ...` into a Tool."""

    def wrap(func: Callable[..., Any]) -> Tool:
        hints = typing.get_type_hints(func, include_extras=False)
        summary, arg_docs = _parse_docstring(func.__doc__ or "")
        signature = inspect.signature(func)
        params = []
        for index, (pname, parameter) in enumerate(signature.parameters.items()):
            if index == 0:
                continue  # the ToolContext
            if pname not in hints:
                raise TypeError(f"tool {func.__name__}: argument '{pname}' needs a type hint")
            required = parameter.default is inspect.Parameter.empty
            params.append(
                _Param(
                    name=pname,
                    annotation=hints[pname],
                    required=required,
                    default=None if required else parameter.default,
                    description=arg_docs.get(pname, ""),
                )
            )
            _json_schema(hints[pname])  # fail at import time on unsupported types
        return Tool(fn=func, name=name or func.__name__, description=summary, params=tuple(params), owner=owner)

    return wrap(fn) if fn is not None else wrap
