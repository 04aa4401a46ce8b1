"""Episode records read from results.jsonl files, each remembering where it came from.

Every table, trace diff and report line points back to one row (`path:line`), so a number can
be audited. A "run folder" is anything `toolgym rollout` or `toolgym eval` wrote:

    RUN/results.jsonl                       one rollout
    RUN/trial-<t>/results.jsonl             `toolgym eval` trials (sampled)
    RUN/greedy/results.jsonl                `toolgym eval` greedy pass (temperature 0)

Rows are results rows (`toolgym.rollout.results.episode_to_row`); an error row is counted, never scored,
and shown with its cause (`toolgym.rollout.results.error_cause`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from toolgym.rollout.results import RESULTS_FILE, error_cause, row_to_episode
from toolgym.schema import Episode
from toolgym.schema.documents import read_json
from toolgym.schema.jsonl import JsonlError, iter_json_rows

TRIAL_PREFIX = "trial-"
GREEDY_DIR = "greedy"
REQUIRED_FIELDS = ("task_id", "sample_index", "env", "split", "status")


@dataclass(frozen=True)
class EpisodeRecord:
    """One results row plus its provenance (file, line, trial)."""

    row: dict[str, Any]
    path: Path
    line: int
    trial: str = ""  # "" for a single rollout, "trial-1" … for eval trials, "greedy"

    @property
    def task_id(self) -> str:
        return str(self.row["task_id"])

    @property
    def env(self) -> str:
        return str(self.row["env"])

    @property
    def split(self) -> str:
        return str(self.row["split"])

    @property
    def sample_index(self) -> int:
        return int(self.row["sample_index"])

    @property
    def status(self) -> str:
        return str(self.row["status"])

    @property
    def errored(self) -> bool:
        """An infrastructure failure: counted in its own column, never in a denominator."""
        return self.status == "error"

    @property
    def error_cause(self) -> str | None:
        """The short cause of an errored episode ("env error", "verifier error" …); None otherwise."""
        return error_cause(self.row.get("error")) if self.errored else None

    @property
    def passed(self) -> bool:
        reward = self.row.get("reward")
        return not self.errored and isinstance(reward, int | float) and reward >= 1.0

    @property
    def key(self) -> tuple[str, str, int]:
        """(trial, task_id, sample_index): the pairing key between two runs of the same tasks."""
        return (self.trial, self.task_id, self.sample_index)

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def anchor(self) -> str:
        """A stable id for this episode in the HTML viewer."""
        return f"{self.trial or 'run'}|{self.task_id}|{self.sample_index}"

    def episode(self) -> Episode:
        return row_to_episode(self.row)


def read_records(path: str | Path, trial: str = "") -> list[EpisodeRecord]:
    """Every row of one results.jsonl with its line number; a bad row raises JsonlError naming file and line."""
    path = Path(path)
    records: list[EpisodeRecord] = []
    for number, row in iter_json_rows(path, cut_off="last line is cut off (an interrupted run); re-run it to repair"):
        for name in REQUIRED_FIELDS:
            if name not in row:
                raise JsonlError(path, number, "missing: not a toolgym results row", field=name)
        if row["status"] not in ("ok", "truncated", "error"):
            raise JsonlError(path, number, f"unknown status {row['status']!r}", field="status")
        records.append(EpisodeRecord(row=row, path=path, line=number, trial=trial))
    return records


@dataclass
class RunRecords:
    """The episodes of one run folder: sampled trials and (if present) the greedy pass, kept apart."""

    name: str
    root: Path
    sampled: list[EpisodeRecord] = field(default_factory=list)
    greedy: list[EpisodeRecord] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def trials(self) -> list[str]:
        return sorted({r.trial for r in self.sampled}, key=_trial_order)

    @property
    def all(self) -> list[EpisodeRecord]:
        return self.sampled + self.greedy

    @cached_property
    def by_anchor(self) -> dict[str, EpisodeRecord]:
        return {r.anchor: r for r in self.all}


def _trial_order(name: str) -> tuple[int, str]:
    suffix = name[len(TRIAL_PREFIX):] if name.startswith(TRIAL_PREFIX) else ""
    return (int(suffix) if suffix.isdigit() else 10**9, name)


def is_run_folder(path: Path) -> bool:
    return ((path / RESULTS_FILE).is_file() or any(path.glob(f"{TRIAL_PREFIX}*/{RESULTS_FILE}"))
            or (path / GREEDY_DIR / RESULTS_FILE).is_file())


def load_run(path: str | Path, name: str | None = None) -> RunRecords:
    """A run folder (see the module docstring) or a single results.jsonl file."""
    path = Path(path)
    if path.is_file():
        return RunRecords(name=name or path.parent.name, root=path.parent, sampled=read_records(path))
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such run folder or results file")
    run = RunRecords(name=name or path.name, root=path, manifest=read_run_json(path / "manifest.json"))
    trial_dirs = sorted((p for p in path.glob(f"{TRIAL_PREFIX}*") if (p / RESULTS_FILE).is_file()),
                        key=lambda p: _trial_order(p.name))
    greedy_file = path / GREEDY_DIR / RESULTS_FILE
    if trial_dirs:
        for trial_dir in trial_dirs:
            run.sampled += read_records(trial_dir / RESULTS_FILE, trial=trial_dir.name)
    elif (path / RESULTS_FILE).is_file():
        run.sampled = read_records(path / RESULTS_FILE)
    elif not greedy_file.is_file():  # a greedy-only eval (trials 0) has just that
        raise FileNotFoundError(
            f"{path}: no {RESULTS_FILE}, {TRIAL_PREFIX}*/{RESULTS_FILE} or {GREEDY_DIR}/{RESULTS_FILE} "
            "(not a rollout or eval folder)"
        )
    if greedy_file.is_file():
        run.greedy = read_records(greedy_file, trial=GREEDY_DIR)
    return run


def read_run_json(path: Path) -> dict[str, Any]:
    """A run's JSON object file (manifest.json, summary.json), or {} when absent; bad JSON names the file and line."""
    if not path.is_file():
        return {}
    data = read_json(path)
    return data if isinstance(data, dict) else {}
