"""`@tool`: a typed Python function becomes an OpenAI function schema and a validated callable.

The JSON schema comes from the signature (types, defaults) and the docstring (summary and an
`Args:` section). Arguments are checked before the function runs, so a model gets a readable
error for a missing, extra or mistyped argument instead of a Python traceback.

The tool boundary: every argument a model sends passes `Tool.bind_arguments`, which guarantees
tool code and SQLite only ever see values they can hold. A value that breaks a rule below is
refused with a `ToolError` naming the argument (the model reads it and the episode goes on):

- numbers are finite: NaN and ±Infinity (and 1e400, which JSON reads as Infinity) are refused;
- integers lie in SQLite's signed 64-bit range [-2**63, 2**63 - 1], anywhere in the value;
- an integer argument takes an integral float (3.0 → 3) but not 1.5, and the result is range-checked,
  so 1e308 as an id is refused rather than overflowing SQLite;
- strings are valid Unicode (no unpaired surrogate) of at most `MAX_STRING_CHARS` characters, i.e.
  at most 40,000 UTF-8 bytes: below SQLite's 50,000-byte LIKE pattern limit even wrapped in `%…%`
  or with every ASCII character escaped, so a search argument cannot make LIKE fail;
- arrays hold at most `MAX_ARRAY_ITEMS` items, and arrays and objects nest at most
  `MAX_NESTING_DEPTH` levels (the arguments object is level 1);
- argument names are strings; only JSON values (null, booleans, numbers, strings, arrays, objects) pass.

Error messages show at most `_SHOWN_CHARS` characters of an offending value.
"""

from __future__ import annotations

import inspect
import math
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from toolgym.schema import ToolSpec


class ToolError(Exception):
    """Raised by a tool for an expected failure (lookup failed, rule broken): shown to the model."""


MAX_STRING_CHARS = 10_000
MAX_ARRAY_ITEMS = 1_000
MAX_NESTING_DEPTH = 16
SQLITE_INT_MIN = -(2**63)
SQLITE_INT_MAX = 2**63 - 1
_SHOWN_CHARS = 80
_SURROGATE = re.compile("[\ud800-\udfff]")


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


def short_repr(value: Any) -> str:
    """A short repr for error messages: a 10,000-character value must not flood the model's context."""
    if isinstance(value, int) and not isinstance(value, bool) and not SQLITE_INT_MIN <= value <= SQLITE_INT_MAX:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # deeply nested, or an int too long to print
        return f"a nested {_type_name(value)}"
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _number_problem(value: int | float) -> str | None:
    """Why a number cannot reach tool code or SQLite, or None when it can."""
    if isinstance(value, float):
        if math.isnan(value):
            return "must be a finite number; got NaN"
        if math.isinf(value):
            return f"must be a finite number; got {'-' if value < 0 else ''}Infinity"
        return None
    if not SQLITE_INT_MIN <= value <= SQLITE_INT_MAX:
        return f"is out of range: integers must lie between {SQLITE_INT_MIN} and {SQLITE_INT_MAX}; got {short_repr(value)}"
    return None


def _string_problem(value: str) -> str | None:
    if len(value) > MAX_STRING_CHARS:
        return f"is too long: {len(value):,} characters; the limit is {MAX_STRING_CHARS:,}"
    if match := _SURROGATE.search(value):
        return (f"is not valid Unicode text: unpaired surrogate {ascii(match.group())[1:-1]} at position "
                f"{match.start()}")
    return None


def check_json_value(name: str, value: Any) -> None:
    """Enforce the tool-boundary rules (module docstring) on one argument; raise ToolError naming it.

    Iterative, so a 1000-deep value costs a loop, not Python's recursion limit.
    """
    stack: list[tuple[str, Any, int]] = [(name, value, 2)]
    while stack:
        where, item, depth = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, int | float):
            if problem := _number_problem(item):
                raise ToolError(f"argument '{where}' {problem}")
        elif isinstance(item, str):
            if problem := _string_problem(item):
                raise ToolError(f"argument '{where}' {problem}")
        elif isinstance(item, list | dict):
            if depth > MAX_NESTING_DEPTH:
                raise ToolError(
                    f"argument '{name}' is nested too deeply: arrays and objects may nest at most "
                    f"{MAX_NESTING_DEPTH} levels"
                )
            if len(item) > MAX_ARRAY_ITEMS:
                kind = "items" if isinstance(item, list) else "keys"
                raise ToolError(f"argument '{where}' has {len(item):,} {kind}; the limit is {MAX_ARRAY_ITEMS:,}")
            if isinstance(item, list):
                stack.extend((f"{where}[{i}]", v, depth + 1) for i, v in enumerate(item))
                continue
            for key, v in item.items():
                if not isinstance(key, str) or _string_problem(key):
                    raise ToolError(f"argument '{where}' has a key that is not valid text: {short_repr(key)}")
                stack.append((f"{where}.{key if len(key) <= 40 else key[:37] + '...'}", v, depth + 1))
        else:
            raise ToolError(f"argument '{where}' must be a JSON value; got {_type_name(item)}")


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
        raise ToolError(errors[0] if len(errors) == 1 else f"argument '{name}' has the wrong type: {short_repr(value)}")
    if origin is Literal:
        allowed = get_args(annotation)
        if value not in allowed:
            choices = ", ".join(repr(a) for a in allowed)
            raise ToolError(f"argument '{name}' must be one of {choices}; got {short_repr(value)}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise ToolError(f"argument '{name}' must be an array; got {_type_name(value)} {short_repr(value)}")
        inner = get_args(annotation)
        return [_check_value(f"{name}[{i}]", v, inner[0]) for i, v in enumerate(value)] if inner else value
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise ToolError(f"argument '{name}' must be an object; got {_type_name(value)} {short_repr(value)}")
        return value
    if annotation is bool:
        if not isinstance(value, bool):
            raise ToolError(f"argument '{name}' must be a boolean (true/false); got {_type_name(value)} {short_repr(value)}")
        return value
    if annotation is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 3.0 is 3; 1e308 becomes an integer the range check refuses
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolError(f"argument '{name}' must be an integer; got {_type_name(value)} {short_repr(value)}")
        if problem := _number_problem(value):
            raise ToolError(f"argument '{name}' {problem}")
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ToolError(f"argument '{name}' must be a number; got {_type_name(value)} {short_repr(value)}")
        if problem := _number_problem(value):
            raise ToolError(f"argument '{name}' {problem}")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise ToolError(f"argument '{name}' must be a string; got {_type_name(value)} {short_repr(value)}")
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
        """Check names, types and the tool-boundary rules; return keyword arguments for `fn` or raise ToolError."""
        if not isinstance(arguments, dict):
            raise ToolError(f"arguments of '{self.name}' must be a JSON object; got {_type_name(arguments)}")
        known = {p.name: p for p in self.params}
        extra = [short_repr(key) for key in arguments if key not in known]
        if extra:
            shown = ", ".join(sorted(extra)[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
            raise ToolError(
                f"unknown argument(s) {shown} for '{self.name}'; it takes: {', '.join(known) or 'no arguments'}"
            )
        missing = [p.name for p in self.params if p.required and p.name not in arguments]
        if missing:
            raise ToolError(f"missing required argument(s) {', '.join(repr(m) for m in missing)} for '{self.name}'")
        bound: dict[str, Any] = {}
        for name, value in arguments.items():
            check_json_value(name, value)
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
