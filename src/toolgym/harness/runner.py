"""run_harness: every (task, sample) through an agent harness, one durable results.jsonl row each, resumable.

The rows are `toolgym rollout`'s rows (`rollout.results.episode_to_row`) plus a `harness` field, so `data
convert`, `eval show` and `report` read them unchanged. The guarantees are rollout's too: each finished
episode is appended and flushed before it is counted, a re-run skips the (task_id, sample_index) pairs already
written and drops a torn last line, and stopping the run (Ctrl-C, SIGTERM through `run_until_signalled`)
kills the harnesses in flight and writes none of their rows, so nothing is lost or duplicated.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from toolgym.chat.render import PromptStyle, load_prompt_style
from toolgym.dataset.manifest import read_manifest, write_manifest
from toolgym.envs import Environment, make_env
from toolgym.harness.episode import HarnessCommand, run_harness_episode
from toolgym.harness.gateway import Gateway
from toolgym.harness.policy_endpoint import PolicyEndpoint
from toolgym.policy.base import Policy, SamplingParams
from toolgym.rollout.results import (
    RESULTS_FILE,
    episode_to_row,
)
from toolgym.rollout.runner import RolloutSummary, resume_rows, tasks_digest
from toolgym.rollout.worker import error_episode
from toolgym.schema import Task
from toolgym.schema.jsonl import JsonlWriter

RESUME_KEYS = ("tasks_sha256", "policy", "checkpoint", "weights", "command", "sampling")


class HarnessError(RuntimeError):
    """The run cannot start or continue (tasks a harness cannot play, a resume with other settings)."""


def check_tasks(tasks: list[Task]) -> None:
    """Unique ids, and no dual-control task: a harness run has no simulated user to play the customer."""
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise HarnessError(f"task id {task.id!r} appears twice; results rows are keyed by task id")
        seen.add(task.id)
    dual = [t.id for t in tasks if t.user_scenario is not None]
    if dual:
        raise HarnessError(f"{len(dual)} task(s) need a simulated user (dual control), which a harness run does not "
                           f"play (first: {dual[0]}); select other environments (--env)")


def _check_resume(out_dir: Path, manifest: dict[str, Any]) -> None:
    previous = read_manifest(out_dir)
    keys = [k for k in RESUME_KEYS if k != "tasks_sha256" or manifest.get("tasks_path")]
    changed = [k for k in keys if k in previous and json.loads(json.dumps(previous[k], default=str))
               != json.loads(json.dumps(manifest[k], default=str))]
    if changed:
        details = "; ".join(f"{k}: was {previous[k]!r}, now {manifest[k]!r}" for k in changed)
        raise HarnessError(f"{out_dir} holds a run with different settings ({details}); "
                           "resume with the same settings or choose another --out folder")


def endpoint_style(policy: Policy, chat_style: PromptStyle) -> PromptStyle:
    """A token-mode policy's prompts are in its model's own style (toolgym.json); chat mode writes `chat_style`."""
    if policy.tokenizer is not None:
        return load_prompt_style(getattr(policy.tokenizer, "name_or_path", None))
    return getattr(policy, "prompt_style", None) or chat_style


async def run_harness(
    tasks: list[Task],
    policy: Policy | Callable[[], Policy],
    *,
    command: str,
    out_dir: str | Path,
    samples_per_task: int = 1,
    concurrency: int = 4,
    timeout_s: float = 600.0,
    max_turns: int = 30,
    sampling: SamplingParams | None = None,
    prompt_style: PromptStyle = "full",
    tasks_sha256: str | None = None,
    tasks_path: str | Path | None = None,
    config: dict[str, Any] | None = None,
    retry_errors: bool = False,
    progress: bool = False,
    console: Console | None = None,
    env_factory: Callable[[str], Environment] = make_env,
    base_env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> RolloutSummary:
    """Run `command` once per (task, sample) into `out_dir/results.jsonl` (resumable).

    `policy`: a Policy (the caller closes it) or a factory (opened and closed here). `sampling`: what requests
    leave unset (its seed is the run seed). `prompt_style`: the system prompt's style for chat-mode policies.
    `base_env`: the environment harnesses inherit (default: this process's).
    """
    if samples_per_task < 1 or concurrency < 1:
        raise ValueError("samples_per_task and concurrency must be at least 1")
    check_tasks(tasks)
    started = time.perf_counter()
    sampling = sampling or SamplingParams()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / RESULTS_FILE
    owns_policy = not isinstance(policy, Policy)
    handle: Policy = policy() if owns_policy else policy  # type: ignore[operator,assignment]
    try:
        style = endpoint_style(handle, prompt_style)
        manifest = {
            "tasks_path": str(tasks_path) if tasks_path else None,
            "tasks_sha256": tasks_sha256 or tasks_digest(tasks),
            "policy": handle.name, "checkpoint": handle.checkpoint, "weights": handle.weights,
            "command": command, "sampling": sampling.to_dict(), "seed": sampling.seed,
            "config": {"samples_per_task": samples_per_task, "concurrency": concurrency, "timeout_s": timeout_s,
                       "max_turns": max_turns, "prompt_style": style, "task_count": len(tasks), **(config or {})},
        }
        _check_resume(out, manifest)
        summary, done = resume_rows(results_path, retry_errors=retry_errors)
        write_manifest(out, "harness", status="running", **manifest)
        pending = deque((t, i) for t in tasks for i in range(samples_per_task) if (t.id, i) not in done)
        harness = HarnessCommand(command=command, timeout_s=timeout_s, max_turns=max_turns, seed=sampling.seed,
                                 base_env=dict(os.environ if base_env is None else base_env),
                                 cwd=str(cwd) if cwd is not None else None, env_factory=env_factory)
        endpoint = PolicyEndpoint(handle, prompt_style=style, defaults=sampling)
        try:
            with JsonlWriter(results_path) as writer, _progress(console, progress) as bar:
                shown = bar.add_task("harness", total=len(pending), stats=_stats(summary))
                async with Gateway(endpoint) as gateway:

                    async def slot() -> None:
                        while pending:
                            task, sample_index = pending.popleft()
                            try:
                                row = (await run_harness_episode(task, sample_index, gateway, harness)).row(task)
                            except Exception as exc:  # a bug in toolgym: this episode's error, not the run's end
                                row = episode_to_row(error_episode(
                                    task, sample_index, handle, sampling,
                                    f"rollout error: harness episode: {type(exc).__name__}: {exc}"), task)
                            writer.write(row)
                            summary.add(row)
                            summary.ran += 1
                            bar.update(shown, advance=1, stats=_stats(summary))

                    async with asyncio.TaskGroup() as group:
                        for _ in range(min(concurrency, max(len(pending), 1))):
                            group.create_task(slot())
        except BaseException:
            summary.seconds = time.perf_counter() - started
            with contextlib.suppress(Exception):
                write_manifest(out, "harness", status="interrupted", summary=summary.to_dict(), **manifest)
            raise
        summary.seconds = time.perf_counter() - started
        write_manifest(out, "harness", status="complete", summary=summary.to_dict(), **manifest)
        return summary
    finally:
        if owns_policy:
            await handle.close()


def _progress(console: Console | None, enabled: bool) -> Progress:
    return Progress(SpinnerColumn(), TextColumn("[bold]harness"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), console=console, disable=not enabled)


def _stats(summary: RolloutSummary) -> str:
    return f"pass {summary.passed}/{summary.scored} · errors {summary.error}"
