"""EpisodeWorker: one concurrent episode slot, owning its environments and a policy handle.

A plain class called with (task, sample_index), so it can become a Ray actor unchanged: the
runner only needs `await worker.run(task, sample_index, sampling)`. Whatever goes wrong inside,
`run` returns an Episode (unexpected exceptions become `status="error"` with the cause). An episode
cancelled or timed out mid-flight may leave a verifier thread on its environment, so that
environment is dropped, never closed under the thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace

from toolgym.agent.episode import run_episode
from toolgym.agent.limits import EpisodeLimits
from toolgym.agent.user import UserSimulator
from toolgym.chat.parse import ToolCallParser, get_parser
from toolgym.chat.render import Renderer, load_prompt_style
from toolgym.envs import Environment, make_env
from toolgym.policy.base import Policy, SamplingParams
from toolgym.schema import Episode, Task

# Grace beyond the episode's own wall clock before the worker gives up on it.
TIMEOUT_GRACE_S = 30.0


def episode_seed(run_seed: int, task_id: str, sample_index: int) -> int:
    """A per-episode sampling seed: reproducible, and different for every (task, sample)."""
    digest = hashlib.sha256(f"{run_seed}/{task_id}/{sample_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def episode_sampling(sampling: SamplingParams, task_id: str, sample_index: int) -> SamplingParams:
    """With a run seed, each episode gets its own derived seed (K samples must not be K copies)."""
    if sampling.seed is None:
        return sampling
    return replace(sampling, seed=episode_seed(sampling.seed, task_id, sample_index))


def default_renderer(policy: Policy) -> Renderer:
    """The policy's own template and prompt style (its toolgym.json); chat mode renders messages only."""
    if policy.tokenizer is None:
        return Renderer(None, prompt_style=getattr(policy, "prompt_style", None) or "full")
    return Renderer(policy.tokenizer, prompt_style=load_prompt_style(getattr(policy.tokenizer, "name_or_path", None)))


@dataclass(frozen=True)
class PolicyIdentity:
    """What rows and manifests record of a policy, for runs whose policy lives in another process (Ray)."""

    name: str
    checkpoint: str | None = None
    weights: str | None = None

    @classmethod
    def of(cls, policy: Policy) -> PolicyIdentity:
        return cls(name=policy.name, checkpoint=policy.checkpoint, weights=policy.weights)


def error_episode(
    task: Task, sample_index: int, policy: Policy | PolicyIdentity, sampling: SamplingParams, error: str,
) -> Episode:
    return Episode(
        task_id=task.id,
        env=task.env,
        split=task.split,
        sample_index=sample_index,
        status="error",
        stop_reason="error",
        error=error,
        policy=policy.name,
        checkpoint=policy.checkpoint,
        sampling=sampling.to_dict(),
    )


class EpisodeWorker:
    """Runs episodes one at a time on its own environments (reused across tasks by `reset`)."""

    def __init__(
        self,
        policy: Policy,
        *,
        renderer: Renderer | None = None,
        parser: ToolCallParser | None = None,
        env_factory: Callable[[str], Environment] = make_env,
        limits: EpisodeLimits | None = None,
        user_simulator: UserSimulator | None = None,
    ) -> None:
        self.policy = policy
        self.renderer = renderer if renderer is not None else default_renderer(policy)
        self.parser = parser if parser is not None else get_parser("hermes")
        self.env_factory = env_factory
        self.limits = limits if limits is not None else EpisodeLimits()
        self.user_simulator = user_simulator
        self.envs: dict[str, Environment] = {}

    def environment(self, name: str) -> Environment:
        if name not in self.envs:
            self.envs[name] = self.env_factory(name)
        return self.envs[name]

    async def run(self, task: Task, sample_index: int, sampling: SamplingParams) -> Episode:
        sampling = episode_sampling(sampling, task.id, sample_index)
        try:
            env = self.environment(task.env)
        except Exception as exc:
            return error_episode(task, sample_index, self.policy, sampling,
                                 f"env error: cannot make environment {task.env!r}: {type(exc).__name__}: {exc}")
        timeout_s = self.limits.timeout_s
        try:
            coroutine = run_episode(
                task, env, self.policy, sampling, sample_index=sample_index, renderer=self.renderer,
                parser=self.parser, limits=self.limits, user_simulator=self.user_simulator,
            )
            # asyncio.timeout, not wait_for: wait_for can swallow a cancel that lands as the episode ends.
            async with asyncio.timeout(timeout_s + TIMEOUT_GRACE_S):
                return await coroutine
        except asyncio.CancelledError:
            self._abandon(task.env)
            raise
        except TimeoutError:
            self._abandon(task.env)
            return error_episode(task, sample_index, self.policy, sampling,
                                 f"timeout: the episode was still running {timeout_s + TIMEOUT_GRACE_S:g}s "
                                 f"after it started (wall clock {timeout_s}s + {TIMEOUT_GRACE_S:g}s grace)")
        except Exception as exc:
            # run_episode should never raise; if it does, record where, and keep the run going.
            where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            location = f" at {where.filename}:{where.lineno}" if where else ""
            self._abandon(task.env)  # its state is unknown now: the next task gets a fresh one
            return error_episode(task, sample_index, self.policy, sampling,
                                 f"rollout error: {type(exc).__name__}: {exc}{location}")

    def _abandon(self, name: str) -> None:
        """Forget an environment without closing it: a cancelled episode may have left a thread (its
        verifier) reading its SQLite connections, and closing them under that thread crashes the process.
        The connections close when the last reference goes, after the thread is done with them."""
        self.envs.pop(name, None)

    def close(self) -> None:
        """Close the environments of finished episodes (one in flight was abandoned by `run`)."""
        for env in self.envs.values():
            env.close()
        self.envs.clear()
