"""The KL reference of a full-weights GRPO run: a frozen copy of the starting weights in engine.dtype, on the
trainer's device, or (loss.reference_device: cpu) in host memory with each module moved to the device for
its part of every reference forward. Runs without KL need none, nor LoRA runs (the base, i.e. the adapter
switched off, is the reference)."""

from __future__ import annotations

import copy
from typing import Any

import torch

from toolgym.train.grpo.config import GRPOConfig


def build_reference(model: torch.nn.Module, config: GRPOConfig, device: torch.device | str) -> Any | None:
    """The frozen reference of `model` (as loaded, before any update), or None where the run needs no copy."""
    if config.loss.kl_coef <= 0 or config.lora.enabled:
        return None
    dtype = torch.bfloat16 if config.engine.dtype == "bfloat16" else torch.float32
    reference = copy.deepcopy(model).to(dtype).eval().requires_grad_(False)
    if config.loss.reference_device == "cpu":
        from accelerate import cpu_offload

        return cpu_offload(reference, execution_device=torch.device(device))
    return reference.to(device)
