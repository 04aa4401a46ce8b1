"""The trainer's model: loading with rope scaling and LoRA, dropout off (its rollout engine comes from the
engine registry, toolgym.policy.engines)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from toolgym.train.grpo.config import GRPOConfig
from toolgym.train.runtime import apply_lora


def load_model_for_grpo(config: GRPOConfig) -> Any:
    """The CausalLM to train, from a local folder, with rope scaling and LoRA as configured."""
    from transformers import AutoConfig, AutoModelForCausalLM

    path = Path(config.model)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path}: not a model folder (no config.json)")
    model_config = AutoConfig.from_pretrained(str(path), local_files_only=True)
    engine = config.engine
    if engine.rope_scaling is not None:  # transformers 5 calls it rope_parameters (rope_theta kept from the folder)
        field_name = "rope_parameters" if hasattr(model_config, "rope_parameters") else "rope_scaling"
        setattr(model_config, field_name, {**(getattr(model_config, field_name, None) or {}), **engine.rope_scaling})
    if engine.max_position_embeddings is not None:
        model_config.max_position_embeddings = engine.max_position_embeddings
    # Full weights load in float32: the optimizer steps them (master weights). Only frozen weights (a LoRA base)
    # are stored in engine.dtype.
    frozen = torch.bfloat16 if engine.dtype == "bfloat16" else torch.float32
    dtype = frozen if config.lora.enabled else torch.float32
    model = AutoModelForCausalLM.from_pretrained(str(path), config=model_config, dtype=dtype, local_files_only=True)
    if config.optim.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if config.lora.enabled:
            model.enable_input_require_grads()
    if config.lora.enabled:
        model = apply_lora(model, config.lora)
    return keep_master_weights_fp32(model)


def keep_master_weights_fp32(model: Any) -> Any:
    """Every parameter the optimizer steps in float32: in bf16, `w - lr·u` rounds back to `w` whenever the step
    is below half of w's bf16 spacing (|w|·2^-9 to |w|·2^-8), so at lr 1e-6 most of an update would vanish.
    The forward still computes in bf16 under autocast (optim.precision)."""
    for parameter in model.parameters():
        if parameter.requires_grad and parameter.dtype != torch.float32:
            parameter.data = parameter.data.float()
    return model


def forget_earlier_accelerator() -> None:
    """accelerate keeps one process-wide state: an SFT stage run earlier in this process (the pipeline) with
    another precision would make `Accelerator(...)` refuse. Single-process runs start from a clean state."""
    from accelerate.state import AcceleratorState, PartialState

    if AcceleratorState._shared_state and PartialState().num_processes == 1:
        AcceleratorState._reset_state()


def disable_dropout(model: torch.nn.Module) -> None:
    """Dropout off everywhere (LoRA's too): sampled and trained log-probs must come from one policy."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
