"""JSONL reading and writing: append + flush per row (fsync at most once a second), errors that name file and line."""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

M = TypeVar("M", bound=BaseModel)


class JsonlError(ValueError):
    """A bad row, located by file, line and (where known) field; `reason` is the countable kind of fault."""

    def __init__(self, path: str | Path, line: int, message: str, field: str | None = None,
                 reason: str = "invalid row") -> None:
        super().__init__(f"{path}:{line}: " + (f"field '{field}': " if field else "") + message)
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        self.reason = reason


class BadJson(ValueError):
    """One JSON document that cannot be used, with a one-line reason (what a JsonlError wraps).

    `problem` is the reason without the parser's `position` (line, column), for a reader that places
    the position itself; `message` ends with it, as a row's error shows it."""

    def __init__(self, reason: str, problem: str, field: str | None = None,
                 position: tuple[int, int] | None = None) -> None:
        if position is not None:
            line, column = position
            message = f"{problem} at " + (f"line {line} column {column}" if line > 1 else f"column {column}")
        else:
            message = problem
        super().__init__(message)
        self.reason = reason
        self.problem = problem
        self.message = message
        self.field = field
        self.position = position

    def at(self, path: str | Path, line: int) -> JsonlError:
        return JsonlError(path, line, self.message, self.field, self.reason)


# Deeper documents are refused: pydantic's JSON parser stops near 200 levels and its serializer near 255,
# and the stdlib parser near the interpreter's recursion limit, so a deeper row would crash a later stage.
MAX_DEPTH = 100
_STRING_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_BOM = b"\xef\xbb\xbf"


def field_path(loc: Iterable[str | int]) -> str:
    """`messages[2].content` from a pydantic location or a walk's path."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _too_deep(raw: bytes) -> bool:
    """Whether brackets outside strings nest deeper than MAX_DEPTH (a cheap count rules most rows out)."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return False
    depth = 0
    for byte in _NOT_BRACKET.sub(b"", _STRING_BYTES.sub(b"", raw)):
        depth += 1 if byte in b"[{" else -1
        if depth > MAX_DEPTH:
            return True
    return False


def check_value(value: Any) -> None:
    """Raise BadJson for what the parser lets through but later stages cannot handle: nesting deeper than
    MAX_DEPTH, and text holding a lone surrogate (`"\\ud800"`), which no UTF-8 file can store."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, where = stack.pop()
        if len(where) > MAX_DEPTH:
            raise BadJson("invalid JSON", f"invalid JSON: nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise BadJson("invalid text", "a lone surrogate escape (\\ud800-\\udfff) is not text",
                              field_path(where) or None)
        elif isinstance(item, dict):
            for key, child in item.items():
                if _SURROGATE.search(key):
                    raise BadJson("invalid text", "a key holds a lone surrogate escape (\\ud800-\\udfff)",
                                  field_path(where) or None)
                stack.append((child, (*where, key)))
        elif isinstance(item, list):
            stack.extend((child, (*where, index)) for index, child in enumerate(item))


def loads(raw: bytes | str) -> Any:
    """One JSON document, or BadJson: bad UTF-8, bad syntax, too deep, an integer past Python's digit
    limit, a lone surrogate; never RecursionError or UnicodeDecodeError."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadJson("invalid UTF-8", f"invalid UTF-8: byte 0x{data[exc.start]:02x} at column {exc.start + 1}") from None
    if _too_deep(data):
        raise BadJson("invalid JSON", f"invalid JSON: nested deeper than {MAX_DEPTH} levels")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadJson("invalid JSON", f"invalid JSON: {exc.msg}", position=(exc.lineno, exc.colno)) from None
    except RecursionError:
        raise BadJson("invalid JSON", f"invalid JSON: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError:  # only the integer digit limit reaches here
        raise BadJson("invalid JSON", f"invalid JSON: an integer has more than {sys.get_int_max_str_digits()} "
                      "digits") from None
    if _SURROGATE_ESCAPE.search(text):
        check_value(value)
    return value


def parse_line(path: str | Path, line: int, raw: bytes) -> Any:
    """A JSONL line as a JSON object, or the JsonlError saying why it is not one (returned, not raised)."""
    try:
        value = loads(raw)
    except BadJson as exc:
        return exc.at(path, line)
    if not isinstance(value, dict):
        return JsonlError(path, line, f"not a JSON object (got {json_type(value)})", reason="not a JSON object")
    return value


def json_type(value: Any) -> str:
    """How a JSON value is named in an error: `an array`, `a string`, `null`."""
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def jsonl_in(location: str | Path, name: str, folder: str) -> Path:
    """`location` is a JSONL file or a `folder` holding one called `name`; the error says which was expected."""
    path = Path(location)
    if path.is_dir():
        path = path / name
    if not path.is_file():
        stem = name.rsplit(".", 1)[0]
        raise FileNotFoundError(f"{path}: no such {stem} file (give a {folder} or a {name})")
    return path


def iter_lines(path: str | Path, *, cut_off: str | None = None) -> Iterator[tuple[int, Any | JsonlError]]:
    """(line number, JSON object) per non-empty line; a bad line yields its JsonlError instead of raising,
    so one torn line does not hide the rest of a file from a report. Lines are split on bytes, so one
    undecodable byte spoils only its own line. With `cut_off` (a file written row by row), a last line
    without its newline is a row cut off mid-write: its error says `cut_off`."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            if not raw.strip():
                continue
            if cut_off is not None and not raw.endswith(b"\n"):
                yield number, JsonlError(path, number, cut_off)
                continue
            yield number, parse_line(path, number, raw)


def iter_json_rows(path: str | Path, *, cut_off: str | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line_number, JSON object) for each non-empty line; a bad line (see `iter_lines`) raises JsonlError."""
    for number, row in iter_lines(path, cut_off=cut_off):
        if isinstance(row, JsonlError):
            raise row
        yield number, row


def validation_error_to_jsonl(path: str | Path, line: int, exc: ValidationError) -> JsonlError:
    """The first pydantic error as a JsonlError naming the field (`checks[0].kind`)."""
    first = exc.errors()[0]
    field = field_path(first.get("loc", ()))
    reason = f"missing field '{field}'" if first.get("type") == "missing" else f"bad field '{field}'"
    return JsonlError(path, line, first.get("msg", "invalid value"), field or None, reason if field else "invalid row")


def iter_models(path: str | Path, model: type[M]) -> Iterator[tuple[int, M | JsonlError]]:
    """(line, `model` row or the JsonlError naming line and field) for every non-empty line."""
    for number, data in iter_lines(path):
        if isinstance(data, JsonlError):
            yield number, data
            continue
        try:
            yield number, model.model_validate(data)
        except ValidationError as exc:
            yield number, validation_error_to_jsonl(path, number, exc)


def read_models(path: str | Path, model: type[M]) -> list[M]:
    """Read a JSONL file of `model` rows; the first bad row raises JsonlError naming line and field."""
    rows: list[M] = []
    for _, row in iter_models(path, model):
        if isinstance(row, JsonlError):
            raise row
        rows.append(row)
    return rows


# How rows store non-finite floats (strict JSON has no such numbers); pydantic reads these back as floats.
NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
# Python refuses to print (and to parse) longer decimal integers; it needs ~3.33 bits a digit.
_INT_DIGIT_BITS = int(sys.get_int_max_str_digits() * 3.32) if sys.get_int_max_str_digits() else 0


def dumps(row: BaseModel | dict[str, Any]) -> str:
    """One line of strict JSON that `loads` reads back, whatever the row holds; model fields keep their order.

    A row must always serialise (a run whose row cannot be written cannot resume), so what JSON or a
    UTF-8 file cannot hold is written in a form the readers accept: see `jsonable`.
    """
    if isinstance(row, BaseModel):
        try:
            data: Any = row.model_dump(mode="json")  # keeps NaN floats, which `jsonable` writes as strings
        except ValueError:  # nested deeper than pydantic serialises
            data = row.model_dump()
    else:
        data = row
    try:
        line = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        if not _too_deep(line.encode("utf-8")):  # encoding also finds lone surrogates
            return line
    except (ValueError, TypeError, RecursionError):
        pass
    return json.dumps(jsonable(data), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def jsonable(value: Any, depth: int = 0) -> Any:
    """`value` as strict-JSON data every reader accepts: lone surrogates become U+FFFD (a pair joins into
    its character), non-finite floats the strings "NaN"/"Infinity"/"-Infinity" (pydantic reads them back
    as floats), integers too long to print in decimal a "0x…" string, containers nested past MAX_DEPTH
    their JSON text (a string), and other objects their JSON form or `str`."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return hex(value) if _INT_DIGIT_BITS and value.bit_length() > _INT_DIGIT_BITS else int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        return NON_FINITE["nan" if math.isnan(value) else "inf" if value > 0 else "-inf"]
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict | list | tuple | set | frozenset) and depth >= MAX_DEPTH:
        return _as_text(value)
    if isinstance(value, dict):
        return {_key(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump(), depth)
    try:
        converted = to_jsonable_python(value)
    except (ValueError, TypeError, PydanticSerializationError):
        return _text(str(value))
    return _text(str(value)) if type(converted) is type(value) else jsonable(converted, depth)


def _text(text: str) -> str:
    """Lone surrogates (a decoder's leftovers, not text) as U+FFFD; no UTF-8 file can hold them."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _key(key: Any) -> str:
    """A dict key as json.dumps would write it, made safe like any other text."""
    if isinstance(key, str):
        return _text(key)
    if key is None or isinstance(key, bool | int | float):
        value = jsonable(key)
        return value if isinstance(value, str) else json.dumps(value)
    return _text(str(key))


def _as_text(value: Any) -> str:
    """A container nested too deep, kept as its JSON text (or, past the interpreter's limit, a note)."""
    try:
        return _text(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
    except (ValueError, RecursionError):
        return f"<{type(value).__name__} nested deeper than {MAX_DEPTH} levels: not stored>"


class JsonlWriter:
    """Append rows: each is written and flushed before `write` returns, so a killed process loses none.

    fsync (surviving a machine crash) costs milliseconds per call, more than an episode's own work on
    small models, so it runs at most every `fsync_interval_s` and at close: a crash of the whole
    machine loses at most that last interval, which a resumed run re-does.
    """

    def __init__(self, path: str | Path, mode: str = "a", fsync_interval_s: float = 1.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] = open(self.path, mode, encoding="utf-8")  # noqa: SIM115
        self.fsync_interval_s = fsync_interval_s
        self._last_fsync = time.monotonic()

    def write(self, row: BaseModel | dict[str, Any]) -> None:
        self._handle.write(dumps(row) + "\n")
        self._handle.flush()
        if time.monotonic() - self._last_fsync >= self.fsync_interval_s:
            self.sync()

    def sync(self) -> None:
        os.fsync(self._handle.fileno())
        self._last_fsync = time.monotonic()

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.flush()
            self.sync()
        self._handle.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_jsonl(path: str | Path, rows: Iterable[BaseModel | dict[str, Any]]) -> int:
    """Write a whole file at once (for datasets, where the file is the unit); returns the row count."""
    count = 0
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(dumps(row) + "\n")
            count += 1
    return count
