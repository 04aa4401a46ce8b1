"""What a run folder holds, read for the report: stages and their times, the dataset, runs, metrics.

Each reader says what it found and never guesses: a missing part gives an empty answer, and the
report says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolgym.eval.records import GREEDY_DIR, TRIAL_PREFIX, is_run_folder, read_run_json
from toolgym.schema.jsonl import iter_json_rows

STAGE_ORDER = ("untrained", "base", "baseline", "before", "teacher", "random_init", "sft", "rft", "grpo", "after", "final")
CONTROL_STAGES = ("random_init",)  # beside the stages, not one of them: left out of the stage-by-stage flips
SECONDS_KEYS = ("seconds", "duration_s", "elapsed_s", "wall_s", "time_s")
STEP_KEYS = ("step", "global_step", "iteration")
PREFERRED_METRICS = (
    "reward", "success", "pass", "partial", "kl", "entropy", "tool_call", "response", "length", "token",
    "loss", "turns", "format", "groups_with_signal", "clip", "grad_norm",
)


@dataclass
class Stage:
    name: str
    seconds: float | None
    status: str = ""


def _seconds(entry: dict[str, Any]) -> float | None:
    for key in SECONDS_KEYS:
        value = entry.get(key)
        if isinstance(value, int | float):
            return float(value)
    inner = entry.get("summary")
    if isinstance(inner, dict):
        return _seconds(inner)
    return None


def pipeline_stages(run_dir: Path, summary: dict[str, Any], manifest: dict[str, Any]) -> list[Stage]:
    """Stages with their wall time, from summary.json / manifest.json, else sub-folders' manifests."""
    for source in (summary, manifest):
        stages = source.get("stages")
        if isinstance(stages, list):
            found = [Stage(str(s.get("name") or s.get("stage") or f"stage {i + 1}"), _seconds(s),
                           str(s.get("status") or ("skipped" if s.get("skipped") else "")))
                     for i, s in enumerate(stages) if isinstance(s, dict)]
            if found:
                return found
        if isinstance(stages, dict) and stages:
            return [Stage(str(name), float(value) if isinstance(value, int | float) else
                          (_seconds(value) if isinstance(value, dict) else None),
                          str(value.get("status", "")) if isinstance(value, dict) else "")
                    for name, value in stages.items()]
    stages = []
    for path in sorted(run_dir.glob("*/manifest.json")) + sorted(run_dir.glob("*/*/manifest.json")):
        folder = path.parent
        # a trial's time is part of its eval's, unless the run folder is that eval itself
        if (folder.name.startswith(TRIAL_PREFIX) or folder.name == GREEDY_DIR) and folder.parent != run_dir:
            continue
        data = read_run_json(path)
        seconds = _seconds(data)
        if seconds is not None:
            label = str(folder.relative_to(run_dir))
            stages.append(Stage(f"{label} ({data.get('kind', '')})" if data.get("kind") else label, seconds,
                                str(data.get("status", ""))))
    return stages


def find_tasks_file(run_dir: Path, manifests: list[dict[str, Any]]) -> Path | None:
    for candidate in [run_dir / "tasks.jsonl", *sorted(run_dir.glob("*/tasks.jsonl")),
                      *sorted(run_dir.glob("*/*/tasks.jsonl"))]:
        if candidate.is_file():
            return candidate
    for manifest in manifests:
        path = manifest.get("tasks_path")
        if path and Path(path).is_file():
            return Path(path)
    return None


def discover_runs(run_dir: Path) -> list[Path]:
    """Run folders under run_dir (a run's own trial-*/greedy folders are part of it, not runs)."""
    found: list[Path] = []
    for path in sorted({p.parent for p in run_dir.rglob("results.jsonl")}):
        if path.name.startswith(TRIAL_PREFIX) or path.name == GREEDY_DIR:
            parent = path.parent
            if is_run_folder(parent):
                path = parent
        if path not in found and is_run_folder(path):
            found.append(path)
    return found


def run_label(path: Path, run_dir: Path) -> str:
    if path.resolve() == run_dir.resolve():
        return run_dir.name
    return str(path.resolve().relative_to(run_dir.resolve()))


def names_stage(name: str, word: str) -> bool:
    """Whether a run name holds a stage word on its own ("eval/sft", not "sftx")."""
    return re.search(rf"(^|[^a-z]){word}([^a-z]|$)", name.lower()) is not None


def stage_rank(name: str) -> tuple[int, int, str]:
    lowered = name.lower()
    step = re.search(r"(?:step|checkpoint)-(\d+)", lowered)
    if step:
        return (len(STAGE_ORDER), int(step.group(1)), lowered)
    for index, word in enumerate(STAGE_ORDER):
        if names_stage(lowered, word):
            return (index, 0, lowered)
    return (len(STAGE_ORDER) // 2, 0, lowered)


def read_metrics(path: Path) -> dict[str, list[tuple[float, float]]]:
    """column → [(step, value)] for every numeric column of one metrics.jsonl."""
    series: dict[str, list[tuple[float, float]]] = {}
    for index, (_, row) in enumerate(iter_json_rows(path)):
        if not isinstance(row, dict):
            continue
        step = next((row[k] for k in STEP_KEYS if isinstance(row.get(k), int | float)), index + 1)
        for key, value in row.items():
            if key in STEP_KEYS or isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if isinstance(value, float) and not math.isfinite(value):
                continue
            series.setdefault(key, []).append((float(step), float(value)))
    return series




def metric_rank(name: str) -> tuple[int, str]:
    lowered = name.lower()
    return next((i for i, word in enumerate(PREFERRED_METRICS) if word in lowered), len(PREFERRED_METRICS)), lowered
