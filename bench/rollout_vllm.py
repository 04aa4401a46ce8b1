"""Benchmark: episodes/minute of the vLLM engine vs the HF engine on the same episodes, in one run.

    python bench/rollout_vllm.py [--episodes 64] [--concurrency 32] [--max-new-tokens 64] [--max-turns 3]
                                 [--threads 1] [--model-dir DIR] [--apps code_host,forum] [--repeats 3]

Runs in the vLLM venv (scripts/install_vllm_cpu.sh; `.venv-vllm/bin/python bench/rollout_vllm.py`). Same tasks,
same model (the shipped default unless --model-dir: vLLM's CPU attention needs head_dim 32/64/128…), same
seeded sampling, `--concurrency` episodes in flight through the rollout runner: once with HFPolicy (batched
decode, prefix cache) and once with VLLMPolicy (continuous batching). Runs are interleaved over `--repeats`;
each starts with a cold prefix cache. Prints each rate, the ratio of the medians, and vLLM's start-up time
(paid once per engine, not per run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "src" / "toolgym" / "model" / "default"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--apps", default=None, help="comma-separated apps to draw tasks from (default: every app)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for both engines (torch and OpenMP)")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch or vLLM size their thread pools

    import torch

    from rollout import bench_tasks
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
          f"threads {args.threads} · vLLM start-up {startup:.1f} s · load {os.getloadavg()[0]:.2f}")
    hf_rates, vllm_rates = [], []
    with tempfile.TemporaryDirectory(prefix="toolgym-bench-vllm-") as scratch:
        root = Path(scratch)
        for repeat in range(args.repeats):
            hf = HFPolicy(args.model_dir, max_batch_size=args.concurrency)
            hf_rate = measure(hf, root / f"hf-{repeat}")
            asyncio.run(hf.close())
            vllm.reset_prefix_cache()
            vllm_rate = measure(vllm, root / f"vllm-{repeat}")
            hf_rates.append(hf_rate)
            vllm_rates.append(vllm_rate)
            print(f"  run {repeat + 1}: hf {hf_rate:7.1f} episodes/min · vllm {vllm_rate:7.1f} episodes/min · "
                  f"{vllm_rate / hf_rate:.2f}x")
    vllm.shutdown()
    hf_median, vllm_median = statistics.median(hf_rates), statistics.median(vllm_rates)
    print(f"hf engine:   {hf_median:8.1f} episodes/min (median of {args.repeats})")
    print(f"vllm engine: {vllm_median:8.1f} episodes/min (median of {args.repeats})")
    print(f"vllm / hf: {vllm_median / hf_median:.2f}x · load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
