"""Import Fleet task records (a JSON array like all_tool_use.json, or JSONL) as toolgym Tasks.

Fleet's field names vary between versions (`key` / `task_key`, `env_id` / `env_key`, `verifier_func`
/ `verifier_code`, ...); each toolgym field reads the first alias present. A malformed record is
reported with its file, line (the JSONL line, or the line where the array element starts) and
field, and the good records are still imported. Files are read with the JSONL reader's rules (UTF-8,
bounded nesting, no integer past Python's digit limit, no lone surrogates): a bad record is a
rejection, never a crash.
"""

from __future__ import annotations

import ast
import json
import reprlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolgym.dataset.manifest import sha256_file, write_manifest
from toolgym.schema import Task
from toolgym.schema.jsonl import BadJson, check_value, field_path, loads, write_jsonl

# toolgym field -> Fleet names, in order of preference.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("key", "task_key"),
    "prompt": ("prompt",),
    "env": ("env_id", "env_key"),
    "env_version": ("version", "env_version"),
    "data_id": ("data_id", "data_key"),
    "data_version": ("data_version",),
    "verifier_code": ("verifier_func", "verifier_code"),
    "env_variables": ("env_variables",),
    "task_modality": ("task_modality",),
    "difficulty": ("difficulty",),
}
MODALITIES = ("tool_use", "computer_use")
DEFAULT_ENV_VERSION = "latest"  # Fleet makes the latest version when none is named
_short = reprlib.Repr()
_short.maxstring = _short.maxother = 80  # a rejected value is quoted, not copied whole into the report


@dataclass
class RecordError:
    """A rejected record: where it is (file, line, and for importers that count them its index) and
    which field is wrong. Shared by every task importer."""

    file: str
    line: int
    message: str
    field: str | None = None
    key: str | None = None
    index: int | None = None  # 0-based position in the file's array, where the importer reports it

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}"
        if self.index is not None:
            where += f" (task #{self.index}" + (f", id {self.key!r}" if self.key else "") + ")"
        if self.field:
            where += f": field '{self.field}'"
        return f"{where}: {self.message}"


FleetRecordError = RecordError  # the name it had before other importers shared it


class Reject(Exception):
    """A record (or one of its fields) that cannot become a task; raised while mapping, caught per record."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass
class TaskImport:
    """What an import of a records file made: a task per good record, an error per bad one."""

    source: Path
    records: int = 0
    tasks: list[Task] = field(default_factory=list)
    errors: list[RecordError] = field(default_factory=list)


# ------------------------------------------------------------------------------------------
#  Reading records with their line numbers
# ------------------------------------------------------------------------------------------


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _iter_array(text: str) -> Iterator[tuple[int, Any]]:
    """(line where the element starts, element) for a JSON array; a syntax error ends it as a Reject."""
    decoder = json.JSONDecoder()
    index = _skip_space(text, 0) + 1  # past '['
    line, counted = 1, 0

    def line_at(position: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, position)
        counted = position
        return line

    index = _skip_space(text, index)
    if index < len(text) and text[index] == "]":
        return
    while True:
        if index >= len(text):
            yield line_at(len(text)), Reject("invalid JSON: the array is not closed with ']'")
            return
        start_line = line_at(index)
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError as exc:
            yield start_line, Reject(
                f"invalid JSON in the record starting here: {exc.msg} at line {exc.lineno} column {exc.colno}; "
                "records after it were not read"
            )
            return
        except (RecursionError, ValueError) as exc:  # nesting past the stack, or the integer digit limit
            what = "nested too deeply" if isinstance(exc, RecursionError) else "an integer has too many digits"
            yield start_line, Reject(f"invalid JSON in the record starting here: {what}; records after it were not read")
            return
        try:
            check_value(value)
        except BadJson as exc:
            yield start_line, Reject(exc.message, exc.field)
        else:
            yield start_line, value
        index = _skip_space(text, end)
        if index < len(text) and text[index] == ",":
            index = _skip_space(text, index + 1)
            continue
        if index < len(text) and text[index] == "]":
            return
        yield line_at(min(index, len(text))), Reject("invalid JSON: expected ',' or ']' after a record; records after it were not read")
        return


def _iter_jsonl(data: bytes) -> Iterator[tuple[int, Any]]:
    """Lines split on bytes: a bad byte spoils its own line only, and U+2028 inside a string is no break."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            yield number, loads(raw)
        except BadJson as exc:
            yield number, Reject(exc.message, exc.field)


def iter_records(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line, record) pairs from a JSON array or a JSONL file; unreadable records come as Reject."""
    data = Path(path).read_bytes().removeprefix(b"\xef\xbb\xbf")
    stripped = data.lstrip(b" \t\r\n")
    if not stripped.startswith(b"["):
        yield from _iter_jsonl(data)
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        yield line, Reject(f"invalid UTF-8: byte 0x{data[exc.start]:02x} at column {column}; no record was read")
        return
    yield from _iter_array(text)


# ------------------------------------------------------------------------------------------
#  One record -> one Task
# ------------------------------------------------------------------------------------------


def _pick(record: dict[str, Any], target: str) -> tuple[str, Any]:
    """The (Fleet field name, value) of the first alias present; disagreeing aliases are an error."""
    present = [(name, record[name]) for name in FIELD_ALIASES[target] if record.get(name) is not None]
    if not present:
        return FIELD_ALIASES[target][0], None
    name, value = present[0]
    for other, other_value in present[1:]:
        if other_value != value:
            raise Reject(f"disagrees with '{other}' ({_short.repr(other_value)} vs {_short.repr(value)})", name)
    return name, value


def _text(record: dict[str, Any], target: str, required: bool) -> tuple[str, str | None]:
    name, value = _pick(record, target)
    if value is None:
        if required:
            names = " or ".join(f"'{n}'" for n in FIELD_ALIASES[target])
            raise Reject(f"missing (give {names})", name)
        return name, None
    if not isinstance(value, str) or not value.strip():
        raise Reject(f"must be a non-empty string, got {type(value).__name__} {_short.repr(value)}", name)
    return name, value


def _check_verifier(code: str, field_name: str) -> None:
    """The verifier must parse and define validate_task (or one function taking `env` first)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise Reject(f"syntax error at verifier line {exc.lineno}: {exc.msg}", field_name) from exc
    except (RecursionError, MemoryError, ValueError) as exc:  # the parser's limits on nesting, and NUL bytes
        raise Reject(f"not parseable Python ({type(exc).__name__}: {exc or 'too complex'})", field_name) from exc
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if any(f.name == "validate_task" for f in functions):
        return
    takes_env = [f for f in functions if f.args.args and f.args.args[0].arg == "env"]
    if len(takes_env) != 1:
        raise Reject("defines no validate_task(env, final_answer=None) function", field_name)


def _env_variables(record: dict[str, Any]) -> dict[str, str]:
    name, value = _pick(record, "env_variables")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Reject(f"must be an object of NAME: value, got {type(value).__name__}", name)
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise Reject(f"value of {_short.repr(key)} must be a string or number, got {type(item).__name__}",
                          f"{name}.{key}")
        out[str(key)] = str(item)
    return out


def _difficulty(record: dict[str, Any]) -> int:
    name, value = _pick(record, "difficulty")
    if value is None:
        return 1
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 3:
        raise Reject(f"must be 1, 2 or 3, got {_short.repr(value)}", name)
    return value


def record_to_task(record: Any, source: str, line: int) -> Task:
    """Map one Fleet record onto a Task (raises Reject naming the field)."""
    if not isinstance(record, dict):
        raise Reject(f"a record must be a JSON object, got {type(record).__name__}")
    _, key = _text(record, "id", required=True)
    _, prompt = _text(record, "prompt", required=True)
    env_field, env_key = _text(record, "env", required=True)
    _, version = _text(record, "env_version", required=False)
    env, _, key_version = (env_key or "").partition(":")
    if not env:
        raise Reject(f"has no environment name: {_short.repr(env_key)}", env_field)
    _, data_id = _text(record, "data_id", required=False)
    _, data_version = _text(record, "data_version", required=False)
    verifier_field, verifier = _text(record, "verifier_code", required=True)
    _check_verifier(verifier or "", verifier_field)
    modality_field, modality = _pick(record, "task_modality")
    if modality is None:
        modality = "tool_use"
    if modality not in MODALITIES:
        raise Reject(f"must be one of {', '.join(MODALITIES)}, got {_short.repr(modality)}", modality_field)
    consumed = {name for names in FIELD_ALIASES.values() for name in names}
    extra = {k: v for k, v in record.items() if k not in consumed}
    try:
        return Task(
            id=key or "",
            env=env,
            env_version=version or key_version or DEFAULT_ENV_VERSION,
            prompt=prompt or "",
            difficulty=_difficulty(record),
            task_modality=modality,
            env_variables=_env_variables(record),
            data_id=data_id,
            data_version=data_version,
            verifier_code=verifier,
            metadata={"source": "fleet", "source_file": source, "source_line": line, **({"fleet": extra} if extra else {})},
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise Reject(str(first.get("msg")), field_path(first.get("loc", ())) or None) from exc


def import_fleet_file(path: str | Path) -> TaskImport:
    """Every good record as a Task; every bad one as an error with file, line and field."""
    source = Path(path)
    result = TaskImport(source=source)
    seen: dict[str, int] = {}
    for line, record in iter_records(source):
        if isinstance(record, Reject):
            result.errors.append(RecordError(str(source), line, record.message, record.field))
            continue
        result.records += 1
        key = next((record.get(n) for n in FIELD_ALIASES["id"] if isinstance(record, dict) and record.get(n)), None)
        key = key if isinstance(key, str) else None
        try:
            task = record_to_task(record, source.name, line)
        except Reject as exc:
            result.errors.append(RecordError(str(source), line, exc.message, exc.field, key))
            continue
        if task.id in seen:
            alias = next(n for n in FIELD_ALIASES["id"] if record.get(n) is not None)
            result.errors.append(
                RecordError(str(source), line, f"duplicate task key {task.id!r} (first on line {seen[task.id]})", alias, task.id)
            )
            continue
        seen[task.id] = line
        result.tasks.append(task)
    return result


def write_imported(out_dir: str | Path, kind: str, result: TaskImport, **manifest_fields: Any) -> dict[str, Path]:
    """DIR/tasks.jsonl, DIR/errors.jsonl (one row per rejected record) and DIR/manifest.json of an import."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tasks_path, errors_path = out / "tasks.jsonl", out / "errors.jsonl"
    write_jsonl(tasks_path, result.tasks)
    write_jsonl(errors_path, [asdict(e) for e in result.errors])
    manifest = write_manifest(out, kind, source_path=str(result.source), source_sha256=sha256_file(result.source),
                              tasks_sha256=sha256_file(tasks_path), **manifest_fields)
    return {"tasks": tasks_path, "errors": errors_path, "manifest": manifest}


def write_import(result: TaskImport, out_dir: str | Path) -> dict[str, Path]:
    """A Fleet import's dataset folder, with counts per environment and the field aliases it accepted."""
    counts = {"records": result.records, "imported": len(result.tasks), "rejected": len(result.errors),
              "by_env": dict(sorted(Counter(t.env for t in result.tasks).items()))}
    return write_imported(out_dir, "fleet_import", result, counts=counts,
                          field_aliases={k: list(v) for k, v in FIELD_ALIASES.items()})
