"""One GRPO step's rollouts: G episodes of each chosen task, sampled concurrently by the current policy.

Episodes come back in a fixed order (task order, then sample index), whatever order they finished
in, so the update that follows is the same computation on every run with the same seed. With
`rollout_workers.ray` they are sampled on Ray workers instead (ray_sampling.py), in the same order.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from toolgym.agent.limits import EpisodeLimits
from toolgym.envs import Environment
from toolgym.policy.base import Policy, SamplingParams
from toolgym.rollout.worker import EpisodeWorker
from toolgym.schema import Episode, Task
from toolgym.train.grpo.config import GRPOConfig


def step_seed(run_seed: int, step: int, round_index: int = 0) -> int:
    """The sampling seed of one step (and sampling round): reproducible, different every step and round."""
    key = f"toolgym-grpo/{run_seed}/{step}" + (f"/{round_index}" if round_index else "")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class RolloutPool:
    """Episode slots that keep their environments between steps (env setup is paid once)."""

    def __init__(self, policy: Policy, *, slots: int, env_factory: Callable[[str], Environment],
                 limits: EpisodeLimits) -> None:
        self.workers: list[EpisodeWorker] = []
        renderer = None
        for _ in range(slots):
            worker = EpisodeWorker(policy, renderer=renderer, env_factory=env_factory, limits=limits)
            renderer = worker.renderer
            self.workers.append(worker)

    async def run(self, tasks: list[Task], samples_per_task: int, sampling: SamplingParams) -> list[Episode]:
        """samples_per_task episodes of every task; each gets its own seed (task id, sample index)."""
        pending = [(position, task, index) for position, task in enumerate(tasks) for index in range(samples_per_task)]
        pending.reverse()
        results: dict[tuple[int, int], Episode] = {}

        async def slot(worker: EpisodeWorker) -> None:
            while pending:
                position, task, index = pending.pop()
                results[(position, index)] = await worker.run(task, index, sampling)

        await asyncio.gather(*(slot(w) for w in self.workers[: max(1, len(pending))]))
        return [results[key] for key in sorted(results)]

    def close(self) -> None:
        for worker in self.workers:
            worker.close()


class EpisodePool(Protocol):
    """What the trainer samples a step through: RolloutPool here, or RaySampler on Ray workers."""

    async def run(self, tasks: list[Task], samples_per_task: int, sampling: SamplingParams) -> list[Episode]: ...

    def close(self) -> None: ...


def make_rollout_pool(config: GRPOConfig, engine: Policy, *, slots: int, env_factory: Callable[[str], Environment],
                      limits: EpisodeLimits, out: Path) -> EpisodePool:
    """The run's episode slots: in this process over `engine`, played by an agent harness (`engine.name:
    harness`), or (`rollout_workers.ray`) on Ray workers that load the weights `engine` serves before each
    step's episodes."""
    if config.engine.name == "harness":
        from toolgym.harness.pool import HarnessPool

        assert config.engine.command is not None  # the config requires it
        return HarnessPool(engine, command=config.engine.command, slots=slots, env_factory=env_factory,
                           max_turns=limits.max_turns, timeout_s=limits.timeout_s)
    if config.rollout_workers.ray is None:
        return RolloutPool(engine, slots=slots, env_factory=env_factory, limits=limits)
    from toolgym.train.grpo.policy import SharedModelPolicy
    from toolgym.train.grpo.ray_sampling import RaySampler

    if not isinstance(engine, SharedModelPolicy):
        raise TypeError(f"Ray sampling copies the hf engine's weights; the engine is {type(engine).__name__}")
    return RaySampler(config, engine, slots=slots, env_factory=env_factory, limits=limits, out=out)


def step_sampling(base: SamplingParams, run_seed: int, step: int, round_index: int = 0) -> SamplingParams:
    return replace(base, seed=step_seed(run_seed, step, round_index))
