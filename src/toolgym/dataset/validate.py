"""Validate a task dataset: replay every reference solution in a fresh environment, keep what scores 1.

Each task row is replayed in a process pool (one worker per core by default; each worker builds
an app's seed snapshot at most once, or inherits it from the parent under fork). A task is kept
when every reference call succeeds and its verifier gives reward 1; `toolgym.rollout.teacher_check`
can then require a teacher model to solve it at least once in K rollouts. Outputs: the kept rows
byte-for-byte as they were in the input, one report row per input task with the reason it was
kept or dropped, and a manifest with input/output sha256 and counts by environment and reason.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from toolgym.agent.limits import EpisodeLimits
from toolgym.dataset.manifest import TASKS_FILE, read_manifest, sha256_file, tasks_file, write_manifest
from toolgym.dataset.replay import replay_task
from toolgym.envs import Environment, get_app, make_env
from toolgym.policy.base import Sampling
from toolgym.policy.spec import PolicyChoice
from toolgym.schema import Task
from toolgym.schema.jsonl import BadJson, field_path, json_type, loads

REPORT_FILE = "report.jsonl"
# Why a task was kept or dropped; report rows and manifest counts use these names.
REASONS = (
    "kept",
    "invalid_row",  # not a Task (bad JSON or a field the schema rejects)
    "duplicate_id",  # an earlier row has the same id
    "unknown_env",  # the task's environment is not an installed app
    "env_error",  # a tool crashed during replay: the environment is broken
    "verifier_error",  # the checks or the Python verifier could not run
    "reference_call_failed",  # a gold tool call returned an error
    "checks_failed",  # replay finished but the verdict is not reward 1
    "replay_crashed",  # replay itself raised (a bug below this module)
    "teacher_unsolved",  # the teacher never succeeded in K samples
    "teacher_error",  # every teacher sample was an infrastructure error
)
_ENV_HINT = re.compile(rb'"env"\s*:\s*"([^"\\]+)"')


@dataclass
class TaskReport:
    """One report.jsonl row: what happened to the task on input line `line`."""

    line: int
    id: str | None
    env: str | None
    kept: bool
    reason: str
    detail: str = ""
    reward: float | None = None
    partial_score: float | None = None
    failed_checks: list[dict[str, str]] = field(default_factory=list)
    failed_calls: list[str] = field(default_factory=list)
    replay_ms: float = 0.0
    teacher: dict[str, int] | None = None

    def drop(self, reason: str, detail: str) -> None:
        self.kept, self.reason, self.detail = False, reason, detail


class TeacherEpisodes(Sampling, EpisodeLimits):
    """How a teacher's episodes sample, how long and how many at once they run: the episode settings every
    command shares, for the validation teacher check and the pipeline's teacher stage."""

    concurrency: int = Field(8, ge=1)
    """Teacher episodes in flight."""
    timeout_s: float = Field(300.0, gt=0)
    """Wall clock per teacher episode, seconds (a hosted teacher answers slower than a local model)."""


class TeacherRollouts(TeacherEpisodes):
    """How a teacher is rolled out on each task that survives replay; the task is kept if any rollout succeeds."""

    samples: int = Field(4, ge=1)
    """Teacher rollouts per task; the task is kept if any succeeds."""
    temperature: float = Field(0.8, ge=0.0)
    """Teacher sampling temperature."""


class TeacherConfig(TeacherRollouts, PolicyChoice):
    """A teacher check: which teacher, and how it is rolled out; recorded in the validation manifest (less the
    API key)."""

    policy: str
    """Policy spec of the teacher (e.g. openai:URL#MODEL; toolgym.policy.engines parses it)."""
    api_key: str | None = None
    """API key of the teacher's server (default: $OPENAI_API_KEY); never written to the manifest."""


@dataclass
class ValidationRun:
    """Everything one validation produced, before it is written."""

    input_path: Path
    rows: list[tuple[int, bytes]]
    reports: list[TaskReport]
    workers: int
    replay_seconds: float
    teacher_seconds: float = 0.0
    teacher: TeacherConfig | None = None

    @property
    def kept_lines(self) -> list[bytes]:
        kept = {r.line for r in self.reports if r.kept}
        return [raw for line, raw in self.rows if line in kept]

    @property
    def tasks_per_second(self) -> float:
        return len(self.reports) / self.replay_seconds if self.replay_seconds > 0 else 0.0

    def by_env(self) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = {}
        for report in self.reports:
            counts = table.setdefault(report.env or "(unknown)", {"input": 0, "kept": 0, "dropped": 0})
            counts["input"] += 1
            counts["kept" if report.kept else "dropped"] += 1
        return dict(sorted(table.items()))

    def by_reason(self) -> dict[str, int]:
        counts = Counter(r.reason for r in self.reports)
        return {reason: counts[reason] for reason in REASONS if counts[reason]}


def usable_cores() -> int:
    """Cores this process may run on (a container's share, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def read_rows(path: Path) -> list[tuple[int, bytes]]:
    """(line number, the line's exact bytes without its newline) for every non-blank line."""
    rows = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            content = line[:-1] if line.endswith(b"\n") else line
            if number == 1:
                content = content.removeprefix(b"\xef\xbb\xbf")  # a BOM is no part of the row
            if content.strip():
                rows.append((number, content))
    return rows


# ------------------------------------------------------------------------------------------
#  Replay (runs in pool workers)
# ------------------------------------------------------------------------------------------

_worker_envs: dict[str, Environment] = {}


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = field_path(first.get("loc", ()))
    return f"field '{where}': {first.get('msg')}" if where else str(first.get("msg"))


def _bare_identity(data: dict[str, Any]) -> tuple[str | None, str | None]:
    """id and env of a row that is not a valid Task, where they are strings."""
    ident, env = data.get("id"), data.get("env")
    return (ident if isinstance(ident, str) else None), (env if isinstance(env, str) else None)


class InvalidRow(ValueError):
    """A row that is not a Task: why (naming the field), and its id and env where it has them as strings."""

    def __init__(self, message: str, identity: tuple[str | None, str | None] = (None, None)) -> None:
        super().__init__(message)
        self.identity = identity


def parse_task(raw: bytes) -> Task:
    """A row as a Task, read by the JSONL reader's rules (UTF-8, bounded nesting, no lone surrogates)."""
    try:
        data = loads(raw)
    except BadJson as exc:
        raise InvalidRow(f"field '{exc.field}': {exc.message}" if exc.field else exc.message) from None
    if not isinstance(data, dict):
        raise InvalidRow(f"not a JSON object (got {json_type(data)})")
    try:
        return Task.model_validate(data)
    except ValidationError as exc:
        raise InvalidRow(_first_error(exc), _bare_identity(data)) from None


def replay_row(line: int, raw: bytes, envs: dict[str, Environment] | None = None) -> TaskReport:
    """Parse one row and replay it; every failure becomes a reason, none escapes."""
    envs = _worker_envs if envs is None else envs
    started = time.perf_counter()
    try:
        task = parse_task(raw)
    except InvalidRow as exc:
        return TaskReport(line, *exc.identity, False, "invalid_row", str(exc))
    report = TaskReport(line, task.id, task.env, False, "kept")
    try:
        env = envs.get(task.env)
        if env is None:
            env = envs[task.env] = make_env(task.env)
    except (KeyError, ImportError, ValueError) as exc:
        report.drop("unknown_env", f"{type(exc).__name__}: {exc}".replace("KeyError: ", ""))
        return report
    try:
        outcome = replay_task(task, env)
    except Exception as exc:
        report.drop("replay_crashed", f"{type(exc).__name__}: {exc}")
        return report
    verdict = outcome.verdict
    report.replay_ms = round((time.perf_counter() - started) * 1000, 3)
    report.failed_calls = list(outcome.failed_calls)
    if verdict.error is None:
        report.reward, report.partial_score = verdict.reward, verdict.partial_score
        report.failed_checks = [{"label": c.label, "kind": c.kind, "detail": c.detail} for c in verdict.checks if not c.passed]
    if outcome.env_error:
        report.drop("env_error", outcome.env_error)
    elif verdict.error:
        report.drop("verifier_error", verdict.error)
    elif outcome.failed_calls:
        report.drop("reference_call_failed", "; ".join(outcome.failed_calls))
    elif verdict.reward < 1.0:
        report.drop("checks_failed", "; ".join(f"{c['label']}: {c['detail']}" for c in report.failed_checks))
    else:
        report.kept, report.detail = True, "reference solution replays to reward 1"
    return report


def _replay_chunk(rows: list[tuple[int, bytes]]) -> list[TaskReport]:
    return [replay_row(line, raw) for line, raw in rows]


def _warm_snapshots(env_names: list[str]) -> None:
    """Build each app's seed once; forked workers inherit it, spawned ones build it here once."""
    for env_name in env_names:
        for app_name in env_name.split("+"):
            try:
                get_app(app_name).snapshot()
            except Exception:  # an app that cannot load is reported per task
                continue


def _env_names(rows: list[tuple[int, bytes]]) -> list[str]:
    names = {m.group(1).decode(errors="replace") for _, raw in rows if (m := _ENV_HINT.search(raw))}
    return sorted(names)


def _chunks(rows: list[tuple[int, bytes]], size: int) -> Iterator[list[tuple[int, bytes]]]:
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


def replay_rows(rows: list[tuple[int, bytes]], workers: int) -> list[TaskReport]:
    """Replay every row, in `workers` processes (1 = in this process)."""
    _warm_snapshots(_env_names(rows))
    if workers <= 1 or len(rows) < 2:
        envs: dict[str, Environment] = {}
        return [replay_row(line, raw, envs) for line, raw in rows]
    method = "fork" if "fork" in get_all_start_methods() else "spawn"
    size = max(8, min(256, len(rows) // (workers * 8) or 1))
    reports: list[TaskReport] = []
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=get_context(method), initializer=_warm_snapshots, initargs=(_env_names(rows),)
    ) as pool:
        for chunk in pool.map(_replay_chunk, _chunks(rows, size)):
            reports.extend(chunk)
    return reports


def _mark_duplicates(reports: list[TaskReport]) -> None:
    first_line: dict[str, int] = {}
    for report in reports:
        if report.id is None or report.reason == "invalid_row":
            continue
        if report.id in first_line:
            report.drop("duplicate_id", f"id {report.id!r} already used on line {first_line[report.id]}")
        else:
            first_line[report.id] = report.line


# ------------------------------------------------------------------------------------------
#  Entry points
# ------------------------------------------------------------------------------------------


def validate_dataset(dataset: str | Path, *, workers: int | None = None) -> ValidationRun:
    """Replay every task of `dataset`; nothing is written (the teacher check is `toolgym.rollout.teacher_check`)."""
    path = tasks_file(dataset)
    rows = read_rows(path)
    workers = workers if workers is not None else usable_cores()
    started = time.perf_counter()
    reports = sorted(replay_rows(rows, workers), key=lambda r: r.line)
    _mark_duplicates(reports)
    return ValidationRun(path, rows, reports, workers, time.perf_counter() - started)


def write_validation(run: ValidationRun, out_dir: str | Path) -> dict[str, Path]:
    """DIR/tasks.jsonl (kept rows, same bytes), DIR/report.jsonl (one row per input task), DIR/manifest.json."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tasks_path, report_path = out / TASKS_FILE, out / REPORT_FILE
    with open(tasks_path, "wb") as handle:
        for raw in run.kept_lines:
            handle.write(raw + b"\n")
    with open(report_path, "w", encoding="utf-8") as handle:
        for report in run.reports:
            handle.write(json.dumps(asdict(report), ensure_ascii=False, separators=(",", ":")) + "\n")
    try:
        source = read_manifest(run.input_path.parent)
    except ValueError:  # the input folder's manifest only names its version: unreadable is no reason to stop
        source = {}
    env_versions = {}
    for env_name in run.by_env():
        try:
            env_versions[env_name] = make_env(env_name).version
        except (KeyError, ImportError, ValueError):
            continue
    manifest = write_manifest(
        out,
        "validated_tasks",
        input_path=str(run.input_path),
        input_sha256=sha256_file(run.input_path),
        input_version=source.get("version"),
        tasks_sha256=sha256_file(tasks_path),
        report_sha256=sha256_file(report_path),
        counts={
            "input": len(run.reports),
            "kept": sum(r.kept for r in run.reports),
            "dropped": sum(not r.kept for r in run.reports),
            "by_env": run.by_env(),
            "by_reason": run.by_reason(),
        },
        env_versions=env_versions,
        checks="replay: every reference call succeeds and the verifier gives reward 1"
        + ("; teacher: solved at least once in K samples" if run.teacher else ""),
        teacher=(run.teacher.model_dump() | {"api_key": None}) if run.teacher else None,
        workers=run.workers,
        replay_seconds=round(run.replay_seconds, 3),
        teacher_seconds=round(run.teacher_seconds, 3),
        tasks_per_second=round(run.tasks_per_second, 1),
    )
    return {"tasks": tasks_path, "report": report_path, "manifest": manifest}

