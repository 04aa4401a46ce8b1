"""AdamW (or plain SGD) with weight decay off for norms and biases, and transformers' LR schedules.

SGD is an option for RL fine-tuning: Adam moves every weight by about lr whatever its gradient, so a
few noisy groups per step walk the weights no episode gave signal for; SGD moves each weight in
proportion to its gradient (on the tiny default model neither gained held-out tasks: docs/results.md).
"""

from __future__ import annotations

from typing import Any

import torch

SCHEDULES = ("cosine", "linear", "constant")
OPTIMIZERS = ("adamw", "sgd")
_TRANSFORMERS_NAMES = {"cosine": "cosine", "linear": "linear", "constant": "constant_with_warmup"}


def build_optimizer(model: torch.nn.Module, lr: float, weight_decay: float = 0.0,
                    betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, name: str = "adamw",
                    momentum: float = 0.0) -> torch.optim.Optimizer:
    """torch AdamW (or SGD with `momentum`) over the trainable parameters (LoRA: the adapters only)."""
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {name!r}")
    if momentum and name != "sgd":
        raise ValueError(f"momentum is an SGD setting; optimizer {name!r} has betas instead")
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for parameter_name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        (no_decay if parameter.ndim < 2 or "norm" in parameter_name.lower() else decay).append(parameter)
    if not decay and not no_decay:
        raise ValueError("the model has no trainable parameters")
    groups = [g for g in ({"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0})
              if g["params"]]
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=momentum)
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)


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
