"""The runs a seeds report compares: pipeline runs of one config under several seeds, checked to be comparable.

A study folder (what `toolgym pipeline` writes for `study.seeds`) holds

    STUDY/seed-<N>/                    a pipeline run per seed; its eval/<stage>/ are the stages
    STUDY/variants/<name>/seed-<N>/    GRPO again from seed N's SFT and RFT models, other grpo settings;
                                       its eval/grpo/ is the stage grpo-<name> of seed N

Runs are refused, with the difference named, when their configs differ in anything but the seed (the run
folder, the report's own settings and a `seed=N` inside a policy spec follow the seed), or when they scored
other held-out tasks: pooling and pairing need the same design under every seed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgym.eval.records import RunRecords, is_run_folder, load_run, read_run_json

SEED_FOLDER = re.compile(r"seed-(\d+)")
VARIANTS_FOLDER = "variants"
FOLLOW_THE_SEED = ("out", "seed", "study")  # top-level keys that differ between a study's runs by design
NOT_RESULTS = ("report", "acceptance")  # sections that decide no number of a run
VARIANT_SECTIONS = ("grpo", "eval", "random_init")  # what a GRPO variant may set apart from its seed's run
POLICY_SEED = re.compile(r"\bseed=\d+")


class StudyError(ValueError):
    """Runs that cannot be pooled or paired; the message names the runs and the difference."""


@dataclass
class SeedRun:
    """One pipeline run: its seed, its config as recorded, and its stages' eval runs by stage name."""

    path: Path
    seed: int
    config: dict[str, Any]
    stages: dict[str, RunRecords] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"seed-{self.seed}"


def is_study_folder(folder: Path) -> bool:
    """Whether `folder` holds seed-<N>/ pipeline runs (and is not a run itself)."""
    return folder.is_dir() and not (folder / "eval").is_dir() and bool(seed_folders(folder))


def seed_folders(folder: Path) -> list[Path]:
    found = [p for p in folder.iterdir() if p.is_dir() and SEED_FOLDER.fullmatch(p.name)]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def variant_folders(folder: Path) -> dict[str, list[Path]]:
    """variant name → its seed runs, for a study folder."""
    root = folder / VARIANTS_FOLDER
    if not root.is_dir():
        return {}
    return {p.name: seed_folders(p) for p in sorted(root.iterdir()) if p.is_dir() and seed_folders(p)}


def load_seed_run(path: Path, only: tuple[str, ...] | None = None) -> SeedRun:
    """A pipeline run folder's seed, config and stage evals (`only`: these stages); errors name the file."""
    if not path.is_dir():
        raise StudyError(f"{path}: no such run folder")
    manifest_path = path / "manifest.json"
    config = read_run_json(manifest_path).get("config")
    if not isinstance(config, dict):
        raise StudyError(f"{manifest_path}: no pipeline config recorded (a seeds report compares `toolgym "
                         "pipeline` runs; their manifest.json holds the config they ran with)")
    seed = config.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise StudyError(f"{manifest_path}: config.seed is {seed!r}, not an integer")
    run = SeedRun(path=path, seed=seed, config=config)
    eval_root = path / "eval"
    folders = sorted(p for p in eval_root.iterdir() if p.is_dir()) if eval_root.is_dir() else []
    for folder in folders:
        if (only is None or folder.name in only) and is_run_folder(folder):
            run.stages[folder.name] = load_run(folder, name=folder.name)
    if not run.stages and only is None:  # a variant may not have reached its eval yet
        raise StudyError(f"{path}: no stage evals under {eval_root} (has the pipeline's eval stage run?)")
    return run


def _normalized(config: dict[str, Any], drop: tuple[str, ...]) -> dict[str, Any]:
    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return POLICY_SEED.sub("seed=N", value) if isinstance(value, str) else value

    return {k: clean(v) for k, v in config.items() if k not in drop}


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def config_differences(a: dict[str, Any], b: dict[str, Any], ignore: tuple[str, ...] = ()) -> list[str]:
    """Dotted settings whose values differ ("sft.max_steps: 250 vs 100"), the seed's own settings left out and
    any under the top-level sections `ignore`."""
    drop = FOLLOW_THE_SEED + NOT_RESULTS + ignore
    flat_a, flat_b = _flatten(_normalized(a, drop)), _flatten(_normalized(b, drop))
    missing = object()
    return [f"{key}: {flat_a.get(key, '(not set)')!r} vs {flat_b.get(key, '(not set)')!r}"
            for key in sorted(set(flat_a) | set(flat_b)) if flat_a.get(key, missing) != flat_b.get(key, missing)]


def _refuse_differences(reference: SeedRun, other: SeedRun, ignore: tuple[str, ...], what: str) -> None:
    differences = config_differences(reference.config, other.config, ignore)
    if differences:
        more = f" (and {len(differences) - 3} more)" if len(differences) > 3 else ""
        raise StudyError(f"{reference.path} and {other.path} differ in {'; '.join(differences[:3])}{more}: {what}")


def task_ids(run: SeedRun) -> dict[str, set[str]]:
    """split → the tasks any stage of the run scored (greedy pass, else sampled episodes)."""
    found: dict[str, set[str]] = {}
    for records in run.stages.values():
        for record in records.greedy or records.sampled:
            found.setdefault(record.split, set()).add(record.task_id)
    return found


def _refuse_other_tasks(reference: SeedRun, other: SeedRun) -> None:
    ours, theirs = task_ids(reference), task_ids(other)
    for split in sorted(set(ours) | set(theirs)):
        a, b = ours.get(split, set()), theirs.get(split, set())
        if a != b:
            only_b, only_a = sorted(b - a), sorted(a - b)
            raise StudyError(
                f"{other.path} scored other {split} tasks than {reference.path}: {len(only_b)} only in the first"
                + (f" (e.g. {only_b[0]})" if only_b else "") + f", {len(only_a)} only in the second"
                + (f" (e.g. {only_a[0]})" if only_a else "") + "; the runs' eval caps or datasets differ "
                "(a capped split needs tasks.eval_limit_seed to be the same tasks under every seed)")


def check_seed_runs(runs: list[SeedRun]) -> None:
    """The same config but the seed, distinct seeds, the same tasks per split; else a StudyError."""
    if len(runs) < 2:
        raise StudyError("a seeds report needs at least two runs (one run's report: toolgym report RUN_DIR)")
    seen: dict[int, Path] = {}
    for run in runs:
        if run.seed in seen:
            raise StudyError(f"{run.path} and {seen[run.seed]} both ran with seed {run.seed}")
        seen[run.seed] = run.path
    for run in runs[1:]:
        _refuse_differences(runs[0], run, (), "a seeds report pools runs of one config that differ only in seed")
        _refuse_other_tasks(runs[0], run)


def attach_variant(runs: list[SeedRun], name: str, variant: list[SeedRun]) -> None:
    """Add a GRPO variant's eval of grpo to its seed's run as stage grpo-<name>, after checking that it differs
    from that run only in grpo, eval and random_init settings and scored the same tasks."""
    by_seed = {run.seed: run for run in runs}
    for run in variant:
        base = by_seed.get(run.seed)
        if base is None:
            raise StudyError(f"{run.path}: variant {name} ran seed {run.seed}, which no seed run of the study has")
        _refuse_differences(base, run, VARIANT_SECTIONS,
                            f"variant {name} must reuse its seed's run and set only {', '.join(VARIANT_SECTIONS)}")
        if "grpo" in run.stages:
            _refuse_other_tasks(base, run)
            base.stages[f"grpo-{name}"] = run.stages["grpo"]


def load_study(paths: list[Path]) -> list[SeedRun]:
    """Seed runs from run folders, or from one study folder with its variants; checked (see `check_seed_runs`)."""
    if len(paths) == 1 and is_study_folder(paths[0]):
        runs = [load_seed_run(p) for p in seed_folders(paths[0])]
        check_seed_runs(runs)
        for name, folders in variant_folders(paths[0]).items():
            attach_variant(runs, name, [load_seed_run(p, only=("grpo",)) for p in folders])
        return runs
    runs = [load_seed_run(p) for p in paths]
    check_seed_runs(runs)
    return sorted(runs, key=lambda run: run.seed)
