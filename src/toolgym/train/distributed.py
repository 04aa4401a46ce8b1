"""Training under `accelerate launch --num_processes N`: one accelerator setup, shared step sharding,
world-size checks and full-weight gathering for every trainer (SFT, RFT's fine-tune, GRPO).

A run's global batch never depends on the number of processes: the batch plan is made for one
process and each optimizer step's micro-batches are dealt out to the ranks, so N processes train the
same steps as one (gradients are all-reduced; only summation order differs). Every rank runs the same
number of forwards per step (a rank short of micro-batches repeats one with loss weight 0), which
DDP's gradient sync and FSDP's parameter all-gathers both need.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import torch

# Ranks wait for each other at collectives while one samples or evaluates (RFT sampling runs on the main
# process, GRPO ranks finish their rollouts at different times): torch's 10-30 minute default is too short.
COLLECTIVE_TIMEOUT = timedelta(hours=12)
WORLD_SIZE_KEY = "world_size"
T = TypeVar("T")


class WorldSizeError(RuntimeError):
    """A checkpoint written by one number of processes resumed by another."""


def launched_processes() -> int:
    """Processes the launcher started (torchrun / accelerate launch set WORLD_SIZE; 1 otherwise)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def make_accelerator(*, device: str, mixed_precision: str, log_with: list[str] | None = None,
                     project_dir: str | Path | None = None) -> Any:
    """The run's Accelerator, with a long collective timeout; refuses a launch it would silently split.

    accelerate sets up FSDP only on accelerators (CUDA, XPU, ...): on CPU an FSDP config runs as
    DDP over gloo (every rank holds all weights), which trains the same steps; `fsdp_fallback` says so.
    """
    from accelerate import Accelerator
    from accelerate.utils import InitProcessGroupKwargs

    accelerator = Accelerator(cpu=device == "cpu", mixed_precision=mixed_precision, log_with=log_with or None,
                              project_dir=str(project_dir) if project_dir is not None else None,
                              kwargs_handlers=[InitProcessGroupKwargs(timeout=COLLECTIVE_TIMEOUT)])
    launched = launched_processes()
    if launched != accelerator.num_processes:
        raise RuntimeError(
            f"launched as {launched} processes, but accelerate set up {accelerator.num_processes} (device "
            f"{device}): each process would train alone. On a machine without GPUs use device cpu (or auto)")
    return accelerator


def fsdp_fallback(accelerator: Any) -> bool:
    """An FSDP launch config that accelerate ran as plain data parallel (it shards only on accelerators)."""
    from accelerate.utils import DistributedType

    asked = os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"
    return asked and accelerator.distributed_type != DistributedType.FSDP


def is_fsdp(accelerator: Any) -> bool:
    from accelerate.utils import DistributedType

    return bool(accelerator.distributed_type == DistributedType.FSDP)


def shard_step(micro_batches: list[list[int]], rank: int, world: int) -> list[tuple[list[int], float]]:
    """This rank's share of one optimizer step's micro-batches, each with its loss weight.

    Micro-batch k goes to rank k mod world; every rank gets ceil(len / world) of them, a rank
    short of one repeating the step's first micro-batch with weight 0 (same forwards on every rank).
    """
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank {rank} of {world} processes")
    if not micro_batches:
        raise ValueError("an optimizer step needs at least one micro-batch")
    mine = [(batch, 1.0) for batch in micro_batches[rank::world]]
    count = math.ceil(len(micro_batches) / world)
    return mine + [(micro_batches[0], 0.0)] * (count - len(mine))


def check_world_size(state: dict[str, Any], processes: int, checkpoint: str | Path) -> None:
    """A checkpoint resumes only under the number of processes that wrote it (its RNG and optimizer
    states are per rank); one written before the count was recorded was written by one process."""
    saved = int(state.get(WORLD_SIZE_KEY, 1))
    if saved != processes:
        raise WorldSizeError(
            f"{checkpoint}: written by {saved} process{'es' if saved != 1 else ''}, resumed with {processes}; "
            f"resume with `accelerate launch --num_processes {saved}` (or one process when 1), or choose "
            "another out folder")


def as_float(value: Any) -> float:
    """A number from a tensor, a DTensor (FSDP2's clipped grad norm) or a float."""
    full = getattr(value, "full_tensor", None)
    if callable(full):
        value = full()
    return float(value)


def is_sharded(model: Any) -> bool:
    """Whether the model's weights are sharded across ranks (FSDP2 turns parameters into DTensors)."""
    from torch.distributed.tensor import DTensor

    return any(isinstance(p, DTensor) for p in model.parameters())


def full_state_dict(accelerator: Any, model: Any) -> dict[str, torch.Tensor]:
    """Every weight of `model`, unsharded, keyed as the unwrapped model names them (on the main process;
    sharded weights are gathered to CPU there). A collective when sharded: every rank must call it."""
    unwrapped = accelerator.unwrap_model(model)
    if not is_sharded(unwrapped):
        return {name: tensor.detach() for name, tensor in unwrapped.state_dict().items()}
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(unwrapped, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def gather_objects(accelerator: Any, value: Any) -> list[Any]:
    """Every rank's `value` (picklable), in rank order, on every rank."""
    if accelerator.num_processes == 1:
        return [value]
    import torch.distributed as dist

    gathered: list[Any] = [None] * accelerator.num_processes
    dist.all_gather_object(gathered, value)
    return gathered


def sum_across(accelerator: Any, values: list[float]) -> list[float]:
    """Element-wise sums over the ranks (the values themselves in one process)."""
    if accelerator.num_processes == 1:
        return list(values)
    totals = torch.tensor(values, dtype=torch.float64, device=accelerator.device)
    return [float(v) for v in accelerator.reduce(totals, reduction="sum")]


def export_on_main(accelerator: Any, model: Any, tokenizer: Any, base_model_dir: str | Path,
                   dest: str | Path) -> Path:
    """Export (checkpoint.export_model) once, from the main process; under FSDP every rank first
    takes part in gathering the full weights, so call it on every rank."""
    from toolgym.train.checkpoint import export_model

    state_dict = full_state_dict(accelerator, model) if is_sharded(accelerator.unwrap_model(model)) else None
    if accelerator.is_main_process:
        export_model(accelerator.unwrap_model(model), tokenizer, base_model_dir, dest, state_dict=state_dict)
    accelerator.wait_for_everyone()
    return Path(dest)


def run_on_main(work: Callable[[], T], device: str) -> T:
    """`work()` on the main process only, before any Accelerator exists; every rank gets its value (or
    raises its exception). The other ranks wait in a collective with the long timeout."""
    if launched_processes() == 1:
        return work()
    from accelerate import PartialState

    state = PartialState(cpu=device == "cpu", timeout=COLLECTIVE_TIMEOUT)
    outcome: list[Any] = [None]
    if state.is_main_process:
        try:
            outcome = [("ok", work())]
        except Exception as exc:  # the others must hear of it, or they would wait out the timeout
            outcome = [("error", exc)]
    import torch.distributed as dist

    dist.broadcast_object_list(outcome, src=0)
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value  # type: ignore[no-any-return]


def is_main_process() -> bool:
    """Rank 0 of the launch (or the only process), without needing an Accelerator."""
    try:
        return int(os.environ.get("RANK", "0")) == 0
    except ValueError:
        return True
