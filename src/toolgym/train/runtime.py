"""Device, precision, model loading and LoRA for every trainer (SFT now, GRPO next).

bf16 runs as autocast over float32 master weights. `auto` picks it on CUDA devices with bf16 and
nowhere else: on CPU (torch 2.13) every new tensor shape a bf16 kernel sees leaves kernels cached
for good (about 1 MB per matmul shape, 7 MB per attention shape), and training batches change shape
every step, so a 400-step SFT of the 4M-parameter default grew past 4 GB where fp32 stays near
1 GB, for a ~10% speed gain. `bf16` still asks for it on CPU (AVX512-BF16 / AMX make it native).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

import torch

from toolgym.config.pieces import DEFAULT_TARGET_MODULES, Lora
from toolgym.cpu_time import cpu_seconds, cpu_since

__all__ = ["DEFAULT_TARGET_MODULES", "Lora", "apply_lora", "load_model"]

Precision = Literal["auto", "bf16", "fp32"]
PRECISIONS: tuple[Precision, ...] = ("auto", "bf16", "fp32")


class RunClock:
    """Wall and CPU seconds of a trainer call (from construction) and of its training loop, which adds
    the time a resumed run's checkpoint recorded to this call's, so metrics count the whole run."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.cpu_started = cpu_seconds()
        self.loop_started, self.loop_cpu_started = self.started, self.cpu_started
        self.elapsed_before = self.cpu_before = 0.0

    def start_loop(self, elapsed_before: float, cpu_before: float) -> None:
        """The loop starts now, after `elapsed_before` wall and `cpu_before` CPU seconds of earlier calls."""
        self.elapsed_before, self.cpu_before = elapsed_before, cpu_before
        self.loop_started, self.loop_cpu_started = time.perf_counter(), cpu_seconds()

    def loop_seconds(self) -> tuple[float, float]:
        """(wall, CPU) seconds the run's training loop has taken, earlier calls included."""
        return (self.elapsed_before + time.perf_counter() - self.loop_started,
                self.cpu_before + cpu_since(self.loop_cpu_started))

    def call_seconds(self) -> tuple[float, float]:
        """(wall, CPU) seconds since this call began: loading and building included."""
        return time.perf_counter() - self.started, cpu_since(self.cpu_started)


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise ValueError(f"device must be auto, cpu or cuda; got {device!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device cuda was asked for, but torch sees no CUDA device")
    return device


def resolve_precision(precision: str, device: str) -> Literal["bf16", "no"]:
    """accelerate's mixed_precision value: bf16 when asked, or when `auto` on a CUDA device that has it."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    if precision == "bf16":
        return "bf16"
    if precision == "auto" and device.startswith("cuda") and torch.cuda.is_bf16_supported():
        return "bf16"
    return "no"


def _linear_names(model: torch.nn.Module) -> list[str]:
    return sorted({name.rsplit(".", 1)[-1] for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)})


def apply_lora(model: Any, settings: Lora) -> Any:
    """Wrap `model` with fresh LoRA adapters; a target that matches no layer is a clear error."""
    from peft import get_peft_model

    present = set(_linear_names(model))
    missing = [t for t in settings.target_modules if t not in present]
    if missing:
        raise ValueError(f"--target-modules {', '.join(missing)} match no linear layer of this model; "
                         f"its linear layers are: {', '.join(sorted(present))}")
    return get_peft_model(model, settings.to_config())


def load_model(model_dir: str | Path, *, dtype: str = "float32", lora: Lora | None = None,
               gradient_checkpointing: bool = False) -> Any:
    """A CausalLM from a local folder (never a hub), optionally with LoRA adapters to train."""
    from transformers import AutoModelForCausalLM

    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16}
    if dtype not in dtypes:
        raise ValueError(f"dtype must be float32 or bfloat16; got {dtype!r}")
    path = Path(model_dir)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path}: not a model folder (no config.json)")
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtypes[dtype], local_files_only=True)
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if lora is not None:
            model.enable_input_require_grads()
    if lora is not None:
        model = apply_lora(model, lora)
    return model


def load_tokenizer(model_dir: str | Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
