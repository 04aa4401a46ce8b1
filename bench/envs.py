"""Environment speed: reset (fresh copy of the seed) and read-tool calls, per app, against targets.

    python bench/envs.py [--apps booking,forum] [--resets 300] [--calls 400] [--module toolgym.envs.examples.toy]

Reset is compared with a same-run baseline — copying the seed with sqlite3 `backup()` into a new
connection — and reported as a ratio. Read calls are the reference-solution calls of each app's
generated tasks that succeed and change nothing. Targets: reset < 5 ms, tool call < 1 ms (median).
Apps that do not import yet are skipped with a line saying so. Exit code 1 if any target is missed.
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs import App, Environment, app_names, get_app
from toolgym.schema import ToolCall

RESET_TARGET_MS = 5.0
TOOL_CALL_TARGET_MS = 1.0
DEFAULT_VARIABLES = {"CURRENT_DATE": "2026-06-15"}


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def p95_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000


def time_reset(app: App, rounds: int) -> list[float]:
    env = Environment([app])
    env.reset(DEFAULT_VARIABLES)
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        env.reset(DEFAULT_VARIABLES)
        samples.append(time.perf_counter() - started)
    env.close()
    return samples


def time_backup_baseline(app: App, rounds: int) -> list[float]:
    """The plain way to get a fresh copy: backup() the seed into a new in-memory connection."""
    source = sqlite3.connect(":memory:")
    source.deserialize(app.snapshot().data)
    copy = sqlite3.connect(":memory:")
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        copy.close()  # reset closes the previous episode's database too
        copy = sqlite3.connect(":memory:")
        source.backup(copy)
        samples.append(time.perf_counter() - started)
    copy.close()
    source.close()
    return samples


def read_calls(app: App, limit: int = 60) -> list[tuple[dict[str, str], ToolCall]]:
    """Reference calls that succeed and leave the database unchanged, with the variables they need."""
    tasks = generate_app_tasks(app, BuildConfig(tasks_per_family=8))
    env = Environment([app])
    found: list[tuple[dict[str, str], ToolCall]] = []
    seen: set[str] = set()
    for task in tasks:
        env.reset(task.env_variables)
        for call in task.reference_solution:
            before = env.diff()
            result = env.call_tool(call.name, call.arguments)
            key = f"{call.name}{call.arguments}{sorted(task.env_variables.items())}"
            if not result.is_error and env.diff() == before and key not in seen:
                seen.add(key)
                found.append((dict(task.env_variables), call))
        if len(found) >= limit:
            break
    env.close()
    return found


def time_tool_calls(app: App, calls: list[tuple[dict[str, str], ToolCall]], rounds: int) -> dict[str, Any]:
    envs: dict[str, Environment] = {}
    prepared = []
    for variables, call in calls:
        key = repr(sorted(variables.items()))
        if key not in envs:
            envs[key] = Environment([app])
            envs[key].reset(variables)
        prepared.append((envs[key], call))
    for env, call in prepared:  # warm caches once
        env.call_tool(call.name, call.arguments)
    samples = []
    by_tool: dict[str, list[float]] = {}
    for index in range(rounds):
        env, call = prepared[index % len(prepared)]
        started = time.perf_counter()
        env.call_tool(call.name, call.arguments)
        elapsed = time.perf_counter() - started
        samples.append(elapsed)
        by_tool.setdefault(call.name, []).append(elapsed)
    for env in envs.values():
        env.close()
    slowest = max(by_tool.items(), key=lambda item: statistics.median(item[1]))
    return {"samples": samples, "tools": len(by_tool), "slowest": (slowest[0], median_ms(slowest[1]))}


def load_apps(names: list[str], modules: list[str]) -> list[tuple[str, App | None, str]]:
    loaded: list[tuple[str, App | None, str]] = []
    for name in names:
        try:
            loaded.append((name, get_app(name), ""))
        except Exception as exc:  # an app someone has not written yet
            loaded.append((name, None, f"{type(exc).__name__}: {exc}"))
    for module in modules:
        try:
            app = importlib.import_module(module).APP
            loaded.append((app.name, app, ""))
        except Exception as exc:
            loaded.append((module, None, f"{type(exc).__name__}: {exc}"))
    return loaded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", default=",".join(app_names()), help="comma-separated registered apps")
    parser.add_argument("--module", action="append", default=[], help="also bench the APP of this module")
    parser.add_argument("--resets", type=int, default=300)
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()

    failures = 0
    print(f"targets: reset < {RESET_TARGET_MS} ms, read-tool call < {TOOL_CALL_TARGET_MS} ms (medians)")
    for name, app, problem in load_apps([a for a in args.apps.split(",") if a], args.module):
        if app is None:
            print(f"\n{name}: skipped — the app does not import yet ({problem})")
            continue
        started = time.perf_counter()
        size_kb = len(app.snapshot().data) / 1024
        build_s = time.perf_counter() - started
        reset = time_reset(app, args.resets)
        baseline = time_backup_baseline(app, args.resets)
        reset_ms, baseline_ms = median_ms(reset), median_ms(baseline)
        reset_ok = reset_ms < RESET_TARGET_MS
        failures += not reset_ok
        print(f"\n{name}: seed {size_kb:,.0f} KB (built in {build_s:.2f}s)")
        print(f"  reset      median {reset_ms:7.3f} ms  p95 {p95_ms(reset):7.3f} ms   "
              f"baseline backup() {baseline_ms:7.3f} ms   ratio {reset_ms / baseline_ms:5.2f}x   "
              f"{'PASS' if reset_ok else 'FAIL'}")
        try:
            calls = read_calls(app)
        except NotImplementedError as exc:
            print(f"  tool call  skipped — no task families to draw read calls from ({exc})")
            continue
        if not calls:
            print("  tool call  skipped — no reference call of its tasks is a successful read")
            continue
        timing = time_tool_calls(app, calls, args.calls)
        call_ms = median_ms(timing["samples"])
        call_ok = call_ms < TOOL_CALL_TARGET_MS
        failures += not call_ok
        slow_name, slow_ms = timing["slowest"]
        print(f"  tool call  median {call_ms:7.3f} ms  p95 {p95_ms(timing['samples']):7.3f} ms   "
              f"{len(timing['samples'])} calls of {len(calls)} distinct reads over {timing['tools']} tools; "
              f"slowest {slow_name} {slow_ms:.3f} ms   {'PASS' if call_ok else 'FAIL'}")
    print(f"\n{'all targets met' if failures == 0 else f'{failures} target(s) missed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
