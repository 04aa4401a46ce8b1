"""GRPO's episodes sampled on Ray workers (`rollout_workers.ray`), each worker holding a copy of the weights.

Every worker builds the run's model once (as the trainer does: rope scaling, LoRA) and samples with
`WorkerPolicy`, the in-process engine's HF sampler over its own copy. Before a step's episodes, when the
trainer's engine serves weights the workers do not hold yet (`weights_changed(label)` named new ones), the
trainer exports them (the full model, or the LoRA adapter) to `OUT/rollout_weights/version-<N>` (written
aside, then renamed) and every worker loads that folder into its model. Each episode records the label of
the weights that sampled it; an episode sampled with any other weights than the trainer's current ones
stops the run (StaleWeightsError), so nothing is ever trained on stale samples by mistake.

`OUT/rollout_weights/loads.jsonl` logs each load (version, label, seconds; with `verify_weights`, the
trainer's and every worker's weights digest, compared before sampling).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from toolgym.agent.limits import EpisodeLimits
from toolgym.envs import Environment
from toolgym.policy.base import SamplingParams
from toolgym.schema import Episode, Task
from toolgym.train.checkpoint import export_model
from toolgym.train.grpo.config import GRPOConfig
from toolgym.train.grpo.policy import SharedModelPolicy
from toolgym.train.grpo.result import GRPOError

WEIGHTS_DIR = "rollout_weights"
LOADS_FILE = "loads.jsonl"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
STEP_LABEL = re.compile(r"@step-(\d+)$")


class StaleWeightsError(GRPOError):
    """An episode came back sampled by other weights than the trainer's current ones."""


def weights_digest(model: torch.nn.Module) -> str:
    """sha256 (16 hex chars) of the weights a step changes: every tensor, or with LoRA the adapter's only."""
    state = model.state_dict()
    names = sorted(n for n in state if "lora_" in n) or sorted(state)
    digest = hashlib.sha256()
    for name in names:
        tensor = state[name].detach().to("cpu").contiguous()
        digest.update(f"{name}\0{tensor.dtype}\0{tuple(tensor.shape)}\0".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


def _read_safetensors(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{folder}: no .safetensors weights to load")
    state: dict[str, torch.Tensor] = {}
    for path in files:
        state.update(load_file(str(path)))
    return state


def load_weights(model: torch.nn.Module, folder: Path) -> None:
    """Copy the exported weights in `folder` into `model` in place: the LoRA adapter (peft) or every tensor of
    the full model (a tensor tied to a loaded one, such as lm_head to the embeddings, may be absent)."""
    state = _read_safetensors(folder)
    if (folder / ADAPTER_WEIGHTS).is_file():
        from peft import set_peft_model_state_dict

        result = set_peft_model_state_dict(model, state)
        missing_lora = [k for k in getattr(result, "unexpected_keys", []) if "lora_" in k]
        if missing_lora:
            raise ValueError(f"{folder}: adapter tensors the model has no place for: {missing_lora[:3]}")
        return
    own = model.state_dict()
    unexpected = sorted(set(state) - set(own))
    if unexpected:
        raise ValueError(f"{folder}: tensors the model does not have: {unexpected[:3]}")
    loaded = {own[name].data_ptr() for name in state}
    untied = [name for name in own if name not in state and own[name].data_ptr() not in loaded]
    if untied:
        raise ValueError(f"{folder}: weights missing for {untied[:3]}")
    model.load_state_dict(state, strict=False)


class WorkerPolicy(SharedModelPolicy):
    """The run's sampler on a Ray worker: its own copy of the model, refreshed by `load(path, label)`."""

    def load(self, path: str, label: str) -> None:
        with torch.no_grad():
            load_weights(self.model, Path(path))
        self.weights_changed(label)

    def weights_digest(self) -> str:
        return weights_digest(self.model)


def build_worker_policy(config: GRPOConfig, name: str) -> WorkerPolicy:
    """On a worker: the run's model as the trainer loads it (rope scaling, LoRA, dtype), dropout off, on the
    worker's device, sampling under the autocast the trainer's engine uses there."""
    from toolgym.train.grpo.model_setup import disable_dropout, load_model_for_grpo
    from toolgym.train.runtime import resolve_device, resolve_precision

    if config.threads:
        torch.set_num_threads(config.threads)
    device = resolve_device(config.engine.device)
    sampler_config = config.model_copy(update={"optim": config.optim.model_copy(
        update={"gradient_checkpointing": False})})
    model = load_model_for_grpo(sampler_config).requires_grad_(False)
    disable_dropout(model)
    model.to(device)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(config.model, local_files_only=True)
    bf16 = resolve_precision(config.optim.precision, device) == "bf16"
    return WorkerPolicy(model, tokenizer, name=name, device=device, max_batch_size=config.engine.max_batch_size,
                        batch_wait_ms=config.engine.batch_wait_ms, autocast_dtype=torch.bfloat16 if bf16 else None)


def check_launch_for_ray(config: GRPOConfig) -> None:
    """Ray sampling holds one weights copy per worker, refreshed from the one trainer process."""
    from accelerate.state import PartialState

    if PartialState().num_processes > 1:
        raise GRPOError(f"rollout_workers.ray samples for one trainer process; this run has "
                        f"{PartialState().num_processes} (accelerate launch): launch it as one process, or "
                        "set rollout_workers.ray: null to sample on every rank")


class RaySampler:
    """GRPO's rollout pool on Ray workers: `run(tasks, samples_per_task, sampling)` as RolloutPool, each step
    sampled by the weights the trainer's engine serves now (`engine.checkpoint`, set by weights_changed)."""

    def __init__(self, config: GRPOConfig, engine: SharedModelPolicy, *, slots: int,
                 env_factory: Callable[[str], Environment], limits: EpisodeLimits, out: Path) -> None:
        check_launch_for_ray(config)
        from toolgym.rollout.ray_pool import RayRolloutPool

        self.config = config
        self.engine = engine
        self.folder = out / WEIGHTS_DIR
        for old in self.folder.glob("version-*"):  # an earlier process's exports: the workers load anew
            shutil.rmtree(old, ignore_errors=True)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.verify = config.rollout_workers.verify_weights
        self.loaded_label: str | None = None
        self.loaded_path: Path | None = None
        self.version = -1
        self.last_load: dict[str, Any] = {}
        factory = functools.partial(build_worker_policy, config, engine.name)
        self.pool = RayRolloutPool(factory, config.rollout_workers.ray_settings, slots=slots, env_factory=env_factory,
                                   limits=limits)

    def sync(self) -> str:
        """Make every worker hold the engine's current weights (export and load when they changed); their label."""
        label = self.engine.checkpoint
        if label is None:
            raise GRPOError("the rollout engine names no weights: weights_changed(label) must come before sampling")
        if label == self.loaded_label:
            return label
        match = STEP_LABEL.search(label)
        self.version = int(match.group(1)) if match else self.version + 1
        began = time.perf_counter()
        path = export_model(self.engine.model, self.engine.tokenizer, self.config.model,
                            self.folder / f"version-{self.version}")
        exported = time.perf_counter()
        self.pool.load(self.version, str(path.resolve()), label)
        row: dict[str, Any] = {"version": self.version, "label": label, "path": str(path),
                               "seconds_export": round(exported - began, 3),
                               "seconds_load": round(time.perf_counter() - exported, 3)}
        if self.verify:
            row["digest"] = weights_digest(self.engine.model)
            row["worker_digests"] = self.pool.weights_digests()
            if any(d != row["digest"] for d in row["worker_digests"]):
                raise StaleWeightsError(f"after loading {label}, the Ray workers' weights digests "
                                        f"{row['worker_digests']} differ from the trainer's {row['digest']}")
        with open(self.folder / LOADS_FILE, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        if self.loaded_path is not None and self.loaded_path != path:  # every worker holds the new ones now
            shutil.rmtree(self.loaded_path, ignore_errors=True)
        self.loaded_label, self.loaded_path = label, path
        self.last_load = row
        return label

    def sync_metrics(self) -> dict[str, Any]:
        """The step's weight load onto the workers, in the names the vLLM engine's sync uses (none: unchanged)."""
        if not self.last_load:
            return {}
        row, self.last_load = self.last_load, {}
        return {"sync_version": row["version"], "sync_seconds": round(row["seconds_export"] + row["seconds_load"], 4)}

    async def run(self, tasks: list[Task], samples_per_task: int, sampling: SamplingParams) -> list[Episode]:
        label = self.sync()
        episodes = await self.pool.run(tasks, samples_per_task, sampling)
        check_versions(episodes, label)
        return episodes

    def close(self) -> None:
        self.pool.close()


def check_versions(episodes: list[Episode], label: str) -> None:
    """Every episode was sampled by the weights named `label`, or StaleWeightsError."""
    stale = [e for e in episodes if e.checkpoint != label]
    if stale:
        first = stale[0]
        raise StaleWeightsError(
            f"{len(stale)} of {len(episodes)} episode(s) were sampled by other weights than the current {label!r} "
            f"(first: task {first.task_id} sample {first.sample_index}, sampled by {first.checkpoint!r}): a Ray "
            "worker did not load the new weights; the run stops rather than train on stale samples")
