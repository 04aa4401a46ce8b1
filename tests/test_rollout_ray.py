"""Rollouts and evals on Ray workers: the same rows as the local runner, nothing lost when a worker or the
driver is killed. One local Ray cluster (2 CPUs) is shared by the module; the CLI tests join it as drivers
of their own, in subprocesses, the way `toolgym rollout --ray HOST:PORT` joins a real cluster."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Ray binds a local cluster to the machine's network address; on Linux this setting (read when ray is imported)
# makes it use loopback, so the tests' traffic never leaves 127.0.0.1. Subprocess drivers inherit it.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

from test_rollout_support import subprocess_env, suite_tasks
from toolgym.agent.limits import EpisodeLimits
from toolgym.config.evaluation import EvalConfig
from toolgym.config.pieces import RayWorkers
from toolgym.dataset.manifest import read_manifest
from toolgym.eval.evaluate import run_eval
from toolgym.policy.base import Generation, GenerationRequest
from toolgym.policy.instructing_oracle import InstructingOraclePolicy
from toolgym.policy.spec import make_policy
from toolgym.rollout.results import RESULTS_FILE, read_rows, row_key
from toolgym.rollout.runner import RolloutSummary, run_rollout
from toolgym.schema import Task
from toolgym.schema.jsonl import write_jsonl

APPS = ["booking", "forum"]
ACTOR_PREFIX = "toolgym-rollout-"
PACE_S = 0.05  # PacedOracle's pause per turn: a 64-episode run lasts long enough to kill a worker in it


class PacedOracle(InstructingOraclePolicy):
    """The oracle with a pause before each turn (as a served model's latency), so a run can be cut mid-way."""

    async def generate(self, request: GenerationRequest) -> Generation:
        await asyncio.sleep(PACE_S)
        return await super().generate(request)


@functools.cache
def _tasks() -> list[Task]:
    """16 tasks of two registered apps whose reference solutions replay to reward 1."""
    tasks = suite_tasks(apps=APPS)
    chosen = [t for app in APPS for t in [t for t in tasks if t.env == app][:8]]
    assert len(chosen) == 16
    return chosen


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray cluster for the module; its GCS address is what `--ray` takes."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'toolgym[scale]')")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024 * 1024, log_to_driver=False)
    # The workers cannot import this test module: ship PacedOracle to them by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _scored(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a run scored, per (task, sample): no timings."""
    content = []
    for row in rows:
        calls = [(c["function"]["name"], c["function"]["arguments"])
                 for m in row["completion"] for c in m.get("tool_calls") or []]
        content.append((row["task_id"], row["sample_index"], row["status"], row["reward"], row["partial_score"],
                        row["final_answer"], calls, [c["passed"] for c in row["checks"]], row["sampling"]["seed"]))
    return sorted(content)


def _our_actors(ray: Any) -> set[str]:
    return {a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(ACTOR_PREFIX)}


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _dataset(root: Path) -> Path:
    write_jsonl(root / "tasks.jsonl", _tasks())
    return root


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolgym.cli.main", *args, "--no-progress"]


def test_a_run_without_ray_never_imports_it(tmp_path: Path) -> None:
    script = (
        "import asyncio, sys\n"
        "from toolgym.cli.main import app\n"
        "from toolgym.eval.evaluate import run_eval\n"
        "from toolgym.policy.spec import make_policy\n"
        "from toolgym.rollout.runner import run_rollout\n"
        "from toolgym.schema.jsonl import read_models\n"
        "from toolgym.schema import Task\n"
        f"tasks = read_models({str(_dataset(tmp_path) / 'tasks.jsonl')!r}, Task)[:2]\n"
        f"asyncio.run(run_rollout(tasks, make_policy('oracle'), out_dir={str(tmp_path / 'run')!r}))\n"
        "assert 'ray' not in sys.modules, 'a local run imported Ray'\n"
    )
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=subprocess_env(),
                              timeout=120)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert len(read_rows(tmp_path / "run" / RESULTS_FILE)) == 2


@pytest.mark.ray
def test_ray_workers_write_the_rows_the_local_runner_writes(cluster: str, tmp_path: Path) -> None:
    tasks, oracle = _tasks(), functools.partial(make_policy, "oracle")
    common: dict[str, Any] = {"samples_per_task": 4, "concurrency": 4}
    local = asyncio.run(run_rollout(tasks, oracle, out_dir=tmp_path / "local", **common))
    started = time.perf_counter()
    remote = asyncio.run(run_rollout(tasks, oracle, out_dir=tmp_path / "ray", **common,
                                     ray=RayWorkers(ray=cluster, ray_workers=2)))
    print(f"ray: 64 episodes in {time.perf_counter() - started:.1f}s (workers started included)")
    local_rows, ray_rows = read_rows(tmp_path / "local" / RESULTS_FILE), read_rows(tmp_path / "ray" / RESULTS_FILE)
    assert len(ray_rows) == len({row_key(r) for r in ray_rows}) == 64
    assert _scored(ray_rows) == _scored(local_rows)
    assert all(r["reward"] == 1.0 for r in ray_rows)
    assert (remote.passed, remote.error, remote.workers_lost) == (local.passed, 0, 0) == (64, 0, 0)
    manifest = read_manifest(tmp_path / "ray")
    assert manifest["status"] == "complete" and manifest["policy"] == read_manifest(tmp_path / "local")["policy"]
    assert manifest["config"]["ray"]["ray_workers"] == 2
    # the workers were stopped with the run
    import ray

    deadline = time.monotonic() + 20
    while _our_actors(ray) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _our_actors(ray)


def _kill_a_worker_mid_run(cluster: str, out: Path, retries: int) -> tuple[RolloutSummary, int]:
    """A 64-episode run on 2 workers whose first worker process is SIGKILLed mid-run: (summary, rows before)."""
    import ray

    before = _our_actors(ray)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["summary"] = asyncio.run(run_rollout(
                _tasks(), PacedOracle, out_dir=out, samples_per_task=4, concurrency=4,
                ray=RayWorkers(ray=cluster, ray_workers=2, ray_retries=retries)))
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while _lines(out / RESULTS_FILE) < 6 and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    workers = sorted(_our_actors(ray) - before)
    assert len(workers) == 2 and thread.is_alive(), outcome
    pid = ray.get(ray.get_actor(workers[0]).__ray_call__.remote(lambda actor: os.getpid()))
    written = _lines(out / RESULTS_FILE)
    os.kill(pid, signal.SIGKILL)  # the worker process dies with its episodes in flight
    thread.join(timeout=120)
    assert not thread.is_alive() and "error" not in outcome, outcome
    assert written < 64, "the run ended before the worker was killed"
    return outcome["summary"], written


@pytest.mark.ray
def test_a_killed_worker_loses_no_episode(cluster: str, tmp_path: Path) -> None:
    summary, written = _kill_a_worker_mid_run(cluster, tmp_path / "run", retries=1)
    rows = read_rows(tmp_path / "run" / RESULTS_FILE)
    assert len(rows) == len({row_key(r) for r in rows}) == 64
    assert all(r["status"] == "ok" and r["reward"] == 1.0 for r in rows)
    assert summary.workers_lost == 1 and summary.retried >= 1
    asyncio.run(run_rollout(_tasks(), make_policy("oracle"), out_dir=tmp_path / "local", samples_per_task=4))
    assert _scored(rows) == _scored(read_rows(tmp_path / "local" / RESULTS_FILE))
    print(f"killed worker: {summary.retried} episode(s) ran again; {written}/64 rows were written before the kill")


@pytest.mark.ray
def test_episodes_of_a_worker_lost_past_the_retries_are_errors_never_scores(cluster: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    summary, _ = _kill_a_worker_mid_run(cluster, out, retries=0)
    rows = read_rows(out / RESULTS_FILE)
    assert len(rows) == len({row_key(r) for r in rows}) == 64
    lost = [r for r in rows if r["status"] == "error"]
    assert lost and summary.error == len(lost) and summary.retried == 0 and summary.scored == 64 - len(lost)
    for row in lost:
        assert row["reward"] is None and row["partial_score"] is None
        assert row["error"].startswith("worker error: the Ray worker running this episode was lost")
    assert summary.errors_by_cause == {"worker error": len(lost)}
    assert read_manifest(out)["status"] == "complete"  # a lost worker is a fault of some episodes, not of the run


@pytest.mark.ray
def test_a_killed_driver_resumes_to_every_row_once(cluster: str, tmp_path: Path) -> None:
    import ray

    dataset, out = _dataset(tmp_path / "data"), tmp_path / "run"
    total = 16 * 8
    command = _cli("rollout", "--tasks", str(dataset), "--policy", "oracle", "--out", str(out), "--ray", cluster,
                   "--samples-per-task", "8", "--concurrency", "4")
    results = out / RESULTS_FILE
    for stop in (signal.SIGTERM, signal.SIGKILL):  # an orderly stop, then a kill
        written = _lines(results)
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=subprocess_env())
        deadline = time.monotonic() + 120
        while _lines(results) < written + 8 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(stop)
        output, _ = process.communicate(timeout=60)
        if stop == signal.SIGTERM:
            assert process.returncode == 128 + stop, output.decode(errors="replace")[-3000:]
            assert b"run the same command again to resume" in output
            assert read_manifest(out)["status"] == "interrupted"
    before = read_rows(results)
    assert 16 <= len(before) < total, f"the run was not cut mid-way ({len(before)} of {total} rows)"
    assert len({row_key(r) for r in before}) == len(before)
    with open(results, "ab") as handle:  # what a kill in the middle of a write leaves behind
        handle.write(b'{"schema_version": "toolgym.rollout_row/1", "example_id": "booking/')
    finished = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    rows = read_rows(results)
    assert len(rows) == len({row_key(r) for r in rows}) == total
    assert rows[: len(before)] == before  # finished episodes were kept, not run again
    assert all(r["reward"] == 1.0 for r in rows)
    assert f"resumed {len(before)}" in finished.stdout and "dropped a torn last line" in finished.stdout
    assert read_manifest(out)["status"] == "complete"
    # Ray stopped the killed driver's workers, and the resumed run stopped its own
    deadline = time.monotonic() + 30
    while _our_actors(ray) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _our_actors(ray)


@pytest.mark.ray
def test_eval_on_ray_passes_what_it_passes_here(cluster: str, tmp_path: Path) -> None:
    dataset = _dataset(tmp_path / "data")
    config = EvalConfig(samples_per_task=2, trials=1, ks=[1, 2], concurrency=4)
    local = asyncio.run(run_eval(_tasks(), functools.partial(make_policy, "oracle"), out_dir=tmp_path / "local",
                                 config=config))
    finished = subprocess.run(
        _cli("eval", "--tasks", str(dataset), "--policy", "oracle", "--out", str(tmp_path / "ray"), "--ray", cluster,
             "--samples", "2", "--trials", "1", "--k", "1,2", "--concurrency", "4"),
        capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    remote = json.loads((tmp_path / "ray" / "eval.json").read_text())

    def passes(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
        return sorted((g["split"], g["total"]["passes"], g["total"]["scored"], g["total"]["errored"],
                       g["greedy"] and g["greedy"]["passes"]) for g in summary["groups"])

    assert passes(remote) == passes(local.summary.to_dict())
    assert sum(g["total"]["passes"] for g in remote["groups"]) > 0
    for label in ("trial-1", "greedy"):
        assert _scored(read_rows(tmp_path / "ray" / label / RESULTS_FILE)) == \
            _scored(read_rows(tmp_path / "local" / label / RESULTS_FILE))


@pytest.mark.ray
def test_the_grpo_pool_on_ray_returns_what_the_local_pool_returns_in_the_same_order(cluster: str) -> None:
    from toolgym.envs import make_env
    from toolgym.policy.base import SamplingParams
    from toolgym.rollout.ray_pool import RayRolloutPool
    from toolgym.train.grpo.rollouts import RolloutPool

    tasks, sampling = _tasks()[::2], SamplingParams(seed=5)
    limits = EpisodeLimits(max_turns=20, timeout_s=60.0)
    local_pool = RolloutPool(make_policy("oracle"), slots=4, env_factory=make_env, limits=limits)
    ray_pool = RayRolloutPool(functools.partial(make_policy, "oracle"), RayWorkers(ray=cluster), slots=4,
                              limits=limits)
    try:
        here = asyncio.run(local_pool.run(tasks, 3, sampling))
        there = asyncio.run(ray_pool.run(tasks, 3, sampling))
        again = asyncio.run(ray_pool.run(tasks[:2], 2, sampling))  # the workers stay for the next step
    finally:
        local_pool.close()
        ray_pool.close()

    def content(episodes: list[Any]) -> list[tuple[Any, ...]]:
        return [(e.task_id, e.sample_index, e.reward, e.sampling["seed"], e.final_answer) for e in episodes]

    assert content(there) == content(here) and len(here) == 24
    assert [(e.task_id, e.sample_index) for e in again] == [(t.id, i) for t in tasks[:2] for i in range(2)]
