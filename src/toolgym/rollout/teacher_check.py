"""The teacher check of `toolgym tasks validate`: a task that replays to reward 1 is kept only if a
teacher model then solves it at least once in K rollouts.

It lives at the rollout layer because it plays the teacher through the rollout runner;
`toolgym.dataset.validate` replays, this module adds the teacher's verdict to the same reports.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from toolgym.agent.limits import EpisodeLimits
from toolgym.dataset.manifest import sha256_file
from toolgym.dataset.validate import TeacherConfig, ValidationRun, parse_task, validate_dataset
from toolgym.policy.base import Policy
from toolgym.policy.engines import build_policy
from toolgym.rollout.results import RESULTS_FILE, read_rows
from toolgym.rollout.runner import run_rollout

TEACHER_DIR = "teacher"  # the teacher's rollouts, under the validation's output folder


def _empty_tally() -> dict[str, int]:
    return {"samples": 0, "passed": 0, "errors": 0}


def tally_results(results_path: Path) -> dict[str, dict[str, int]]:
    """Per task id: samples rolled out, samples that passed (reward 1), samples that were infrastructure errors."""
    tallies: dict[str, dict[str, int]] = {}
    for row in read_rows(results_path):
        tally = tallies.setdefault(row["task_id"], _empty_tally())
        tally["samples"] += 1
        if row.get("status") == "error":
            tally["errors"] += 1
        elif (row.get("reward") or 0.0) >= 1.0:
            tally["passed"] += 1
    return tallies


def check_with_teacher(run: ValidationRun, teacher: TeacherConfig, out_dir: Path) -> None:
    """Roll the teacher out K times on every task that survived replay; keep those it solves at least once."""
    survivors = {r.line: r for r in run.reports if r.kept}
    if not survivors:
        return
    raw_by_line = dict(run.rows)
    tasks = [parse_task(raw_by_line[line]) for line in survivors]
    rollout_dir = out_dir / TEACHER_DIR
    spec = teacher.policy_spec
    if spec is None:
        raise ValueError("teacher check: the teacher names no policy")

    def factory() -> Policy:
        return build_policy(spec, api_key=teacher.api_key or os.environ.get("OPENAI_API_KEY"))

    asyncio.run(
        run_rollout(
            tasks, factory, out_dir=rollout_dir, samples_per_task=teacher.samples, concurrency=teacher.concurrency,
            sampling=teacher.to_params(), limits=teacher.part(EpisodeLimits),
            tasks_sha256=sha256_file(run.input_path), tasks_path=run.input_path, config={"purpose": "teacher check"},
        )
    )
    tallies = tally_results(rollout_dir / RESULTS_FILE)
    for report in survivors.values():
        tally = tallies.get(report.id or "", _empty_tally())
        report.teacher = tally
        if tally["passed"] > 0:
            continue
        if tally["samples"] and tally["errors"] == tally["samples"]:
            report.drop("teacher_error", f"all {tally['samples']} teacher samples were infrastructure errors")
        else:
            report.drop("teacher_unsolved", f"teacher solved 0 of {tally['samples']} samples")


def validate_with_teacher(
    dataset: str | Path,
    *,
    workers: int | None = None,
    teacher: TeacherConfig | None = None,
    out_dir: str | Path | None = None,
) -> ValidationRun:
    """Replay every task of `dataset`, then (with a teacher) roll it out; nothing is written except teacher rollouts."""
    run = validate_dataset(dataset, workers=workers)
    if teacher is None:
        return run
    if out_dir is None:
        raise ValueError("a teacher check needs out_dir for its rollouts")
    run.teacher = teacher
    started = time.perf_counter()
    check_with_teacher(run, teacher, Path(out_dir))
    run.teacher_seconds = time.perf_counter() - started
    return run

