"""Training episodes played by an agent harness: the episode pool GRPO and RFT sample through with
`engine.name: harness`.

Each episode is one run of the harness command against the task's tools and a recording policy endpoint over the
trainer's current sampler (the in-process engine GRPO would sample with itself), so what trains is what the
harness asked and the engine sampled: the recorded token samples, with the sampler's log-probs, split where the
harness rewrote its history. Episodes come back in task order, then sample index, like toolgym's own pool.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from toolgym.envs import Environment
from toolgym.harness.episode import HarnessCommand, run_harness_episode
from toolgym.harness.gateway import Gateway
from toolgym.harness.policy_endpoint import PolicyEndpoint
from toolgym.harness.runner import check_tasks, endpoint_style
from toolgym.policy.base import Policy, SamplingParams
from toolgym.schema import Episode, Task


class HarnessPool:
    """`slots` harness runs at a time over `policy`, one loopback gateway per step (its event loop's)."""

    def __init__(self, policy: Policy, *, command: str, slots: int, env_factory: Callable[[str], Environment],
                 max_turns: int, timeout_s: float, cwd: str | Path | None = None) -> None:
        self.policy = policy
        self.command = command
        self.slots = slots
        self.env_factory = env_factory
        self.max_turns = max_turns
        self.timeout_s = timeout_s
        self.cwd = str(cwd) if cwd is not None else None
        self.style = endpoint_style(policy, "full")

    async def run(self, tasks: list[Task], samples_per_task: int, sampling: SamplingParams) -> list[Episode]:
        """samples_per_task harness runs of every task; each episode's seed follows (task id, sample index)."""
        check_tasks(tasks)
        harness = HarnessCommand(command=self.command, timeout_s=self.timeout_s, max_turns=self.max_turns,
                                 seed=sampling.seed, base_env=dict(os.environ), cwd=self.cwd,
                                 env_factory=self.env_factory)
        endpoint = PolicyEndpoint(self.policy, prompt_style=self.style, defaults=sampling)
        pending = [(position, task, index) for position, task in enumerate(tasks) for index in range(samples_per_task)]
        pending.reverse()
        results: dict[tuple[int, int], Episode] = {}
        async with Gateway(endpoint) as gateway:

            async def slot() -> None:
                while pending:
                    position, task, index = pending.pop()
                    results[(position, index)] = (await run_harness_episode(task, index, gateway, harness)).episode

            await asyncio.gather(*(slot() for _ in range(min(self.slots, max(1, len(pending))))))
        return [results[key] for key in sorted(results)]

    def close(self) -> None:
        """Nothing outlives a step: each step's gateway closed with it."""
