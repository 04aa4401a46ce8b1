"""Reading a whole JSON, TOML or YAML file: every way its text can be unusable is one FileError.

Bad UTF-8, bad syntax, nesting deeper than a parser recurses (or than later stages take), an integer
past Python's digit limit, a lone surrogate: each becomes a one-line error naming the file and, where
the parser knows it, the line and column, never a RecursionError or UnicodeDecodeError traceback.
A file that cannot be opened still raises OSError, which each caller words for what it was reading.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

from toolgym.schema.jsonl import MAX_DEPTH, BadJson, check_value, loads

_BOM = b"\xef\xbb\xbf"
_TOML_POSITION = re.compile(r" \(at line (\d+), column (\d+)\)$")
_TOML_AT_END = " (at end of document)"
NESTED_TOO_DEEPLY = f"nested deeper than {MAX_DEPTH} levels"


class FileError(ValueError):
    """A file whose text cannot be used: `path: line L column C: field 'f': message`, each part where known."""

    def __init__(self, path: str | Path, message: str, line: int | None = None, column: int | None = None,
                 field: str | None = None) -> None:
        where = "" if line is None else f"line {line}" + ("" if column is None else f" column {column}") + ": "
        super().__init__(f"{path}: {where}" + (f"field '{field}': " if field else "") + message)
        self.path = str(path)
        self.message = message
        self.line = line
        self.column = column
        self.field = field


def read_text(path: str | Path) -> str:
    """The file as UTF-8 text (a leading byte-order mark dropped); a bad byte is named by line and column."""
    raw = Path(path).read_bytes().removeprefix(_BOM)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FileError(path, f"invalid UTF-8: byte 0x{raw[exc.start]:02x}", line, column) from None


def read_json(path: str | Path) -> Any:
    """The one JSON document in a file, read by the same rule as a JSONL row (`jsonl.loads`)."""
    try:
        return loads(read_text(path))
    except BadJson as exc:
        raise FileError(path, exc.problem, *(exc.position or ()), field=exc.field) from None


def read_toml(path: str | Path) -> dict[str, Any]:
    """A TOML file's table; nesting past MAX_DEPTH is refused as it is in JSON."""
    text = read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        problem = str(exc)
        position = _TOML_POSITION.search(problem)
        if position is not None:
            raise FileError(path, f"invalid TOML: {problem[:position.start()]}",
                            int(position.group(1)), int(position.group(2))) from None
        raise FileError(path, "invalid TOML: " + problem.replace(_TOML_AT_END, " at the end of the file")) from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise FileError(path, f"invalid TOML: {NESTED_TOO_DEEPLY}") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise FileError(path, f"invalid TOML: {str(exc).split(':')[0]}") from None
    try:
        check_value(data)
    except BadJson as exc:
        message = exc.problem if exc.field else f"invalid TOML: {NESTED_TOO_DEEPLY}"
        raise FileError(path, message, field=exc.field) from None
    return data


def read_yaml(path: str | Path) -> tuple[Any, dict[tuple[str, ...], int]]:
    """A YAML file's data and the line of each mapping key path (so a bad setting can be named by line)."""
    text = read_text(path)
    try:
        data = yaml.safe_load(text)
        lines: dict[tuple[str, ...], int] = {}
        _key_lines(yaml.compose(text, Loader=yaml.SafeLoader), (), lines)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = f"invalid YAML: {getattr(exc, 'problem', None) or exc}"
        if mark is None:
            raise FileError(path, problem) from None
        raise FileError(path, problem, mark.line + 1, mark.column + 1) from None
    except RecursionError:  # the YAML composer recurses once per nesting level
        raise FileError(path, "invalid YAML: nested too deeply") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise FileError(path, f"invalid YAML: {str(exc).split(':')[0]}") from None
    return data, lines


def _key_lines(node: Any, prefix: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = (*prefix, str(key.value))
            lines[path] = key.start_mark.line + 1
            _key_lines(value, path, lines)
