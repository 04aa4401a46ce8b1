"""JSONL reading and writing: append + flush per row (fsync at most once a second), errors that name file and line."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class JsonlError(ValueError):
    """A bad row, located by file, line and (where known) field."""

    def __init__(self, path: str | Path, line: int, message: str, field: str | None = None) -> None:
        where = f"{path}:{line}" + (f" field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message


def jsonl_in(location: str | Path, name: str, folder: str) -> Path:
    """`location` is a JSONL file or a `folder` holding one called `name`; the error says which was expected."""
    path = Path(location)
    if path.is_dir():
        path = path / name
    if not path.is_file():
        stem = name.rsplit(".", 1)[0]
        raise FileNotFoundError(f"{path}: no such {stem} file (give a {folder} or a {name})")
    return path


def iter_lines(path: str | Path) -> Iterator[tuple[int, Any | JsonlError]]:
    """(line number, parsed row) per non-empty line; a bad line yields its JsonlError instead of raising,
    so one torn line does not hide the rest of a file from a report."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, JsonlError(path, number, f"invalid JSON: {exc.msg} at column {exc.colno}")


def iter_json_rows(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield (line_number, parsed JSON) for each non-empty line; bad JSON raises JsonlError."""
    for number, row in iter_lines(path):
        if isinstance(row, JsonlError):
            raise row
        yield number, row


def validation_error_to_jsonl(path: str | Path, line: int, exc: ValidationError) -> JsonlError:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ()))
    return JsonlError(path, line, first.get("msg", str(exc)), field or None)


def read_models(path: str | Path, model: type[M]) -> list[M]:
    """Read a JSONL file of `model` rows; the first bad row raises JsonlError naming line and field."""
    rows: list[M] = []
    for number, data in iter_json_rows(path):
        try:
            rows.append(model.model_validate(data))
        except ValidationError as exc:
            raise validation_error_to_jsonl(path, number, exc) from exc
    return rows


def dumps(row: BaseModel | dict[str, Any]) -> str:
    """Canonical one-line JSON (sorted keys would reorder messages' fields, so keep model order)."""
    if isinstance(row, BaseModel):
        return row.model_dump_json(exclude_none=False)
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


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
