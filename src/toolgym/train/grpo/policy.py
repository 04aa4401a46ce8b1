"""The hf rollout engine of a GRPO run: HFPolicy batching over the trainer's own model object.

Rollouts must sample the weights being trained, without a copy or a reload per step, and must
record the exact ids and log-probs (token mode). `HFPolicy` does all of that but loads its model
from a folder; `SharedModelPolicy` adopts a live model instead and drops its prefix cache whenever
the weights change (stale key/value states would silently sample from the old policy).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import torch

from toolgym.policy.base import Generation, GenerationRequest
from toolgym.policy.hf import HFPolicy


class SharedModelPolicy(HFPolicy):
    """HFPolicy over an already-loaded (possibly peft-wrapped) model; call `weights_changed` after updates."""

    def __init__(self, model: Any, tokenizer: Any, *, name: str, device: str = "cpu", max_batch_size: int = 64,
                 batch_wait_ms: float = 10.0, max_batch_wait_ms: float = 200.0, prefix_cache_tokens: int = 65536,
                 autocast_dtype: torch.dtype | None = None) -> None:
        self.model_dir = Path(str(getattr(tokenizer, "name_or_path", "") or "."))
        self.device = device
        # seed 0: unused, every GRPO request carries its own seed
        self._adopt(model, tokenizer, name=name, checkpoint=None, max_batch_size=max_batch_size,
                    batch_wait_ms=batch_wait_ms, max_batch_wait_ms=max_batch_wait_ms, seed=0,
                    prefix_cache_tokens=prefix_cache_tokens, thread_name="grpo-generate")
        self.autocast_dtype = autocast_dtype

    def weights_changed(self, checkpoint: str | None = None) -> None:
        """Forget prompt states computed with the old weights; name the weights now sampled."""
        if self.prefix_cache is not None:
            self.prefix_cache.clear()
        if checkpoint is not None:
            self.checkpoint = checkpoint

    def sync_metrics(self) -> dict[str, Any]:
        """Nothing to report: the engine samples the trainer's own weights, with no copy to keep in step."""
        return {}

    def generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Sample in eval mode (no dropout) and, when training in bf16, under the same autocast."""
        was_training = self.model.training
        self.model.eval()
        device_type = "cuda" if str(self.device).startswith("cuda") else "cpu"
        autocast = (torch.autocast(device_type=device_type, dtype=self.autocast_dtype)
                    if self.autocast_dtype is not None else contextlib.nullcontext())
        try:
            with autocast:
                return super().generate_batch(requests)
        finally:
            self.model.train(was_training)


def build_shared_engine(config: Any, model: Any, tokenizer: Any, *, name: str, device: str,
                        autocast_dtype: torch.dtype | None = None) -> SharedModelPolicy:
    """The hf engine of a GRPO run (registered as `hf` in toolgym.policy.engines): the trainer's own model
    object, except with off-policy rollouts, which sample while the update changes that object: they get a
    snapshot copy, refreshed on each new label."""
    options: dict[str, Any] = {"name": name, "device": device, "max_batch_size": config.engine.max_batch_size,
                               "batch_wait_ms": config.engine.batch_wait_ms, "autocast_dtype": autocast_dtype}
    if config.off_policy.enabled:
        from toolgym.train.grpo.off_policy import SnapshotPolicy

        return SnapshotPolicy(model, tokenizer, **options)
    return SharedModelPolicy(model, tokenizer, **options)
