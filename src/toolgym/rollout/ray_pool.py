"""Episodes on Ray workers: actors that each hold a policy and their environments; the driver keeps the queue.

Only `--ray` (RayWorkers.ray) imports this module, so a run without it never imports Ray. The driver
hands out (task, sample_index) pairs to `EpisodeActor`s, at most `slots` at a time per actor, and
passes each finished Episode to the caller's `record` (the rollout runner writes the row there, so
rows are exactly the local runner's). A worker that dies (its process killed, its node lost, or silent
past the episode's deadline) is replaced, and each of its in-flight episodes runs again on a live
worker, at most `ray_retries` times; after that the episode is recorded as a `worker error` row, never
scored. If no worker can be started or replaced, the run stops with RayWorkerError and a re-run
resumes it.

A policy whose weights change during the run (GRPO's) has a `load(path, label)`: `RayWorkerPool.load` makes
every worker load the new weights before the next episodes, and a worker started later (a replacement) loads
them before it gets any episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import (
    GetTimeoutError,
    NodeDiedError,
    ObjectLostError,
    OwnerDiedError,
    RayActorError,
    RayTaskError,
    WorkerCrashedError,
)

from toolgym.agent.limits import EpisodeLimits
from toolgym.agent.user import UserSimulator
from toolgym.chat.parse import ToolCallParser
from toolgym.chat.render import Renderer
from toolgym.config.pieces import RayWorkers
from toolgym.envs import Environment, make_env
from toolgym.policy.base import Policy, SamplingParams
from toolgym.rollout.runner import RolloutError
from toolgym.rollout.worker import (
    TIMEOUT_GRACE_S,
    EpisodeWorker,
    PolicyIdentity,
    episode_sampling,
    error_episode,
)
from toolgym.schema import Episode, Task

# Ray's words for "the process that was running this call is gone": the call may run again elsewhere.
WORKER_LOST = (RayActorError, WorkerCrashedError, NodeDiedError, ObjectLostError, OwnerDiedError)
START_TIMEOUT_S = 600.0  # a worker loads its policy (an hf: model, a vLLM engine) before it answers
WATCH_INTERVAL_S = 5.0  # how often the driver looks for workers silent past an episode's deadline

Record = Callable[[Task, int, Episode], None]


class RayWorkerError(RolloutError):
    """The Ray workers cannot run the episodes (none started, all lost): the rows written stay; re-run to resume."""


def connect(address: str) -> bool:
    """Join (or, for `local`, start) the cluster unless this process already did; True when it was done here."""
    if ray.is_initialized():
        return False
    previous = signal.getsignal(signal.SIGTERM)
    ray.init(address=address)
    if previous is not None and threading.current_thread() is threading.main_thread():
        # ray.init installs a SIGTERM handler that exits at once; the runner's stops the run cleanly instead.
        signal.signal(signal.SIGTERM, previous)
    return True


@ray.remote
class EpisodeActor:
    """One Ray worker: a policy built here from the factory, and `slots` EpisodeWorkers with their own envs."""

    def __init__(
        self,
        policy_factory: Callable[[], Policy],
        slots: int,
        env_factory: Callable[[str], Environment],
        renderer: Renderer | None,
        parser: ToolCallParser | None,
    ) -> None:
        self.policy = policy_factory()
        self.version: int | None = None  # the weights version last loaded (None: the factory's own)
        self.env_factory = env_factory
        self.parser = parser
        self.renderer = renderer
        self.idle: list[EpisodeWorker] = [self._new_worker() for _ in range(slots)]

    def _new_worker(self) -> EpisodeWorker:
        worker = EpisodeWorker(self.policy, renderer=self.renderer, parser=self.parser, env_factory=self.env_factory)
        self.renderer = worker.renderer  # build the renderer once, share it
        return worker

    async def identity(self) -> PolicyIdentity:
        return PolicyIdentity.of(self.policy)

    async def load(self, version: int, path: str, label: str) -> PolicyIdentity:
        """Load the weights in `path` (named `label`, the run's `version`) into this worker's policy.

        Synchronous inside: no episode of this worker runs while the weights change."""
        load = getattr(self.policy, "load", None)
        if load is None:
            raise RolloutError(f"policy {self.policy.name} cannot load new weights (it has no load(path, label))")
        load(path, label)
        self.version = version
        return PolicyIdentity.of(self.policy)

    async def weights_digest(self) -> str:
        """The digest of the weights this worker samples with (for checks against the trainer's)."""
        return str(self.policy.weights_digest())  # type: ignore[attr-defined]

    async def run(self, task: Task, sample_index: int, sampling: SamplingParams, limits: EpisodeLimits,
                  user_simulator: UserSimulator | None) -> Episode:
        worker = self.idle.pop() if self.idle else self._new_worker()
        worker.limits, worker.user_simulator = limits, user_simulator
        try:
            return await worker.run(task, sample_index, sampling)
        finally:
            self.idle.append(worker)


@dataclass(eq=False)
class _Worker:
    actor: Any
    name: str
    busy: int = 0
    lost: str | None = None  # why the driver gave up on it (it answers no more calls)


@dataclass(eq=False)
class _Flight:
    worker: _Worker
    task: Task
    sample_index: int
    ref: Any
    started: float = field(default_factory=time.monotonic)


class RayWorkerPool:
    """`settings.ray_workers` EpisodeActors on the cluster, kept at that number while the run goes on.

    Open it once and run several rollouts through it (an eval's trials share its loaded policies).
    """

    def __init__(
        self,
        policy_factory: Callable[[], Policy],
        settings: RayWorkers,
        *,
        concurrency: int,
        env_factory: Callable[[str], Environment] = make_env,
        renderer: Renderer | None = None,
        parser: ToolCallParser | None = None,
    ) -> None:
        if settings.ray is None:
            raise ValueError("RayWorkerPool needs a Ray address (ray: auto | HOST:PORT | ray://HOST:PORT | local)")
        if isinstance(policy_factory, Policy):
            raise RolloutError("a Ray run needs a policy spec or factory, not an open policy: each worker builds its own")
        self.settings = settings
        self.slots = max(1, math.ceil(concurrency / settings.ray_workers))
        self.run_id = uuid.uuid4().hex[:8]
        self.retries = settings.ray_retries
        self.replacements_left = settings.ray_workers * max(1, settings.ray_retries)
        self.lost = 0  # workers lost (died or silent) while this pool ran
        self._started = 0
        self._owns_ray = connect(settings.ray)
        self._args = (policy_factory, self.slots, env_factory, renderer, parser)
        self.loaded: tuple[int, str, str] | None = None  # the (version, path, label) every worker holds
        self.workers: list[_Worker] = []
        try:
            self.workers = [self._start_worker() for _ in range(settings.ray_workers)]
            self.identity = self._wait_ready()
        except BaseException:
            self.close()
            raise

    def _start_worker(self) -> _Worker:
        self._started += 1
        name = f"toolgym-rollout-{self.run_id}-worker-{self._started}"
        actor = EpisodeActor.options(  # type: ignore[attr-defined]
            name=name, num_cpus=self.settings.ray_worker_cpus, num_gpus=self.settings.ray_worker_gpus,
            max_concurrency=self.slots + 2, max_restarts=0,
        ).remote(*self._args)
        worker = _Worker(actor=actor, name=name)
        if self.loaded is not None:  # a replacement: the run's current weights before any episode
            try:
                ray.get(actor.load.remote(*self.loaded), timeout=START_TIMEOUT_S)
            except BaseException:
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)
                raise
        return worker

    def _wait_ready(self) -> PolicyIdentity:
        try:
            identities = ray.get([w.actor.identity.remote() for w in self.workers], timeout=START_TIMEOUT_S)
        except GetTimeoutError as exc:
            raise RayWorkerError(
                f"{self.settings.ray_workers} Ray worker(s) did not start in {START_TIMEOUT_S:g}s: does the cluster "
                f"have {self.settings.ray_worker_cpus:g} CPU(s) and {self.settings.ray_worker_gpus:g} GPU(s) free "
                "for each (ray_worker_cpus, ray_worker_gpus)?") from exc
        except (RayActorError, RayTaskError) as exc:
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            cause = lines[-1] if lines else type(exc).__name__  # Ray's text ends with the worker's own exception
            raise RayWorkerError(f"a Ray worker could not start (building its policy or environments): {cause}") from exc
        return identities[0]  # type: ignore[no-any-return]

    def _free_worker(self) -> _Worker | None:
        free = [w for w in self.workers if w.busy < self.slots]
        return min(free, key=lambda w: w.busy) if free else None

    def _lose(self, worker: _Worker, why: str) -> None:
        """Give up on a worker: kill it (its calls in flight then fail and are retried) and start another."""
        if worker.lost is not None:
            return
        worker.lost = why
        self.lost += 1
        self.workers.remove(worker)
        with contextlib.suppress(Exception):
            ray.kill(worker.actor, no_restart=True)
        if self.replacements_left > 0:
            self.replacements_left -= 1
            try:
                self.workers.append(self._start_worker())
            except (GetTimeoutError, RayTaskError, *WORKER_LOST):
                pass  # one worker fewer; with none left, run_episodes stops with RayWorkerError

    def load(self, version: int, path: str, label: str) -> None:
        """Every worker loads the weights in `path` before it runs another episode; a worker that fails
        to is replaced (the replacement loads them too), or, with none left, RayWorkerError."""
        self.loaded = (version, path, label)
        for worker, ref in [(w, w.actor.load.remote(version, path, label)) for w in list(self.workers)]:
            try:
                self.identity = ray.get(ref, timeout=START_TIMEOUT_S)
            except (GetTimeoutError, *WORKER_LOST) as exc:
                self._lose(worker, f"could not load {label}: {type(exc).__name__}")
            except RayTaskError as exc:
                raise RayWorkerError(f"a Ray worker could not load the weights {path}: {exc.cause}") from exc
        if not self.workers:
            raise RayWorkerError(f"no Ray worker left after loading {label}: {self.lost} were lost")
        self.identity = PolicyIdentity(name=self.identity.name, checkpoint=label, weights=self.identity.weights)

    def weights_digests(self) -> list[str]:
        """Each worker's digest of the weights it samples with."""
        return [str(d) for d in ray.get([w.actor.weights_digest.remote() for w in self.workers],
                                        timeout=START_TIMEOUT_S)]

    async def run_episodes(
        self,
        pending: deque[tuple[Task, int]],
        sampling: SamplingParams,
        record: Record,
        *,
        limits: EpisodeLimits,
        user_simulator: UserSimulator | None = None,
    ) -> int:
        """Run every pending (task, sample_index), passing each Episode to `record` as it finishes (in the
        order they finish); returns how many episodes ran again after their worker was lost."""
        limits_ref, user_ref = ray.put(limits), ray.put(user_simulator)
        deadline_s = limits.timeout_s + 2 * TIMEOUT_GRACE_S
        attempts: dict[tuple[str, int], int] = {}
        in_flight: dict[asyncio.Future[Any], _Flight] = {}
        retried = 0
        try:
            while pending or in_flight:
                while pending and (worker := self._free_worker()) is not None:
                    task, sample_index = pending.popleft()
                    ref = worker.actor.run.remote(task, sample_index, sampling, limits_ref, user_ref)
                    worker.busy += 1
                    in_flight[asyncio.wrap_future(ref.future())] = _Flight(worker, task, sample_index, ref)
                if not in_flight:
                    raise RayWorkerError(
                        f"no Ray worker left to run {len(pending)} episode(s): {self.lost} were lost and could not "
                        "be replaced; the rows written so far stay, run the same command again to resume")
                done, _ = await asyncio.wait(in_flight, timeout=WATCH_INTERVAL_S, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    flight = in_flight.pop(future)
                    flight.worker.busy -= 1
                    episode = self._outcome(future, flight, sampling, attempts)
                    if episode is None:
                        pending.appendleft((flight.task, flight.sample_index))
                        retried += 1
                    else:
                        record(flight.task, flight.sample_index, episode)
                now = time.monotonic()
                for flight in list(in_flight.values()):
                    if now - flight.started > deadline_s:
                        self._lose(flight.worker, f"no answer {deadline_s:g}s after an episode started")
        except BaseException:
            for future, flight in in_flight.items():  # stopped: what is in flight is not written, a re-run runs it
                future.cancel()
                with contextlib.suppress(Exception):
                    ray.cancel(flight.ref)
            raise
        return retried

    def _outcome(self, future: asyncio.Future[Any], flight: _Flight, sampling: SamplingParams,
                 attempts: dict[tuple[str, int], int]) -> Episode | None:
        """The finished Episode, an error Episode, or None when the episode should run again."""
        task, sample_index = flight.task, flight.sample_index
        try:
            return future.result()  # type: ignore[no-any-return]
        except WORKER_LOST as exc:
            self._lose(flight.worker, f"{type(exc).__name__}")
            key = (task.id, sample_index)
            attempts[key] = attempts.get(key, 0) + 1
            if attempts[key] <= self.retries:
                return None
            cause = flight.worker.lost or type(exc).__name__
            error = (f"worker error: the Ray worker running this episode was lost on each of {attempts[key]} "
                     f"tries (last: {flight.worker.name}, {cause})")
        except RayTaskError as exc:  # EpisodeWorker.run returns errors as episodes: this is a bug in toolgym
            error = f"rollout error: the Ray worker raised {type(exc.cause).__name__}: {exc.cause}"
        return error_episode(task, sample_index, self.identity, episode_sampling(sampling, task.id, sample_index),
                             error)

    def close(self) -> None:
        """Stop the workers (and the cluster, when `ray: local` started it here)."""
        for worker in self.workers:
            with contextlib.suppress(Exception):
                ray.kill(worker.actor, no_restart=True)
        self.workers = []
        if self._owns_ray:
            with contextlib.suppress(Exception):
                ray.shutdown()
            self._owns_ray = False


class RayRolloutPool:
    """GRPO's RolloutPool on Ray workers: the same `run(tasks, samples_per_task, sampling)`, episodes back in
    task order then sample index. For a policy every worker can build: a served model (openai:URL#MODEL), or a
    copy of the trainer's model that `load` refreshes from the weights the trainer exports (ray_sampling.py in
    GRPO), never the trainer's in-process model object."""

    def __init__(self, policy_factory: Callable[[], Policy], settings: RayWorkers, *, slots: int,
                 env_factory: Callable[[str], Environment] = make_env, limits: EpisodeLimits) -> None:
        self.pool = RayWorkerPool(policy_factory, settings, concurrency=slots, env_factory=env_factory)
        self.limits = limits

    async def run(self, tasks: list[Task], samples_per_task: int, sampling: SamplingParams) -> list[Episode]:
        """samples_per_task episodes of every task; each gets its own seed (task id, sample index)."""
        positions: dict[tuple[str, int], deque[int]] = {}
        for position, task in enumerate(tasks):
            for index in range(samples_per_task):
                positions.setdefault((task.id, index), deque()).append(position)
        pending = deque((task, index) for task in tasks for index in range(samples_per_task))
        results: dict[tuple[int, int], Episode] = {}

        def record(task: Task, sample_index: int, episode: Episode) -> None:
            results[(positions[(task.id, sample_index)].popleft(), sample_index)] = episode

        await self.pool.run_episodes(pending, sampling, record, limits=self.limits)
        return [results[key] for key in sorted(results)]

    def load(self, version: int, path: str, label: str) -> None:
        """Every worker's policy loads the weights in `path` (see RayWorkerPool.load)."""
        self.pool.load(version, path, label)

    def weights_digests(self) -> list[str]:
        return self.pool.weights_digests()

    def close(self) -> None:
        self.pool.close()
