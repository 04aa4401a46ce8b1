"""The GRPO run's memory preflight: its settings as a memory plan (toolgym.train.memory_plan), made from the
model's config.json before any weight loads, and — when it cannot fit — the settings that would make it fit.

`toolgym train grpo --dry-run` prints it; a run on CUDA checks it first and stops with it (preflight.enabled).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from toolgym.train.architecture import Architecture, UnknownArchitecture
from toolgym.train.grpo.config import GRPOConfig
from toolgym.train.memory_plan import GIB, MemoryPlan, Phase, Reference, Workload, gib, plan_memory

TOKEN_STEP = 1024  # suggested micro-batch sizes are multiples of this


class PreflightError(ValueError):
    """The model's shape cannot be read, or the plan cannot fit."""


def architecture_file(config: GRPOConfig) -> Path:
    """The config.json the plan reads: the model folder's, else preflight.architecture."""
    own = Path(config.model) / "config.json"
    if own.is_file():
        return own
    if config.preflight.architecture is not None:
        path = Path(config.preflight.architecture)
        path = path / "config.json" if path.is_dir() else path
        if not path.is_file():
            raise PreflightError(f"preflight.architecture: {path} is not a file")
        return path
    raise PreflightError(f"{config.model}: no config.json to plan from (the model folder does not exist yet?); set "
                         "preflight.architecture to a config.json of the same architecture")


def card_memory(config: GRPOConfig, device: str | None = None) -> tuple[int, str]:
    """(bytes, where the number comes from): the visible GPU's memory, else preflight.gpu_memory_gib."""
    if torch.cuda.is_available():
        name = device or config.engine.device
        index = int(name.split(":", 1)[1]) if name.startswith("cuda:") else torch.cuda.current_device()
        properties = torch.cuda.get_device_properties(index)
        return int(properties.total_memory), f"cuda:{index}, {properties.name}"
    return int(config.preflight.gpu_memory_gib * GIB), "preflight.gpu_memory_gib; torch sees no GPU"


def _bf16_compute(precision: str) -> bool:
    """Whether the update runs under bf16 autocast on a GPU (`auto`: wherever the card has bf16)."""
    if precision == "auto":
        return not torch.cuda.is_available() or torch.cuda.is_bf16_supported()
    return precision == "bf16"


def workload(config: GRPOConfig, architecture: Architecture, card_bytes: int, processes: int = 1) -> Workload:
    """The memory workload of one process of this run."""
    engine, sampling, loss = config.engine, config.sampling, config.loss
    optimizer = config.experimental.optimizer
    reference: Reference
    if config.loss.kl_coef <= 0:
        reference = "none"
    elif config.lora.enabled:
        reference = "adapter_off"
    else:
        reference = "cpu" if loss.reference_device == "cpu" else "gpu"
    hf_here = engine.name in ("hf", "harness") and config.rollout_workers.ray is None
    # TRL's server mode serves from GPUs of their own (`trl vllm-serve`): the training GPUs hold no vLLM share
    vllm_here = engine.name == "vllm" and not (config.backend == "trl" and config.trl.vllm_mode == "server")
    return Workload(
        architecture=architecture, card_bytes=card_bytes,
        micro_batch_tokens=max(config.optim.batch_tokens, sampling.max_context_tokens),
        trained_share=config.preflight.trained_share, processes=processes,
        lora_rank=config.lora.rank if config.lora.enabled else None, lora_targets=tuple(config.lora.target_modules),
        frozen_bytes=2 if engine.dtype == "bfloat16" else 4, bf16_compute=_bf16_compute(config.optim.precision),
        optimizer_state_bytes=8 if optimizer == "adamw" else (4 if config.experimental.momentum else 0),
        gradient_checkpointing=config.optim.gradient_checkpointing,
        truncated_logprobs=loss.match_sampler_truncation and (sampling.top_p < 1 or sampling.top_k > 0),
        reference=reference,
        vllm_utilization=engine.gpu_memory_utilization if vllm_here else None,
        vllm_max_model_len=engine.max_position_embeddings or architecture.max_position_embeddings,
        hf_sampling_rows=engine.max_batch_size if hf_here else None, hf_sampling_tokens=sampling.max_context_tokens,
        off_policy=config.off_policy.enabled and hf_here)


def _largest(fits: Callable[[int], bool], high: int, step: int) -> int:
    """The largest multiple of `step` in [step, high] for which `fits` holds (0: none); `fits` must hold below
    any value it holds for."""
    low, top = 0, high // step
    while low < top:
        middle = (low + top + 1) // 2
        if fits(middle * step):
            low = middle
        else:
            top = middle - 1
    return low * step


def _phase_fits(work: Workload, phase: Phase) -> bool:
    """Whether what stays resident plus `phase` (the update, or the hf engine's sampling) fits on the card; with
    off-policy rollouts the two overlap, so both count."""
    plan = plan_memory(work)
    busy = plan.phase_bytes("update") + plan.phase_bytes("sampling") if work.off_policy else plan.phase_bytes(phase)
    return plan.phase_bytes("resident") + busy <= work.card_bytes


def _within_card(work: Workload) -> bool:
    return plan_memory(work).total_bytes <= work.card_bytes


def _sized(work: Workload) -> tuple[Workload, list[str]]:
    """`work` with vLLM's share, the hf engine's rows and the micro-batch sized to fit where that is enough, and
    the settings that say so: vLLM gets the least it needs, the sampling rows and the micro-batch shrink only as
    far as needed, and vLLM then gets whatever is still free."""
    original = work
    if work.vllm_utilization is not None:
        floor = plan_memory(work).vllm_floor_bytes or 0
        work = replace(work, vllm_utilization=min(-(-floor * 100 // work.card_bytes), 99) / 100)
    if work.hf_sampling_rows is not None and not _phase_fits(work, "sampling"):
        rows = _largest(lambda n: _phase_fits(replace(work, hf_sampling_rows=n), "sampling"),
                        work.hf_sampling_rows, 1)
        work = replace(work, hf_sampling_rows=rows or work.hf_sampling_rows)
    if not _phase_fits(work, "update"):
        tokens = _largest(lambda t: _phase_fits(replace(work, micro_batch_tokens=t), "update"),
                          work.micro_batch_tokens, TOKEN_STEP)
        work = replace(work, micro_batch_tokens=tokens or work.micro_batch_tokens)
    if work.vllm_utilization is not None and _within_card(work):
        most = _largest(lambda u: _within_card(replace(work, vllm_utilization=u / 100)), 99, 1) / 100
        work = replace(work, vllm_utilization=max(most, work.vllm_utilization))
    changes = []
    if work.vllm_utilization != original.vllm_utilization:
        changes.append(f"engine.gpu_memory_utilization: {work.vllm_utilization:g}")
    if work.hf_sampling_rows != original.hf_sampling_rows:
        changes.append(f"engine.max_batch_size: {work.hf_sampling_rows}")
    if work.micro_batch_tokens != original.micro_batch_tokens:
        changes.append(f"optim.batch_tokens and sampling.max_context_tokens: at most {work.micro_batch_tokens}")
    return work, changes


def _changes(config: GRPOConfig, work: Workload) -> list[tuple[str, Callable[[Workload], Workload]]]:
    """The settings that shrink this workload without resizing it, each as (setting, what it does to a workload)."""
    found: list[tuple[str, Callable[[Workload], Workload]]] = []
    if work.lora_rank is None:
        found.append((f"lora.enabled: true (rank {config.lora.rank})", lambda w: replace(
            w, lora_rank=config.lora.rank, lora_targets=tuple(config.lora.target_modules),
            reference="adapter_off" if w.reference != "none" else "none")))
    if not work.gradient_checkpointing:
        found.append(("optim.gradient_checkpointing: true", lambda w: replace(w, gradient_checkpointing=True)))
    if work.reference == "gpu":
        found.append(("loss.reference_device: cpu", lambda w: replace(w, reference="cpu") if w.reference == "gpu"
                      else w))
    if work.off_policy:
        found.append(("off_policy.enabled: false", lambda w: replace(w, off_policy=False)))
    return found


def suggestions(config: GRPOConfig, work: Workload) -> list[str]:
    """What to change when `work` cannot fit: each setting alone, with the peak it gives, then a set of changes
    that fits (those settings in turn until it fits, then vLLM's share, the hf engine's rows and the micro-batch
    sized)."""
    lines = []
    combined, applied = work, []
    for label, change in _changes(config, work):
        plan = plan_memory(change(work))
        lines.append(f"  {label}: peak {gib(plan.total_bytes)} GiB" + (" (fits)" if plan.fits else ""))
        if not plan_memory(combined).fits and change(combined) != combined:
            combined = change(combined)
            applied.append(label.split(" (")[0])
    sized: list[str] = []
    if not plan_memory(combined).fits:
        combined, sized = _sized(combined)
    changes = applied + sized
    plan = plan_memory(combined)
    if plan.fits:
        lines.append(f"  together: {'; '.join(changes)} → peak {gib(plan.total_bytes)} GiB (fits)")
    else:
        lines.append(f"  even with {'; '.join(changes) or 'every change above'} the peak is {gib(plan.total_bytes)} "
                     "GiB: a card with more memory, or more GPUs (vLLM on its own), is needed")
    return lines


@dataclass(frozen=True)
class Preflight:
    """The plan of a GRPO run, with where its numbers come from and what would make it fit."""

    plan: MemoryPlan
    header: list[str]
    advice: list[str]

    @property
    def fits(self) -> bool:
        return self.plan.fits

    def render(self) -> str:
        advice = ["what would change it:", *self.advice] if self.advice else []
        return "\n".join([*self.header, "", self.plan.render(), *advice])


def grpo_preflight(config: GRPOConfig, *, processes: int = 1, device: str | None = None) -> Preflight:
    """The memory plan of one process of this run (`processes` of them under DDP), from config.json alone."""
    path = architecture_file(config)
    architecture = Architecture.from_file(path)
    card, source = card_memory(config, device)
    work = workload(config, architecture, card, processes)
    plan = plan_memory(work)
    trained = (f"LoRA r={config.lora.rank}: {architecture.lora_parameters(config.lora.rank, config.lora.target_modules):,}"
               " trained parameters" if config.lora.enabled else "full weights: every parameter trained")
    header = [
        f"memory plan: {architecture.model_type}, {architecture.parameters():,} parameters (from {path}); {trained}",
        f"per process, {processes} process{'es' if processes > 1 else ''} (DDP: each holds the whole model); "
        f"card {gib(card)} GiB ({source})",
        f"micro-batch: {work.micro_batch_tokens} tokens (the larger of optim.batch_tokens and "
        f"sampling.max_context_tokens), {config.preflight.trained_share:g} of them trained (preflight.trained_share)",
    ]
    return Preflight(plan, header, [] if plan.fits else suggestions(config, work))


def check_preflight(config: GRPOConfig, *, processes: int, device: str) -> str | None:
    """Raise PreflightError (the plan and what to change) when the run cannot fit; a note when it cannot be planned."""
    try:
        preflight = grpo_preflight(config, processes=processes, device=device)
    except UnknownArchitecture as exc:
        return f"memory preflight skipped: {exc}"
    if not preflight.fits:
        raise PreflightError(preflight.render() + "\n(preflight.enabled: false starts the run anyway)")
    return None
