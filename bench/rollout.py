"""Benchmark: episodes/minute of the batched HFPolicy at 32 concurrent episodes vs one at a time.

    python bench/rollout.py [--episodes 64] [--concurrency 32] [--max-new-tokens 64] [--threads 1] [--model-dir DIR]
                            [--apps code_host,forum] [--repeats 3]

Same tasks, same tiny model (built with init_tiny unless --model-dir is given), same seeded
sampling, in one process: first one episode at a time, then `--concurrency` episodes in flight
sharing one HFPolicy whose pending turns are decoded together as batches. Prints both rates, the
ratio of their medians over `--repeats` interleaved runs (target ≥ 5×), how many batches each side
ran, and the machine's load average before and after (on a shared machine the ratio moves with it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from toolgym.agent.limits import EpisodeLimits
from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs import app_names, get_app
from toolgym.model.tiny import init_tiny
from toolgym.policy.base import SamplingParams
from toolgym.policy.hf import HFPolicy
from toolgym.rollout.runner import run_rollout
from toolgym.schema import Task


def bench_tasks(count: int, apps: list[str] | None = None) -> list[Task]:
    """`count` tasks spread over the given apps (default: every registered app that builds), round-robin."""
    names = apps or app_names()
    config = BuildConfig(apps=names, tasks_per_family=max(1, count // (4 * len(names)) + 1), heldout_envs=[],
                         compositions=[])
    by_env: dict[str, list[Task]] = {}
    for name in config.apps:
        try:
            by_env[name] = generate_app_tasks(get_app(name), config)
        except Exception as exc:  # an app under construction must not stop the benchmark
            print(f"skipping app {name}: {type(exc).__name__}: {exc}")
    chosen: list[Task] = []
    while len(chosen) < count and any(by_env.values()):
        for queue in by_env.values():
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return chosen


def measure(model_dir: Path, tasks: list[Task], concurrency: int, sampling: SamplingParams, max_turns: int,
            out: Path) -> tuple[float, int, int]:
    """(episodes per minute, episodes, batches decoded) for one configuration."""
    policy = HFPolicy(model_dir, max_batch_size=max(concurrency, 1))

    async def run() -> float:
        started = time.perf_counter()
        try:
            summary = await run_rollout(tasks, policy, out_dir=out, concurrency=concurrency, sampling=sampling,
                                        limits=EpisodeLimits(max_turns=max_turns, timeout_s=3600))
        finally:
            await policy.close()
        if summary.error:
            raise RuntimeError(f"{summary.error} episode(s) failed: {summary.errors_by_cause}")
        return time.perf_counter() - started

    seconds = asyncio.run(run())
    return len(tasks) / seconds * 60.0, len(tasks), policy.generate_calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3,
                        help="serial and batched runs, interleaved; the medians are compared (one run of each "
                             "moves by ±30%% with the host's load)")
    parser.add_argument("--apps", default=None,
                        help="comma-separated apps to draw tasks from (default: every app; the prompt prefix "
                             "cache shares a system prompt only between episodes of one app)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads for both runs (0: torch's default). 1 keeps the comparison about "
                             "batching: on a shared CPU, extra threads mostly slow small one-row steps down")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory(prefix="toolgym-bench-rollout-") as scratch:
        root = Path(scratch)
        model_dir = args.model_dir or init_tiny(root / "tiny", seed=0)
        tasks = bench_tasks(args.episodes, args.apps.split(",") if args.apps else None)
        sampling = SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=1)
        print(f"model {model_dir} · {len(tasks)} episodes over {len({t.env for t in tasks})} apps · "
              f"{args.max_new_tokens} new tokens/turn · torch threads {torch.get_num_threads()} · "
              f"load {os.getloadavg()[0]:.2f}")
        serial_rates, batched_rates = [], []
        for repeat in range(args.repeats):  # interleaved, so a change in the machine's load hits both sides
            serial_rate, _, serial_calls = measure(model_dir, tasks, 1, sampling, args.max_turns,
                                                   root / f"serial-{repeat}")
            batched_rate, _, batched_calls = measure(model_dir, tasks, args.concurrency, sampling, args.max_turns,
                                                     root / f"batched-{repeat}")
            serial_rates.append(serial_rate)
            batched_rates.append(batched_rate)
            print(f"  run {repeat + 1}: one at a time {serial_rate:7.1f} episodes/min ({serial_calls} batches) · "
                  f"{args.concurrency} concurrent {batched_rate:7.1f} episodes/min ({batched_calls} batches) · "
                  f"{batched_rate / serial_rate:.1f}x")
        serial, batched = statistics.median(serial_rates), statistics.median(batched_rates)
        print(f"one at a time:          {serial:8.1f} episodes/min (median of {args.repeats})")
        print(f"{args.concurrency:>2} concurrent (batched): {batched:8.1f} episodes/min (median of {args.repeats})")
        ratio = batched / serial
        print(f"speed-up: {ratio:.1f}x (target >= 5x) {'OK' if ratio >= 5 else 'BELOW TARGET'} · "
              f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
