"""`run_pipeline`: every stage in order under one run folder, skipping what is already there.

A stage whose output exists is skipped, unless it was made with other settings (its fingerprint in
the run's manifest differs): that is an error naming the stage, never a silent reuse. Stage records
(status, wall seconds, CPU seconds including worker processes, details) live in `RUN/manifest.json`;
`RUN/summary.json` gathers them with the eval results and stage-to-stage tests.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolgym.cpu_time import cpu_seconds, cpu_since
from toolgym.dataset.manifest import read_manifest, write_manifest
from toolgym.pipeline import stages
from toolgym.pipeline.config import STAGES, PipelineConfig
from toolgym.pipeline.summary import (
    acceptance,
    comparisons,
    load_stage_runs,
    paired_tests,
    stage_results,
    task_flips,
    teacher_numbers,
    write_if_changed,
)

SUMMARY_FILE = "summary.json"


class PipelineError(RuntimeError):
    """A stage failed or cannot be reused; summary.json still records how far the run got."""


@dataclass(frozen=True)
class StageSpec:
    name: str
    done: Callable[[stages.Context], bool]
    run: Callable[[stages.Context], dict[str, Any]]
    enabled: Callable[[PipelineConfig], bool] = lambda config: True


STAGE_SPECS = (
    StageSpec("tasks", stages.tasks_done, stages.run_tasks),
    StageSpec("validate", stages.validate_done, stages.run_validate),
    StageSpec("teacher", stages.teacher_done, stages.run_teacher),
    StageSpec("sft", stages.sft_done, stages.run_sft_stage),
    StageSpec("random_init", stages.random_init_done, stages.run_random_init_stage, lambda c: c.random_init.enabled),
    StageSpec("rft", stages.rft_done, stages.run_rft_stage, lambda c: c.rft.enabled),
    StageSpec("grpo", stages.grpo_done, stages.run_grpo_stage, lambda c: c.grpo.enabled),
    StageSpec("eval", stages.eval_done, stages.run_eval_stage),
    StageSpec("report", stages.report_done, stages.run_report_stage, lambda c: c.report.enabled),
)
assert tuple(s.name for s in STAGE_SPECS) == STAGES


def _records(run: Path) -> dict[str, dict[str, Any]]:
    return dict(read_manifest(run).get("stages_by_name", {}))


def _write_manifest(ctx: stages.Context, records: dict[str, dict[str, Any]], status: str) -> None:
    write_manifest(ctx.run, "pipeline", status=status, config=ctx.config.model_dump(mode="json", by_alias=True),
                   stages=[{"name": n, **records[n]} for n in STAGES if n in records], stages_by_name=records,
                   invocations=ctx.notes.setdefault("invocations", []))


def build_summary(ctx: stages.Context, records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    config = ctx.config
    ks = sorted(set(config.eval.settings.ks))
    eval_dirs = {s: stages.eval_dir(ctx, s) for s in config.eval.stages
                 if (stages.eval_dir(ctx, s) / "eval.json").is_file()}
    runs = load_stage_runs(eval_dirs)
    results = stage_results(runs, ks)
    flips = task_flips(runs)
    paired = paired_tests(runs)
    # The report stage is left out: it reads this file, and its own record would make it stale at once.
    stage_rows = [{"name": name, **{k: v for k, v in records.get(name, {"status": "not_run"}).items()
                                    if k in ("status", "seconds", "cpu_seconds", "error", "detail")}}
                  for name in STAGES if name != "report"]
    ran = [records[n] for n in STAGES if n in records and n != "report"]
    return {
        "kind": "pipeline_summary",
        "run_dir": str(ctx.run),
        "stages": stage_rows,
        "wall_minutes": round(sum(r.get("seconds", 0.0) for r in ran) / 60, 2),
        "cpu_minutes": round(sum(r.get("cpu_seconds", 0.0) for r in ran) / 60, 2),
        "measure": "greedy pass@1 where the eval ran a greedy pass, else sampled successes / scored episodes",
        "results": results,
        "comparisons": comparisons(results, flips, paired),
        "teacher": teacher_numbers(ctx.stage_dir("teacher") / "rollout" / "results.jsonl"),
        "acceptance": acceptance(results, config.acceptance.split, config.acceptance.sft_min_pass_rate,
                                 config.acceptance.grpo_min_gain_points, flips, paired),
    }


def run_pipeline(config: PipelineConfig, *, console: Any | None = None, progress: bool = False,
                 only: list[str] | None = None) -> dict[str, Any]:
    """Run (or resume) every stage; returns the summary. `only` limits which stages may run."""
    if config.threads:
        import torch

        torch.set_num_threads(config.threads)
    if config.grpo.enabled:  # fail before hours of SFT, not after
        grpo = config.grpo_config("tasks", "model", "out")
        grpo.check_engine()
        if grpo.backend == "trl":
            from toolgym.integrations.trl_grpo.settings import check_trl_config

            check_trl_config(grpo)
    run = Path(config.out)
    run.mkdir(parents=True, exist_ok=True)
    ctx = stages.Context(config=config, run=run, console=console, progress=progress)
    previous = read_manifest(run)
    ctx.notes["invocations"] = list(previous.get("invocations", []))
    invocation: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "ran": [], "skipped": []}
    ctx.notes["invocations"].append(invocation)
    records = _records(run)
    failure: str | None = None
    for spec in STAGE_SPECS:
        fingerprint = config.section_fingerprint(spec.name)
        if not spec.enabled(config):
            records[spec.name] = {"status": "disabled", "fingerprint": fingerprint}
            continue
        if only is not None and spec.name not in only:
            continue
        record = records.get(spec.name, {})
        if spec.name == "report":  # the report reads summary.json: bring it up to date first
            write_if_changed(run / SUMMARY_FILE, build_summary(ctx, records))
        if spec.done(ctx):
            if record.get("fingerprint") not in (None, fingerprint):
                failure = (f"stage {spec.name}: its output in {run} was made with other settings; delete "
                           f"{_output_hint(spec.name)} to run it again with this config")
                break
            invocation["skipped"].append(spec.name)
            ctx.say(f"[dim]{spec.name}: output exists, skipped[/dim]")
            records.setdefault(spec.name, {"status": "done", "fingerprint": fingerprint, "detail": "found on disk"})
            continue
        ctx.say(f"[bold]== {spec.name} ==[/bold]")
        records[spec.name] = {"status": "running", "fingerprint": fingerprint}
        _write_manifest(ctx, records, "running")
        wall, cpu = time.perf_counter(), cpu_seconds(children=True)
        try:
            _fresh_accelerator_state()
            detail = spec.run(ctx)
        except Exception as exc:  # recorded in the summary, then raised as a PipelineError
            records[spec.name] = {"status": "failed", "fingerprint": fingerprint,
                                  "seconds": round(time.perf_counter() - wall, 3),
                                  "cpu_seconds": round(cpu_since(cpu, children=True), 3),
                                  "error": f"{type(exc).__name__}: {exc}"}
            failure = f"stage {spec.name} failed: {type(exc).__name__}: {exc}"
            break
        status = str(detail.pop("status", "done")) if isinstance(detail, dict) else "done"
        records[spec.name] = {"status": status, "fingerprint": fingerprint,
                              "seconds": round(time.perf_counter() - wall, 3),
                              "cpu_seconds": round(cpu_since(cpu, children=True), 3), "detail": detail}
        invocation["ran"].append(spec.name)
        _write_manifest(ctx, records, "running")
    summary = build_summary(ctx, records)
    write_if_changed(run / SUMMARY_FILE, summary)
    _write_manifest(ctx, records, "failed" if failure else "complete")
    if failure:
        raise PipelineError(failure)
    return summary


def _fresh_accelerator_state() -> None:
    """Stages run in one process, and accelerate keeps one process-wide state: SFT in bf16 then RFT's SFT in
    fp32 would make the second `Accelerator(...)` refuse. Each stage starts from a clean state."""
    from accelerate.state import AcceleratorState, PartialState

    if AcceleratorState._shared_state and PartialState().num_processes == 1:
        AcceleratorState._reset_state()


def _output_hint(stage: str) -> str:
    return {"tasks": "dataset/built/", "validate": "dataset/tasks.jsonl", "teacher": "teacher/", "sft": "sft/",
            "random_init": "random_init/", "rft": "rft/", "grpo": "grpo/", "eval": "eval/"}.get(stage, stage)


def render_summary(summary: dict[str, Any]) -> str:
    """The summary as the lines a person reads at the end of a run."""
    lines = ["stages:"]
    for stage in summary["stages"]:
        seconds = stage.get("seconds")
        cpu = stage.get("cpu_seconds")
        timing = f" {seconds / 60:.1f} wall-min, {cpu / 60:.1f} CPU-min" if seconds is not None and cpu is not None else ""
        lines.append(f"  {stage['name']:<11} {stage['status']}{timing}" + (f" — {stage['error']}" if stage.get("error") else ""))
    lines.append(f"total: {summary['wall_minutes']} wall-min, {summary['cpu_minutes']} CPU-min (stages run so far)")
    for stage, splits in summary["results"].items():
        for split, numbers in splits.items():
            greedy = numbers.get("greedy")
            text = (f"greedy {greedy['successes']}/{greedy['scored']}" if greedy else "")
            sampled = "" if numbers.get("greedy_only") else f"sampled {numbers['successes']}/{numbers['scored']} "
            lines.append(f"  {stage:<11} {split:<13} {sampled}(errored {numbers['errored']}) {text}")
    for comparison in summary["comparisons"]:
        lines.append(f"  {comparison['from']} → {comparison['to']} ({comparison['split']}, {comparison['measure']}): "
                     f"{comparison['from_rate']} → {comparison['to_rate']}, {comparison['difference_pp']:+.1f} pp, "
                     f"p = {comparison['p_value']:.3g}")
    verdict = summary.get("acceptance", {})
    if verdict:
        lines.append("acceptance: " + json.dumps(verdict, default=str))
    return "\n".join(lines)

