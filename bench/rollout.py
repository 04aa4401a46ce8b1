"""Benchmark: episodes/minute of the batched HFPolicy at 32 concurrent episodes vs one at a time.

    python bench/rollout.py [--episodes 64] [--concurrency 32] [--max-new-tokens 64] [--threads 1] [--model-dir DIR]
                            [--apps code_host,forum] [--repeats 3] [--out result.json]

Same tasks, same model (the shipped default, pre-trained on tool use, so episodes make tool calls; a random
`init_tiny` would not), same seeded sampling, in one process: one episode at a time against `--concurrency`
episodes in flight sharing one HFPolicy whose pending turns are decoded together as batches. The two sides
alternate over `--repeats` runs (which goes first alternates too), so a change in the machine's load hits
both. Prints each side's median rate with its min–max, the ratio of the medians with the min–max of the
per-run ratios, and the work each side did: the bench exits non-zero, with the reason, when a side
averaged fewer than `--min-tool-calls` tool calls per episode, or the sides' completion tokens, turns or
tool calls per episode differ by more than `--work-tolerance`.

    python bench/rollout.py --baseline REF [--repeats 5] [--out result.json]

compares the HF engine of git revision REF (its `ENGINE_FILES`, laid over a copy of the working tree's
`src/toolgym`, so only the engine differs) with the working tree's, both at `--concurrency` episodes in
flight on the same tasks and seeds. Each run is a fresh process (the two engines cannot share one), the sides
alternate over `--repeats` runs, and the same work checks apply; the JSON also says how many episodes of
each run came out token for token the same on both sides.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "src" / "toolgym" / "model" / "default"
# The HF engine: what `--baseline` takes from the other revision (a file it lacks is left out there).
ENGINE_FILES = tuple(f"src/toolgym/policy/{name}.py" for name in (
    "hf", "sampling", "shared_prefix", "attention", "prefix_cache", "prefill", "cache_arg", "decode_buffers"))


def bench_tasks(count: int, apps: list[str] | None = None) -> list[Any]:
    """`count` tasks spread over the given apps (default: every registered app that builds), round-robin."""
    from toolgym.dataset.build import BuildConfig, generate_app_tasks
    from toolgym.envs import app_names, get_app

    names = apps or app_names()
    config = BuildConfig(apps=names, tasks_per_family=max(1, count // (4 * len(names)) + 1), heldout_envs=[],
                         compositions=[])
    by_env: dict[str, list[Any]] = {}
    for name in config.apps:
        try:
            by_env[name] = generate_app_tasks(get_app(name), config)
        except Exception as exc:  # an app under construction must not stop the benchmark
            print(f"skipping app {name}: {type(exc).__name__}: {exc}")
    chosen: list[Any] = []
    while len(chosen) < count and any(by_env.values()):
        for queue in by_env.values():
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return chosen


def episode_work(out: Path) -> dict[str, float]:
    """What a rollout's episodes did, from its results.jsonl: the numbers two sides must share to compare."""
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    count = len(rows) or 1
    return {
        "episodes": len(rows),
        "completion_tokens_per_episode": sum(r["token_usage"]["output_tokens"] for r in rows) / count,
        "turns_per_episode": sum(r["metrics"]["turns"] for r in rows) / count,
        "tool_calls_per_episode": sum(r["metrics"]["tool_calls"] for r in rows) / count,
    }


def side_summary(rates: list[float], work: list[dict[str, float]]) -> dict[str, Any]:
    """One side over its runs: the rates (median, min–max) and its work averaged over the runs."""
    return {
        "episodes_per_minute": rates, "median": statistics.median(rates), "min": min(rates), "max": max(rates),
        **{key: statistics.fmean(w[key] for w in work) for key in work[0]},
    }


def ratio_summary(top: dict[str, Any], bottom: dict[str, Any]) -> dict[str, Any]:
    """The ratio of two sides' median rates, and the min–max of the per-run ratios."""
    per_run = [a / b for a, b in zip(top["episodes_per_minute"], bottom["episodes_per_minute"], strict=True)]
    return {"median": top["median"] / bottom["median"], "per_run": per_run, "min": min(per_run), "max": max(per_run)}


def work_problems(sides: dict[str, dict[str, Any]], tolerance: float, min_tool_calls: float) -> list[str]:
    """Why the sides did not do the same tool-use work (empty when they did): each reason fails the bench."""
    found = []
    for name, side in sides.items():
        if side["tool_calls_per_episode"] < min_tool_calls or side["tool_calls_per_episode"] == 0:
            found.append(f"{name}: {side['tool_calls_per_episode']:.2f} tool calls per episode: not a tool-use "
                         "workload")
    if len({side["episodes"] for side in sides.values()}) > 1:
        found.append("the sides ran different numbers of episodes: "
                     + ", ".join(f"{n} {s['episodes']:.0f}" for n, s in sides.items()))
    for key in ("completion_tokens_per_episode", "turns_per_episode", "tool_calls_per_episode"):
        values = [side[key] for side in sides.values()]
        if min(values) > 0 and max(values) / min(values) > 1 + tolerance:
            found.append(f"{key} differ by more than {tolerance:.0%}: "
                         + ", ".join(f"{n} {s[key]:.2f}" for n, s in sides.items()))
    return found


def side_line(label: str, side: dict[str, Any], repeats: int) -> str:
    """One side's rate with its spread and the work it did, as every rollout bench prints it."""
    return (f"{label}: {side['median']:8.1f} episodes/min (median of {repeats}, min–max {side['min']:.1f}–"
            f"{side['max']:.1f}) · {side['completion_tokens_per_episode']:.1f} completion tokens, "
            f"{side['turns_per_episode']:.2f} turns, {side['tool_calls_per_episode']:.2f} tool calls per episode")


def finish(result: dict[str, Any], out: Path | None) -> None:
    """Write the JSON, then exit non-zero with the reasons when the sides' work differed."""
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
    if result["problems"]:
        sys.exit("the sides did not do the same tool-use work:\n  " + "\n  ".join(result["problems"]))


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The options both rollout benches share."""
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side, alternated; medians compared")
    parser.add_argument("--apps", default=None,
                        help="comma-separated apps to draw tasks from (default: every app; the prompt prefix "
                             "cache shares a system prompt only between episodes of one app)")
    parser.add_argument("--work-tolerance", type=float, default=0.3,
                        help="largest relative gap between sides in completion tokens, turns or tool calls per episode")
    parser.add_argument("--min-tool-calls", type=float, default=0.5,
                        help="fewest tool calls per episode a side must average for a tool-use workload (the "
                             "shipped default model averages about one: most episodes call one tool and answer)")
    parser.add_argument("--out", type=Path, default=None, help="write the numbers as JSON here")


def engine_tree(revision: str, into: Path) -> Path:
    """A copy of the working tree's `src` with the engine files of `revision`: the baseline side's import root."""
    src = into / "src"
    shutil.copytree(ROOT / "src" / "toolgym", src / "toolgym", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ENGINE_FILES:
        shown = subprocess.run(["git", "show", f"{revision}:{name}"], cwd=ROOT, capture_output=True)
        target = into / name
        if shown.returncode == 0:
            target.write_bytes(shown.stdout)
        elif target.exists():  # new since `revision`: the old engine never imports it
            target.unlink()
    return src


def measure_rollout(args: argparse.Namespace, concurrency: int, out: Path) -> tuple[float, int, float]:
    """(episodes per minute, batches decoded, CPU seconds of this process) of one rollout of the bench's tasks
    through a fresh HFPolicy."""
    from toolgym.agent.limits import EpisodeLimits
    from toolgym.policy.base import SamplingParams
    from toolgym.policy.hf import HFPolicy
    from toolgym.rollout.runner import run_rollout

    tasks = bench_tasks(args.episodes, args.apps.split(",") if args.apps else None)
    sampling = SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=1)
    policy = HFPolicy(args.model_dir, max_batch_size=max(concurrency, 1))

    async def run() -> tuple[float, float]:
        started, cpu = time.perf_counter(), time.process_time()
        try:
            summary = await run_rollout(tasks, policy, out_dir=out, concurrency=concurrency, sampling=sampling,
                                        limits=EpisodeLimits(max_turns=args.max_turns, timeout_s=3600))
        finally:
            await policy.close()
        if summary.error:
            raise RuntimeError(f"{summary.error} episode(s) failed: {summary.errors_by_cause}")
        return time.perf_counter() - started, time.process_time() - cpu

    seconds, cpu_seconds = asyncio.run(run())
    return len(tasks) / seconds * 60.0, policy.generate_calls, cpu_seconds


def same_completions(a: Path, b: Path) -> int:
    """Episodes (by task id) whose every turn sampled the same token ids in both runs."""
    def turns(out: Path) -> dict[str, list[list[int]]]:
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
        return {r["task_id"]: [t["completion_ids"] for t in r["episode"]["token_turns"]] for r in rows}

    first, second = turns(a), turns(b)
    return sum(1 for task, ids in first.items() if second.get(task) == ids)


def run_side(args: argparse.Namespace, src: Path, out: Path) -> tuple[float, int, float]:
    """One batched rollout in a fresh process importing toolgym from `src`."""
    command = [sys.executable, __file__, "--side-out", str(out), "--episodes", str(args.episodes), "--concurrency",
               str(args.concurrency), "--max-new-tokens", str(args.max_new_tokens), "--max-turns", str(args.max_turns),
               "--model-dir", str(args.model_dir), "--threads", str(args.threads), *(["--apps", args.apps] if args.apps
                                                                                       else [])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the side importing {src} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(result["toolgym"]).resolve() != (src / "toolgym" / "__init__.py").resolve():
        raise RuntimeError(f"the side meant to import {src} imported {result['toolgym']}")
    return result["rate"], result["batches"], result["cpu_seconds"]


def compare_engines(args: argparse.Namespace) -> None:
    """The engine at `--baseline` against the working tree's, runs alternated; exits like the other benches."""
    revision = subprocess.run(["git", "rev-parse", args.baseline], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    names = {"base": f"engine at {revision[:10]}", "work": "engine of the working tree"}
    rates: dict[str, list[float]] = {"base": [], "work": []}
    work: dict[str, list[dict[str, float]]] = {"base": [], "work": []}
    identical: list[int] = []
    cpu: dict[str, list[float]] = {"base": [], "work": []}  # the rollout process's CPU time: less swayed by load
    print(f"{names['base']} vs {names['work']} · {args.episodes} episodes · concurrency {args.concurrency} · "
          f"{args.max_new_tokens} new tokens/turn · threads {args.threads} · load {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="toolgym-bench-engines-") as scratch:
        sources = {"base": engine_tree(revision, Path(scratch) / "base"), "work": ROOT / "src"}
        for repeat in range(args.repeats):  # alternated, so a change in the machine's load hits both sides
            order = ["base", "work"] if repeat % 2 == 0 else ["work", "base"]
            line = []
            for name in order:
                out = Path(scratch) / f"{name}-{repeat}"
                rate, batches, cpu_seconds = run_side(args, sources[name], out)
                rates[name].append(rate)
                work[name].append({**episode_work(out), "batches": batches})
                cpu[name].append(cpu_seconds)
                line.append(f"{name} {rate:7.1f} episodes/min, {cpu_seconds:5.1f} CPU s ({batches} batches)")
            identical.append(same_completions(Path(scratch) / f"base-{repeat}", Path(scratch) / f"work-{repeat}"))
            print(f"  run {repeat + 1}: " + " · ".join(line) + f" · {rates['work'][-1] / rates['base'][-1]:.2f}x · "
                  f"{identical[-1]}/{args.episodes} episodes token-identical", flush=True)
    sides = {name: side_summary(rates[name], work[name]) for name in rates}
    result: dict[str, Any] = {
        "model": str(args.model_dir), "baseline": revision, "engine_files": list(ENGINE_FILES),
        "episodes": args.episodes, "concurrency": args.concurrency, "max_new_tokens": args.max_new_tokens,
        "max_turns": args.max_turns, "threads": args.threads, "repeats": args.repeats, "sides": sides,
        "ratios": {"work/base": ratio_summary(sides["work"], sides["base"])},
        "token_identical_episodes": identical,
        "cpu_seconds": {name: {"runs": runs, "median": statistics.median(runs), "min": min(runs), "max": max(runs)}
                        for name, runs in cpu.items()},
    }
    result["problems"] = work_problems(sides, args.work_tolerance, args.min_tool_calls)
    for name, side in sides.items():
        print(side_line(f"{name:>5}", side, args.repeats))
    ratio = result["ratios"]["work/base"]
    cpu_ratio = [b / w for b, w in zip(cpu["base"], cpu["work"], strict=True)]
    print(f"work / base: {ratio['median']:.2f}x episodes/min (per run {ratio['min']:.2f}–{ratio['max']:.2f}x); "
          f"CPU seconds base / work {statistics.median(cpu['base']) / statistics.median(cpu['work']):.2f}x "
          f"(per run {min(cpu_ratio):.2f}–{max(cpu_ratio):.2f}x) · load {os.getloadavg()[0]:.2f}")
    finish(result, args.out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads for both sides (0: torch's default). 1 keeps the comparison about "
                             "batching: on a shared CPU, extra threads mostly slow small one-row steps down")
    parser.add_argument("--baseline", default=None, metavar="REF",
                        help="compare the HF engine of this git revision with the working tree's (see above)")
    parser.add_argument("--side-out", type=Path, default=None, help=argparse.SUPPRESS)  # one side of --baseline
    args = parser.parse_args()
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.baseline is not None:
        compare_engines(args)
        return
    if args.side_out is not None:
        import toolgym

        rate, batches, cpu_seconds = measure_rollout(args, args.concurrency, args.side_out)
        print(json.dumps({"rate": rate, "batches": batches, "cpu_seconds": cpu_seconds, "toolgym": toolgym.__file__}))
        return
    tasks = bench_tasks(args.episodes, args.apps.split(",") if args.apps else None)
    names = {1: "serial", args.concurrency: "batched"}
    print(f"model {args.model_dir} · {len(tasks)} episodes over {len({t.env for t in tasks})} apps · "
          f"{args.max_new_tokens} new tokens/turn · torch threads {torch.get_num_threads()} · "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    rates: dict[str, list[float]] = {"serial": [], "batched": []}
    work: dict[str, list[dict[str, float]]] = {"serial": [], "batched": []}
    with tempfile.TemporaryDirectory(prefix="toolgym-bench-rollout-") as scratch:
        for repeat in range(args.repeats):  # alternated, so a change in the machine's load hits both sides
            order = [1, args.concurrency] if repeat % 2 == 0 else [args.concurrency, 1]
            line = []
            for concurrency in order:
                name = names[concurrency]
                out = Path(scratch) / f"{name}-{repeat}"
                rate, batches, _ = measure_rollout(args, concurrency, out)
                rates[name].append(rate)
                work[name].append({**episode_work(out), "batches": batches})
                line.append(f"{name} {rate:7.1f} episodes/min ({batches} batches)")
            print(f"  run {repeat + 1}: " + " · ".join(line)
                  + f" · {rates['batched'][-1] / rates['serial'][-1]:.2f}x", flush=True)
    sides = {name: side_summary(rates[name], work[name]) for name in rates}
    result: dict[str, Any] = {
        "model": str(args.model_dir), "episodes": len(tasks), "concurrency": args.concurrency,
        "max_new_tokens": args.max_new_tokens, "max_turns": args.max_turns, "threads": torch.get_num_threads(),
        "repeats": args.repeats, "sides": sides, "ratios": {"batched/serial": ratio_summary(sides["batched"],
                                                                                             sides["serial"])},
    }
    result["problems"] = work_problems(sides, args.work_tolerance, args.min_tool_calls)
    for name, side in sides.items():
        print(side_line(f"{name:>8}", side, args.repeats))
    ratio = result["ratios"]["batched/serial"]
    print(f"batched / serial: {ratio['median']:.2f}x (per run {ratio['min']:.2f}–{ratio['max']:.2f}x) · "
          f"load {os.getloadavg()[0]:.2f}")
    finish(result, args.out)


if __name__ == "__main__":
    main()
