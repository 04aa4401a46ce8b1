"""run_rollout: many episodes at once, one durable results.jsonl row each, resumable after a kill.

`concurrency` worker slots (each an EpisodeWorker with its own environments) share one policy
handle, so a batching policy sees up to `concurrency` pending turns at a time. Every finished
episode is appended, flushed and fsynced before the next is counted; re-running the same command
skips the (task_id, sample_index) pairs already written and drops a torn last line. One broken
episode never stops the run: it becomes a `status="error"` row carrying its cause. Stopping the run
(an exception, Ctrl-C, SIGTERM through `run_until_signalled`) cancels the episodes in flight: each
row is written whole or not at all, so a re-run finishes the run without duplicates. With `ray`
(settings or an open RayWorkerPool) the episodes run on Ray workers instead of local slots; rows, resume
and the manifest are the same (rollout/ray_pool.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import signal
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from toolgym.agent.limits import EpisodeLimits
from toolgym.agent.user import UserSimulator
from toolgym.chat.parse import ToolCallParser
from toolgym.chat.render import Renderer
from toolgym.config.pieces import RayWorkers
from toolgym.dataset.manifest import read_manifest, write_manifest
from toolgym.envs import Environment, make_env
from toolgym.policy.base import Policy, SamplingParams
from toolgym.rollout.results import (
    RESULTS_FILE,
    episode_to_row,
    error_cause,
    read_rows,
    repair_torn_tail,
    rewrite_rows,
    row_key,
)
from toolgym.rollout.worker import EpisodeWorker, PolicyIdentity, episode_sampling, error_episode
from toolgym.schema import Episode, Task
from toolgym.schema.jsonl import JsonlWriter

if TYPE_CHECKING:
    from toolgym.rollout.ray_pool import RayWorkerPool

PolicySource = Policy | Callable[[], Policy]
# Fields that must match for a resumed run to append to the same results.jsonl (the task file's
# sha256 only when the tasks came from a file: an in-memory list may grow between calls). `weights`
# catches new weights written to the same checkpoint path; folders from before it are not compared.
RESUME_KEYS = ("tasks_sha256", "policy", "checkpoint", "weights", "sampling")


T = TypeVar("T")


class RolloutError(RuntimeError):
    """The run cannot start or continue (inconsistent resume, duplicate task ids)."""


class RolloutInterrupted(Exception):
    """A signal stopped the run; the rows written so far are whole, and a re-run resumes."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"interrupted by {signal_name}")
        self.signal_name = signal_name

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports a process the signal stopped."""
        return 128 + int(getattr(signal, self.signal_name, signal.SIGINT))


def run_until_signalled(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` where SIGTERM, like Ctrl-C, cancels `main` instead of killing the process, so
    the run stops through its cleanup (rows fsynced, threads joined); raises RolloutInterrupted."""
    received: list[str] = []

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def on_sigterm() -> None:
            received.append("SIGTERM")
            task.cancel()

        handled = False
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # no signals off the main thread
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
            handled = True
        try:
            return await main
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(guarded())
    except KeyboardInterrupt:
        raise RolloutInterrupted("SIGINT") from None
    except asyncio.CancelledError:
        if received:
            raise RolloutInterrupted(received[0]) from None
        raise


@dataclass
class RolloutSummary:
    """Counts over the whole results.jsonl of a run folder (resumed rows included)."""

    out_dir: str
    episodes: int = 0
    ran: int = 0  # episodes run by this call
    skipped: int = 0  # already in results.jsonl when this call started
    ok: int = 0
    truncated: int = 0
    error: int = 0
    passed: int = 0
    repaired_bytes: int = 0  # a torn last line dropped on resume
    retried: int = 0  # Ray: episodes run again because the worker running them was lost
    workers_lost: int = 0  # Ray: workers that died (or went silent) during this call
    seconds: float = 0.0
    errors_by_cause: dict[str, int] = field(default_factory=dict)

    @property
    def scored(self) -> int:
        """Episodes with a reward signal: errors are excluded from the denominator, never counted as 0."""
        return self.episodes - self.error

    @property
    def pass_rate(self) -> float:
        return self.passed / self.scored if self.scored else 0.0

    def add(self, row: dict[str, Any]) -> None:
        self.episodes += 1
        status = row.get("status")
        if status == "error":
            self.error += 1
            cause = error_cause(row.get("error"))
            self.errors_by_cause[cause] = self.errors_by_cause.get(cause, 0) + 1
        elif status == "truncated":
            self.truncated += 1
        else:
            self.ok += 1
        if status != "error" and (row.get("reward") or 0.0) >= 1.0:
            self.passed += 1

    def render(self) -> str:
        lines = [
            f"episodes {self.episodes} (ran {self.ran}, resumed {self.skipped}) in {self.seconds:.1f}s",
            f"ok {self.ok} · truncated {self.truncated} · error {self.error}",
            f"pass rate {self.passed}/{self.scored} = {self.pass_rate:.1%} (errors excluded from the denominator)",
        ]
        if self.errors_by_cause:
            lines.append("errors: " + ", ".join(f"{k} {v}" for k, v in sorted(self.errors_by_cause.items())))
        if self.workers_lost:
            lines.append(f"ray: {self.workers_lost} worker(s) lost; {self.retried} episode(s) ran again on another")
        if self.repaired_bytes:
            lines.append(f"dropped a torn last line ({self.repaired_bytes} bytes) left by an interrupted run")
        lines.append(f"results: {Path(self.out_dir) / RESULTS_FILE}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "scored": self.scored, "pass_rate": self.pass_rate}


def tasks_digest(tasks: Iterable[Task]) -> str:
    """sha256 of the task list itself, for runs whose tasks did not come from one file."""
    digest = hashlib.sha256()
    for task in tasks:
        digest.update(task.model_dump_json().encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _check_resume(out_dir: Path, manifest: dict[str, Any]) -> None:
    previous = read_manifest(out_dir)
    if not previous:
        return
    keys = [k for k in RESUME_KEYS if k != "tasks_sha256" or manifest.get("tasks_path")]
    changed = [k for k in keys if k in previous and json.loads(json.dumps(previous[k], default=str))
               != json.loads(json.dumps(manifest[k], default=str))]
    if changed:
        details = "; ".join(f"{k}: was {previous[k]!r}, now {manifest[k]!r}" for k in changed)
        raise RolloutError(
            f"{out_dir} holds a run with different settings ({details}); "
            "resume with the same settings or choose another --out folder"
        )


def _progress(console: Console | None, enabled: bool) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]rollout"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[stats]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled,
        transient=False,
    )


def _stats_text(summary: RolloutSummary) -> str:
    return f"pass {summary.passed}/{summary.scored} ({summary.pass_rate:.0%}) · errors {summary.error}"


def _ray_pool(
    ray: RayWorkers | RayWorkerPool | None, policy: PolicySource, concurrency: int, *,
    env_factory: Callable[[str], Environment], renderer: Renderer | None, parser: ToolCallParser | None,
) -> tuple[RayWorkerPool | None, bool]:
    """(the Ray pool the episodes run on, whether this call opened it); (None, False) to run them here."""
    if ray is None or (isinstance(ray, RayWorkers) and ray.ray is None):
        return None, False
    if not isinstance(ray, RayWorkers):
        return ray, False
    return open_ray_pool(policy, ray, concurrency=concurrency, env_factory=env_factory, renderer=renderer,
                         parser=parser), True


def open_ray_pool(
    policy: PolicySource, settings: RayWorkers, *, concurrency: int,
    env_factory: Callable[[str], Environment] = make_env, renderer: Renderer | None = None,
    parser: ToolCallParser | None = None,
) -> RayWorkerPool:
    """Start the Ray workers of `settings` (Ray is imported here, only by runs that use it)."""
    if isinstance(policy, Policy):
        raise RolloutError("a Ray run needs a policy factory, not an open policy: each Ray worker builds its own")
    try:
        from toolgym.rollout.ray_pool import RayWorkerPool
    except ImportError as exc:
        raise RolloutError(f"ray: {settings.ray} needs Ray installed: pip install 'toolgym[scale]' ({exc})") from exc
    return RayWorkerPool(policy, settings, concurrency=concurrency, env_factory=env_factory, renderer=renderer,
                         parser=parser)


def resume_rows(results_path: Path, *, retry_errors: bool) -> tuple[RolloutSummary, set[tuple[str, int]]]:
    """What a resumed run already holds: a torn last line repaired, errored rows dropped when they are to be
    retried, the rest counted; returns the summary so far and the (task, sample) keys not to run again."""
    summary = RolloutSummary(out_dir=str(results_path.parent))
    summary.repaired_bytes = repair_torn_tail(results_path)
    existing = read_rows(results_path)
    if retry_errors and any(r.get("status") == "error" for r in existing):
        existing = [r for r in existing if r.get("status") != "error"]
        rewrite_rows(results_path, existing)
    done = {row_key(r) for r in existing}
    for row in existing:
        summary.add(row)
    summary.skipped = len(done)
    return summary, done


async def run_rollout(
    tasks: list[Task],
    policy: PolicySource,
    *,
    out_dir: str | Path,
    samples_per_task: int = 1,
    concurrency: int = 8,
    sampling: SamplingParams | None = None,
    limits: EpisodeLimits | None = None,
    user_simulator: UserSimulator | None = None,
    renderer: Renderer | None = None,
    parser: ToolCallParser | None = None,
    env_factory: Callable[[str], Environment] = make_env,
    tasks_sha256: str | None = None,
    tasks_path: str | Path | None = None,
    config: dict[str, Any] | None = None,
    retry_errors: bool = False,
    progress: bool = False,
    console: Console | None = None,
    ray: RayWorkers | RayWorkerPool | None = None,
) -> RolloutSummary:
    """Run `samples_per_task` episodes of every task into `out_dir/results.jsonl` (resumable).

    `policy` is a Policy (the caller closes it) or a zero-argument factory (opened and closed here).
    `limits` (None: the defaults) may be any config that holds them; the manifest records only the limits.
    `ray`: run the episodes on Ray workers, either settings with an address (workers started and stopped
    here, each building the policy from the factory) or a RayWorkerPool the caller opened (then `policy`,
    `env_factory`, `renderer` and `parser` are the pool's own).
    """
    if samples_per_task < 1 or concurrency < 1:
        raise ValueError("samples_per_task and concurrency must be at least 1")
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise RolloutError(f"task id {task.id!r} appears twice; results rows are keyed by task id")
        seen.add(task.id)
    started = time.perf_counter()
    sampling = sampling or SamplingParams()
    limits = limits if limits is not None else EpisodeLimits()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / RESULTS_FILE

    pool, owns_pool = _ray_pool(ray, policy, concurrency, env_factory=env_factory, renderer=renderer, parser=parser)
    owns_policy = pool is None and not isinstance(policy, Policy)
    handle: Policy | None = None
    if pool is None:
        handle = policy() if owns_policy else policy  # type: ignore[operator,assignment]
    try:
        identity = pool.identity if pool is not None else PolicyIdentity.of(handle)  # type: ignore[arg-type]
        manifest = {
            "tasks_path": str(tasks_path) if tasks_path else None,
            "tasks_sha256": tasks_sha256 or tasks_digest(tasks),
            "policy": identity.name,
            "checkpoint": identity.checkpoint,
            "weights": identity.weights,
            "sampling": sampling.to_dict(),
            "seed": sampling.seed,
            "config": {
                "samples_per_task": samples_per_task,
                "concurrency": concurrency,
                "max_turns": limits.max_turns,
                "max_context_tokens": limits.max_context_tokens,
                "timeout_s": limits.timeout_s,
                "done_tool": limits.done_tool,
                "user_simulator": getattr(user_simulator, "name", None),
                **({"max_format_errors": limits.max_format_errors}
                   if limits.max_format_errors is not None else {}),
                "task_count": len(tasks),
                **({"ray": pool.settings.model_dump(mode="json")} if pool is not None else {}),
                **(config or {}),
            },
        }
        _check_resume(out, manifest)
        summary, done = resume_rows(results_path, retry_errors=retry_errors)
        write_manifest(out, "rollout", status="running", **manifest)

        pending = deque(
            (task, index) for task in tasks for index in range(samples_per_task) if (task.id, index) not in done
        )
        task_total = len(pending)
        with JsonlWriter(results_path) as writer, _progress(console, progress) as bar:
            progress_task = bar.add_task("rollout", total=task_total, stats=_stats_text(summary))

            def record(task: Task, sample_index: int, episode: Episode) -> None:
                """Write one finished episode's row (durably) and count it."""
                try:
                    row = episode_to_row(episode, task)
                except Exception as exc:  # a row that cannot be built must not stop the run
                    row = episode_to_row(error_episode(
                        task, sample_index, identity, episode_sampling(sampling, task.id, sample_index),
                        f"rollout error: cannot build the results row: {type(exc).__name__}: {exc}",
                    ), task)
                writer.write(row)
                summary.add(row)
                summary.ran += 1
                bar.update(progress_task, advance=1, stats=_stats_text(summary))

            try:
                if pool is not None:
                    lost_before = pool.lost
                    try:
                        summary.retried = await pool.run_episodes(pending, sampling, record, limits=limits,
                                                                  user_simulator=user_simulator)
                    finally:
                        summary.workers_lost = pool.lost - lost_before
                else:
                    assert handle is not None
                    await _run_here(handle, pending, sampling, record, concurrency=concurrency, renderer=renderer,
                                    parser=parser, env_factory=env_factory, limits=limits,
                                    user_simulator=user_simulator)
            except BaseException:
                summary.seconds = time.perf_counter() - started
                with contextlib.suppress(Exception):  # the cause of the stop is what must surface
                    write_manifest(out, "rollout", status="interrupted", summary=summary.to_dict(), **manifest)
                raise
        summary.seconds = time.perf_counter() - started
        write_manifest(out, "rollout", status="complete", summary=summary.to_dict(), **manifest)
        return summary
    finally:
        if owns_pool and pool is not None:
            pool.close()
        if owns_policy and handle is not None:
            await handle.close()


async def _run_here(
    handle: Policy,
    pending: deque[tuple[Task, int]],
    sampling: SamplingParams,
    record: Callable[[Task, int, Episode], None],
    *,
    concurrency: int,
    renderer: Renderer | None,
    parser: ToolCallParser | None,
    env_factory: Callable[[str], Environment],
    limits: EpisodeLimits,
    user_simulator: UserSimulator | None,
) -> None:
    """`concurrency` local slots, each an EpisodeWorker with its own environments, sharing one policy."""

    async def slot(worker: EpisodeWorker) -> None:
        try:
            while pending:
                task, sample_index = pending.popleft()
                episode = await worker.run(task, sample_index, sampling)
                record(task, sample_index, episode)
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    # A cancel that an await inside the episode swallowed (asyncio.wait_for does,
                    # when what it waits for finishes at that moment): stop now its row is written.
                    raise asyncio.CancelledError
        finally:
            worker.close()

    shared_renderer = renderer
    workers = []
    for _ in range(min(concurrency, max(len(pending), 1))):
        worker = EpisodeWorker(handle, renderer=shared_renderer, parser=parser, env_factory=env_factory,
                               limits=limits, user_simulator=user_simulator)
        shared_renderer = worker.renderer  # build the renderer once, share it
        workers.append(worker)
    # A TaskGroup cancels the other slots if one cannot write its row (disk full): nothing
    # is lost, the rows already written stay, and a re-run resumes.
    async with asyncio.TaskGroup() as group:
        for worker in workers:
            group.create_task(slot(worker))
