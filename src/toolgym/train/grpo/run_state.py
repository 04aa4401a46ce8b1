"""A GRPO run's saved state: the manifest that identifies the run, resuming from its latest checkpoint
(refused when the config, tasks or model changed), and saving a checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolgym.dataset.manifest import read_manifest, sha256_file, write_manifest
from toolgym.schema import Task
from toolgym.schema.documents import read_json
from toolgym.train.checkpoint import (
    STATE_FILE,
    changed_since_checkpoint,
    latest_checkpoint,
    load_checkpoint,
    remove_partial_checkpoints,
    save_checkpoint,
)
from toolgym.train.distributed import WORLD_SIZE_KEY, WorldSizeError, check_world_size
from toolgym.train.grpo.config import GRPOConfig, fingerprint_of_recorded
from toolgym.train.grpo.curriculum import Curriculum, CurriculumRule
from toolgym.train.grpo.result import GRPOError
from toolgym.train.metrics import MetricsLog

# What must match between the run in OUT and the config that resumes it.
RESUME_KEYS = ("config_fingerprint", "tasks_sha256", "base_model")


def manifest_fields(config: GRPOConfig, accelerator: Any, tasks_path: Path, train_tasks: int,
                    eval_tasks: int) -> dict[str, Any]:
    """The manifest's description of the run (what resuming compares)."""
    return {
        "config": config.model_dump(mode="json"),
        "config_fingerprint": config.fingerprint(),
        "base_model": str(Path(config.model).resolve()),
        "tasks_path": str(tasks_path),
        "tasks_sha256": sha256_file(tasks_path),
        "train_tasks": train_tasks,
        "eval_tasks": eval_tasks,
        "lora": config.lora.enabled,
        "seed": config.seed,
        "mixed_precision": accelerator.mixed_precision,
        "device": str(accelerator.device),
    }


def new_curriculum(config: GRPOConfig) -> Curriculum:
    settings = config.curriculum
    rule = CurriculumRule(settings.min_attempts, settings.easy_above, settings.easy_weight, settings.hard_below,
                          settings.hard_weight, settings.default_weight, kind=settings.rule)
    return Curriculum(rule, settings.enabled, settings.scope, settings.stratify)


def resume_state(out: Path, config: GRPOConfig, accelerator: Any, fields: dict[str, Any],
                 tasks_by_id: dict[str, Task], metrics: MetricsLog) -> tuple[dict[str, Any], Curriculum]:
    """The run's state and curriculum: fresh, or loaded (with weights and optimizer) from the latest checkpoint."""
    previous = read_manifest(out)
    if previous and isinstance(previous.get("config"), dict) \
            and previous.get("config_fingerprint") != fields["config_fingerprint"]:
        # a run recorded under an earlier fingerprint rule (or shape) is judged by today's rule
        previous = {**previous, "config_fingerprint": fingerprint_of_recorded(previous["config"])}
    latest = latest_checkpoint(out)
    changed = changed_since_checkpoint(out, previous, fields, RESUME_KEYS)
    if changed:
        raise GRPOError(f"{out} holds a GRPO run with a different {', '.join(changed)}; resume with the "
                        "same config, tasks and model, or choose another out folder")
    accelerator.wait_for_everyone()  # every rank has read the manifest and found the same checkpoint
    if accelerator.is_main_process:
        remove_partial_checkpoints(out)
    state: dict[str, Any] = {"step": 0, "curriculum": new_curriculum(config).to_dict(),
                             "best": {}, "tool_call_baseline": [], "elapsed_s": 0.0, "cpu_s": 0.0}
    if latest is not None:
        try:  # before load_state, which would look for another world size's per-rank files
            check_world_size(read_json(latest / STATE_FILE),
                             accelerator.num_processes, latest)
        except WorldSizeError as exc:
            raise GRPOError(str(exc)) from exc
        state.update(load_checkpoint(accelerator, latest))
    curriculum = Curriculum.from_dict(state["curriculum"])
    curriculum.scope_of = {task.id: f"{task.env}/{task.family}" for task in tasks_by_id.values()}
    metrics.reset(int(state["step"]))
    if accelerator.is_main_process:
        write_manifest(out, "grpo", status="running", resumed_from_step=state["step"], **fields)
    return state, curriculum


def save_state(out: Path, config: GRPOConfig, accelerator: Any, step: int, state: dict[str, Any],
               curriculum: Curriculum, elapsed: float, cpu: float) -> None:
    state.update({"step": step, "curriculum": curriculum.to_dict(), "elapsed_s": elapsed, "cpu_s": cpu,
                  "config_fingerprint": config.fingerprint(), WORLD_SIZE_KEY: accelerator.num_processes})
    save_checkpoint(accelerator, out, step, state, config.checkpoint.keep)
