"""AdamW with decoupled weight decay off for norms and biases, and transformers' LR schedules."""

from __future__ import annotations

from typing import Any

import torch

SCHEDULES = ("cosine", "linear", "constant")
_TRANSFORMERS_NAMES = {"cosine": "cosine", "linear": "linear", "constant": "constant_with_warmup"}


def build_optimizer(model: torch.nn.Module, lr: float, weight_decay: float = 0.0,
                    betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> torch.optim.AdamW:
    """torch AdamW over the trainable parameters (LoRA: the adapters only)."""
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        (no_decay if parameter.ndim < 2 or "norm" in name.lower() else decay).append(parameter)
    if not decay and not no_decay:
        raise ValueError("the model has no trainable parameters")
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=lr, betas=betas, eps=eps)


def build_scheduler(optimizer: torch.optim.Optimizer, name: str, warmup_steps: int, total_steps: int) -> Any:
    """Linear warmup, then cosine / linear decay to 0 or a constant rate (transformers.get_scheduler)."""
    from transformers import get_scheduler

    if name not in SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}; got {name!r}")
    return get_scheduler(_TRANSFORMERS_NAMES[name], optimizer, num_warmup_steps=warmup_steps,
                         num_training_steps=max(total_steps, 1))


def warmup_steps_for(total_steps: int, warmup_ratio: float, warmup_steps: int | None) -> int:
    if warmup_steps is not None:
        return max(0, warmup_steps)
    return round(total_steps * max(0.0, warmup_ratio))
