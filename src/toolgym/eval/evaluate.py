"""run_eval: trials of sampled rollouts plus one greedy pass, then the per-env / per-split tables.

Layout written under OUT (each sub-run is an ordinary, resumable `toolgym rollout` folder):

    OUT/trial-<t>/results.jsonl   trial t: its own rollout sub-run, samples_per_task samples of every
                                  task (sample_index 0..N-1), sampling seed = seed + t - 1
    OUT/greedy/results.jsonl      temperature 0, one sample per task (greedy pass@1)
    OUT/manifest.json             kind "eval": how trials were made, k values, policy, task sha256
    OUT/eval.json, OUT/eval.md    the summary as data and as markdown tables

Trials are separate sub-runs (not sample-index ranges of one run) so each keeps its own manifest
and seed and can be resumed or re-run alone; the manifest records this as `trial_layout`. With `ray`
settings every sub-run goes through one set of Ray workers, so each worker loads the policy once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from toolgym.config.evaluation import EvalConfig
from toolgym.config.pieces import RayWorkers
from toolgym.dataset.manifest import write_manifest
from toolgym.envs import Environment, make_env
from toolgym.eval.records import GREEDY_DIR, TRIAL_PREFIX, load_run
from toolgym.eval.summary import EvalSummary, summarize
from toolgym.eval.tables import summary_markdown
from toolgym.policy.base import Policy
from toolgym.rollout.runner import RolloutSummary, open_ray_pool, run_rollout, tasks_digest
from toolgym.rollout.worker import PolicyIdentity
from toolgym.schema import Task

__all__ = ["EvalConfig", "EvalResult", "run_eval", "summarize_eval_dir"]

TRIAL_LAYOUT = "sub-run"  # trial t = OUT/trial-<t>/ (its own rollout run), not a sample-index range
SUMMARY_JSON = "eval.json"
SUMMARY_MD = "eval.md"


@dataclass
class EvalResult:
    out_dir: Path
    summary: EvalSummary
    rollouts: dict[str, RolloutSummary]
    seconds: float


async def run_eval(
    tasks: list[Task],
    policy: Policy | Callable[[], Policy],
    *,
    out_dir: str | Path,
    config: EvalConfig | None = None,
    tasks_path: str | Path | None = None,
    tasks_sha256: str | None = None,
    env_factory: Callable[[str], Environment] = make_env,
    progress: bool = False,
    console: Console | None = None,
    name: str | None = None,
    ray: RayWorkers | None = None,
) -> EvalResult:
    """Run every trial and the greedy pass (each resumable), then summarize and write the tables.

    `ray` with an address runs the episodes on Ray workers; `policy` must then be a factory.
    """
    config = config or EvalConfig()
    if not tasks:
        raise ValueError("no tasks to evaluate")
    started = time.perf_counter()
    out = Path(out_dir)
    pool = None
    if ray is not None and ray.ray is not None:
        pool = open_ray_pool(policy, ray, concurrency=config.concurrency, env_factory=env_factory)
    owns_policy = pool is None and not isinstance(policy, Policy)
    handle: Policy | None = None  # the policy every sub-run shares here; on Ray, each worker holds its own
    if pool is None:
        handle = policy() if owns_policy else policy  # type: ignore[operator,assignment]
    source = handle if handle is not None else policy
    digest = tasks_sha256 or tasks_digest(tasks)
    rollouts: dict[str, RolloutSummary] = {}
    common = {
        "concurrency": config.concurrency, "limits": config, "env_factory": env_factory, "tasks_sha256": digest,
        "tasks_path": tasks_path, "progress": progress, "console": console, "ray": pool,
    }
    try:
        for trial in range(1, config.trials + 1):
            label = f"{TRIAL_PREFIX}{trial}"
            if console is not None:
                console.print(f"eval {label}: {len(tasks)} task(s) × {config.samples_per_task} sample(s)")
            rollouts[label] = await run_rollout(
                tasks, source, out_dir=out / label, samples_per_task=config.samples_per_task,
                sampling=config.trial_sampling(trial), config={"eval_trial": trial}, **common,
            )
        if config.greedy:
            if console is not None:
                console.print(f"eval {GREEDY_DIR}: {len(tasks)} task(s) at temperature 0")
            rollouts[GREEDY_DIR] = await run_rollout(
                tasks, source, out_dir=out / GREEDY_DIR, samples_per_task=1,
                sampling=config.greedy_sampling(), config={"eval_greedy": True}, **common,
            )
        identity = pool.identity if pool is not None else PolicyIdentity.of(handle)  # type: ignore[arg-type]
        policy_name, checkpoint, weights = identity.name, identity.checkpoint, identity.weights
    finally:
        if pool is not None:
            pool.close()
        elif owns_policy and handle is not None:
            await handle.close()
    seconds = time.perf_counter() - started
    write_manifest(
        out, "eval",
        policy=policy_name, checkpoint=checkpoint, weights=weights, tasks_path=str(tasks_path) if tasks_path else None,
        tasks_sha256=digest, task_count=len(tasks), config=config.model_dump(mode="json"),
        trial_layout=TRIAL_LAYOUT,
        trials=[{"trial": t, "dir": f"{TRIAL_PREFIX}{t}", "seed": config.trial_sampling(t).seed,
                 "sample_indexes": [0, config.samples_per_task - 1]} for t in range(1, config.trials + 1)],
        greedy={"dir": GREEDY_DIR, "temperature": 0.0} if config.greedy else None,
        seconds=round(seconds, 3),
        rollouts={label: summary.to_dict() for label, summary in rollouts.items()},
    )
    summary = summarize_eval_dir(out, config.ks, name=name)
    return EvalResult(out_dir=out, summary=summary, rollouts=rollouts, seconds=seconds)


def summarize_eval_dir(out_dir: str | Path, ks: list[int], name: str | None = None) -> EvalSummary:
    """Read a run folder, compute its tables, and write eval.json and eval.md next to it."""
    out = Path(out_dir)
    summary = summarize(load_run(out, name=name), ks)
    (out / SUMMARY_JSON).write_text(json.dumps(summary.to_dict(), indent=2, allow_nan=False) + "\n")
    (out / SUMMARY_MD).write_text(f"# Eval: {summary.name}\n\n" + summary_markdown(summary))
    return summary
