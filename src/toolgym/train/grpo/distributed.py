"""GRPO under `accelerate launch --num_processes N` (DDP): rollouts shared by group, one update over all.

Each rank plays the episodes of every N-th task of the step (a task's group never splits: its
samples_per_task episodes come from one rank, seeded by task and sample index as in one process).
The episodes are then gathered in one-process order, so every rank builds the same groups,
advantages, curriculum and metrics; the one update loop (update.policy_update) runs on every rank
with its `process_shard` of each optimizer step's micro-batches (train/distributed.py) and DDP
all-reduces the gradients: the same computation as one process up to summation order. FSDP is
refused: the in-process sampler needs whole weights on every rank.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from toolgym.policy.engines import engine_kinds, get_engine
from toolgym.schema import Episode, Task
from toolgym.train.distributed import gather_objects, is_fsdp, sum_across
from toolgym.train.grpo.update import Shard, UpdateStats

# UpdateStats fields that are sums over the trained tokens (summed over ranks after the update)
_SUMMED = ("tokens", "loss", "entropy_sum", "kl_sum", "kl_tokens", "ratio_sum", "clipped_low", "clipped_high",
           "sampler_gap_sum", "sampler_gap_tokens")


class DistributedGRPOError(RuntimeError):
    """A multi-process launch GRPO cannot run."""


def check_launch(accelerator: Any, engine: str, off_policy: bool = False) -> None:
    """GRPO runs data parallel (DDP) with an engine that samples on every rank (the in-process hf engine), in
    step with the update."""
    if accelerator.num_processes == 1:
        return
    if is_fsdp(accelerator):
        raise DistributedGRPOError(
            "GRPO does not run under FSDP: its in-process sampler needs whole weights on every rank; launch "
            "with DDP (`accelerate launch --multi_gpu --num_processes N`) or use one process")
    if not get_engine(engine).data_parallel:
        every_rank = [kind for kind in engine_kinds(trainable=True) if get_engine(kind).data_parallel]
        raise DistributedGRPOError(
            f"GRPO with engine {engine!r} runs in one process (the engine holds the GPUs it samples on); "
            f"multi-process GRPO uses an engine that samples on every rank: {', '.join(every_rank)}")
    if off_policy:
        raise DistributedGRPOError(
            "off_policy.enabled samples the next step on a thread while this one trains; with several "
            "processes its episode exchange would interleave with the gradient all-reduce: turn it off")


def my_tasks(tasks: list[Task], rank: int, world: int) -> list[Task]:
    """The tasks whose groups this rank plays: every world-th, from its rank."""
    return tasks[rank::world]


def merge_episodes(per_rank: list[list[Episode]], tasks: list[Task], samples_per_task: int) -> list[Episode]:
    """The ranks' episodes in one-process order (task position, then sample index)."""
    world = len(per_rank)
    merged: list[Episode] = []
    for position in range(len(tasks)):
        rank, slot = position % world, position // world
        group = per_rank[rank][slot * samples_per_task : (slot + 1) * samples_per_task]
        if len(group) != samples_per_task or any(e.task_id != tasks[position].id for e in group):
            raise DistributedGRPOError(f"rank {rank} returned no full group for task {tasks[position].id}")
        merged.extend(group)
    return merged


def sample_shared(accelerator: Any, tasks: list[Task], samples_per_task: int,
                  play: Callable[[list[Task]], list[Episode]]) -> list[Episode]:
    """`play` this rank's tasks, then every rank's episodes, in one-process order, on every rank."""
    if accelerator.num_processes == 1:
        return play(tasks)
    mine = play(my_tasks(tasks, accelerator.process_index, accelerator.num_processes))
    return merge_episodes(gather_objects(accelerator, mine), tasks, samples_per_task)


def on_main(accelerator: Any, work: Callable[[], Any]) -> Any:
    """`work()` on the main process; every rank gets its value (or its exception, raised)."""
    if accelerator.num_processes == 1:
        return work()
    outcome: tuple[str, Any] = ("ok", None)
    if accelerator.is_main_process:
        try:
            outcome = ("ok", work())
        except Exception as exc:  # every rank must learn it, or the others wait at the next collective
            outcome = ("error", exc)
    kind, value = gather_objects(accelerator, outcome)[0]
    if kind == "error":
        raise value
    return value


def sum_stats(accelerator: Any, stats: UpdateStats) -> UpdateStats:
    """The step's token statistics summed over the ranks (each trained its share of the micro-batches)."""
    if accelerator.num_processes == 1:
        return stats
    totals = sum_across(accelerator, [float(getattr(stats, name)) for name in _SUMMED])
    for name, total in zip(_SUMMED, totals, strict=True):
        kind = {f.name: f.type for f in fields(UpdateStats)}[name]
        setattr(stats, name, round(total) if kind in ("int", int) else total)
    return stats


def process_shard(accelerator: Any, model: Any) -> Shard:
    """This rank's share of each optimizer step's micro-batches (update.policy_update's `shard`); the
    whole step, as in one process, when there is one."""
    if accelerator.num_processes == 1:
        return Shard()
    return Shard(rank=accelerator.process_index, world=accelerator.num_processes,
                 no_sync=lambda: accelerator.no_sync(model))
