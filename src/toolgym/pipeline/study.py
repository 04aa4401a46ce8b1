"""`toolgym pipeline` with `study.seeds`: the pipeline once per seed, GRPO variants from each seed's SFT and RFT
models, then one report over the seeds.

    OUT/seed-<N>/                     the pipeline with seed N: a run folder like any other (it resumes)
    OUT/variants/<name>/seed-<N>/     seed N's dataset, teacher, SFT and RFT outputs (hard links where the
                                      filesystem allows, else copies) with their manifest records, then GRPO
                                      with the variant's grpo settings and an eval of its grpo model only
    OUT/report.md, report.html, study.json    the seeds report (`toolgym.eval.report_seeds`)

Runs go one after another, each seed's variants right after it. A variant sets only grpo settings, so the
stages it reuses have its seed's fingerprints, and the pipeline's own check confirms the reuse.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from toolgym.config.base import deep_merge
from toolgym.dataset.manifest import read_manifest, write_manifest
from toolgym.eval.report_seeds import render_seeds_text, write_seeds_report
from toolgym.eval.report_seeds_runs import POLICY_SEED, VARIANTS_FOLDER, StudyError
from toolgym.pipeline.config import PipelineConfig, pipeline_config_from_dict
from toolgym.pipeline.run import run_pipeline

REUSED_STAGES = ("tasks", "validate", "teacher", "sft", "rft")
LINKED_FOLDERS = ("teacher", "sft", "rft")  # never written again by a variant: hard links suffice
COPIED_FOLDERS = ("dataset",)  # a variant writes its rl_tasks.jsonl here
FINISHED = ("done", "nothing_kept", "disabled")


def seed_config(config: PipelineConfig, seed: int) -> PipelineConfig:
    """Seed `seed`'s run: the study's config as written, with that seed, in OUT/seed-<N>, without the study."""
    data = config.as_written()
    data.pop("study", None)
    data["seed"] = seed
    data["out"] = str(Path(config.out) / f"seed-{seed}")
    teacher = data.get("teacher")
    if config.study.teacher_follows_seed and isinstance(teacher, dict) and isinstance(teacher.get("policy"), str):
        teacher["policy"] = POLICY_SEED.sub(f"seed={seed}", teacher["policy"])
    return pipeline_config_from_dict(data, f"{config.out} (seed {seed})")


def variant_config(config: PipelineConfig, seed: int, name: str) -> PipelineConfig:
    """A GRPO variant of seed `seed`'s run: its grpo settings on top, an eval of grpo only, no control, no report."""
    data = seed_config(config, seed).as_written()
    grpo = data.setdefault("grpo", {})
    grpo["settings"] = deep_merge(grpo.get("settings") or {}, config.study.grpo_variants[name])
    data["out"] = str(Path(config.out) / VARIANTS_FOLDER / name / f"seed-{seed}")
    data["eval"] = {**(data.get("eval") or {}), "stages": ["grpo"]}
    data["random_init"] = {**(data.get("random_init") or {}), "enabled": False}
    data["report"] = {**(data.get("report") or {}), "enabled": False}
    return pipeline_config_from_dict(data, f"{config.out} (variant {name}, seed {seed})")


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another filesystem, or links not allowed
        shutil.copy2(source, target)


def reusable(run: Path) -> bool:
    """Whether a seed's run has finished every stage a variant reuses (`--only` may have left some out)."""
    records = read_manifest(run).get("stages_by_name", {})
    return all(isinstance(records.get(name), dict) and records[name].get("status") in FINISHED
               for name in REUSED_STAGES)


def seed_variant(source: Path, target: Path) -> None:
    """Give a variant's run folder what it reuses of its seed's run: the outputs it lacks and their stage records."""
    for name in LINKED_FOLDERS + COPIED_FOLDERS:
        if (source / name).is_dir() and not (target / name).exists():
            shutil.copytree(source / name, target / name,
                            copy_function=_link_or_copy if name in LINKED_FOLDERS else shutil.copy2)
    records = read_manifest(source).get("stages_by_name", {})
    manifest = read_manifest(target)
    own = dict(manifest.get("stages_by_name", {}))
    reused = {name: {"status": records[name].get("status"), "fingerprint": records[name].get("fingerprint"),
                     "detail": f"reused from {source}"}
              for name in REUSED_STAGES if isinstance(records.get(name), dict) and name not in own}
    if reused or not manifest:
        kept = {k: v for k, v in manifest.items() if k not in ("kind", "toolgym_version", "git_commit", "created_at",
                                                                "stages_by_name")}
        write_manifest(target, "pipeline", **{"status": "seeded", "invocations": [], **kept},
                       stages_by_name={**reused, **own})


def run_study(config: PipelineConfig, *, console: Any | None = None, progress: bool = False,
              only: list[str] | None = None) -> dict[str, Any]:
    """Every seed's run and its variants (each resumes), then the seeds report over them (with two seeds or more)."""
    root = Path(config.out)
    runs: dict[str, str] = {}
    for seed in config.study.seeds:
        run = seed_config(config, seed)
        if console is not None:
            console.print(f"[bold]=== seed {seed}: {run.out} ===[/bold]")
        run_pipeline(run, console=console, progress=progress, only=only)
        runs[f"seed-{seed}"] = run.out
        if not reusable(Path(run.out)):  # e.g. --only left stages out: nothing to reuse yet
            continue
        for name in config.study.grpo_variants:
            variant = variant_config(config, seed, name)
            if console is not None:
                console.print(f"[bold]=== seed {seed}, GRPO variant {name}: {variant.out} ===[/bold]")
            seed_variant(Path(run.out), Path(variant.out))
            run_pipeline(variant, console=console, progress=progress, only=only)
            runs[f"{name}/seed-{seed}"] = variant.out
    if len(config.study.seeds) < 2:
        return {"runs": runs, "report": None, "text": "one seed: no report over seeds"}
    try:
        markdown, html, numbers = write_seeds_report([root])
    except StudyError as exc:  # e.g. a seed whose eval has not run (--only)
        return {"runs": runs, "report": None, "text": f"no report over seeds: {exc}"}
    return {"runs": runs, "report": [str(markdown), str(html), str(numbers)],
            "text": render_seeds_text(json.loads(numbers.read_text()))}
