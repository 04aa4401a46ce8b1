"""GRPO with its episodes sampled on Ray workers (`rollout_workers.ray`): the same episodes and losses as the
trainer's own engine, every episode sampled by the current weights, and a worker that missed new weights
stopping the run. One local Ray cluster (2 CPUs, loopback) is shared by the module."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Read when ray is imported: a local cluster binds to loopback, never to the machine's network address.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import test_rollout_support
from test_grpo_support import read_jsonl, run_toy, toy_config
from toolgym.config.base import ConfigError
from toolgym.train.grpo.config import GRPOConfig

LOSS_FIELDS = ("loss", "entropy", "ratio_mean", "grad_norm", "clip_fraction", "sampler_logprob_gap")
# Two steps of the tiny model, one episode per generate call on both sides (batching cannot change samples).
COMMON: dict[str, Any] = {"steps": 2, "eval": {"enabled": False}, "save_rollouts": True,
                          "engine": {"max_batch_size": 1}, "checkpoint": {"save_every": 2}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'toolgym[scale]')")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024 * 1024, log_to_driver=False)
    # The workers cannot import the tests' support module (the toy app's env factory): ship it by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[test_rollout_support.__name__])
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _ray_config(root: Path, out: Path, cluster: str, **overrides: Any) -> GRPOConfig:
    workers = {"ray": cluster, "ray_workers": 2, "ray_worker_cpus": 1, **overrides.pop("rollout_workers", {})}
    return toy_config(root, out, **COMMON, rollout_workers=workers, **overrides)


def _episodes(out: Path, step: int) -> list[dict[str, Any]]:
    return read_jsonl(out / "rollouts" / f"step-{step}.jsonl")


def _sampled(row: dict[str, Any]) -> tuple[Any, ...]:
    turns = row["episode"]["token_turns"]
    return (row["task_id"], row["sample_index"], row["reward"], row["status"],
            [t["prompt_ids"] for t in turns], [t["completion_ids"] for t in turns])


def _logprobs(row: dict[str, Any]) -> list[float]:
    return [p for t in row["episode"]["token_turns"] for p in t["logprobs"]]


@pytest.mark.ray
@pytest.mark.parametrize("lora", [False, True], ids=["full-weights", "lora"])
def test_ray_sampling_trains_on_the_episodes_the_local_engine_samples(cluster: str, tmp_path: Path,
                                                                     lora: bool) -> None:
    from transformers import set_seed

    from toolgym.train.grpo.model_setup import load_model_for_grpo
    from toolgym.train.grpo.ray_sampling import LOADS_FILE, WEIGHTS_DIR, weights_digest

    settings: dict[str, Any] = {"lora": {"enabled": True, "rank": 4, "alpha": 8}, "optim": {"lr": 3e-2}} if lora else {}
    local = toy_config(tmp_path / "data", tmp_path / "local", **COMMON, **settings)
    on_ray = _ray_config(tmp_path / "data", tmp_path / "ray", cluster, rollout_workers={"verify_weights": True},
                         **settings)
    assert on_ray.fingerprint() == local.fingerprint()  # where episodes are sampled does not change the run
    run_toy(local)
    run_toy(on_ray)

    for step in (1, 2):
        here, there = _episodes(Path(local.out), step), _episodes(Path(on_ray.out), step)
        assert len(there) == len(here) == 6
        assert [_sampled(r) for r in there] == [_sampled(r) for r in here]
        gaps = [abs(a - b) for r, s in zip(there, here, strict=True) for a, b in zip(_logprobs(r), _logprobs(s),
                                                                                      strict=True)]
        assert gaps and max(gaps) < 1e-5
        # every episode was sampled by the weights after step-1 updates, and says so
        assert {r["policy_version"] for r in there} == {step - 1}
        assert {r["checkpoint"] for r in there} == {f"{Path(on_ray.out).resolve()}@step-{step - 1}"}

    local_rows = [r for r in read_jsonl(Path(local.out) / "metrics.jsonl") if r.get("kind") == "train"]
    ray_rows = [r for r in read_jsonl(Path(on_ray.out) / "metrics.jsonl") if r.get("kind") == "train"]
    assert len(ray_rows) == len(local_rows) == 2 and all(r["updated"] for r in ray_rows)
    for mine, theirs in zip(ray_rows, local_rows, strict=True):
        for name in LOSS_FIELDS:
            if theirs[name] is None:
                assert mine[name] is None, name
            else:
                assert mine[name] == pytest.approx(theirs[name], abs=1e-5), name

    # the workers loaded the trainer's weights before each step: the initial model's, then step 1's
    loads = read_jsonl(Path(on_ray.out) / WEIGHTS_DIR / LOADS_FILE)
    assert [row["version"] for row in loads] == [0, 1]
    for row in loads:
        assert row["worker_digests"] == [row["digest"], row["digest"]]
    set_seed(on_ray.seed)  # as the trainer does before it loads the model (LoRA's initial adapter)
    assert loads[0]["digest"] == weights_digest(load_model_for_grpo(on_ray))
    assert loads[1]["digest"] != loads[0]["digest"]  # step 1 changed the weights the workers sample with
    assert sorted(p.name for p in (Path(on_ray.out) / WEIGHTS_DIR).iterdir()) == [LOADS_FILE, "version-1"]
    assert [r["sync_version"] for r in ray_rows] == [0, 1]  # each step's metrics row records its weight load
    assert all(r["sync_seconds"] >= 0 for r in ray_rows) and "sync_version" not in local_rows[0]


@pytest.mark.ray
def test_a_worker_that_missed_the_new_weights_stops_the_run(cluster: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from toolgym.rollout.ray_pool import RayWorkerPool
    from toolgym.train.grpo.ray_sampling import StaleWeightsError

    load = RayWorkerPool.load

    def load_but_skip_one(self: RayWorkerPool, version: int, path: str, label: str) -> None:
        workers = self.workers
        if version > 0:  # the first worker keeps the initial weights
            self.workers = workers[1:]
        try:
            load(self, version, path, label)
        finally:
            self.workers = workers

    monkeypatch.setattr(RayWorkerPool, "load", load_but_skip_one)
    config = _ray_config(tmp_path / "data", tmp_path / "run", cluster)
    with pytest.raises(StaleWeightsError, match=r"sampled by other weights than the current .*@step-1"):
        run_toy(config)
    assert len(_episodes(Path(config.out), 1)) == 6  # step 1 (every worker on the initial weights) trained
    assert not (Path(config.out) / "rollouts" / "step-2.jsonl").exists()


def test_ray_sampling_refuses_what_it_does_not_support(tmp_path: Path) -> None:
    workers = {"ray": "local"}
    with pytest.raises(ConfigError, match=r"engine\.name: vllm is not supported"):
        toy_config(tmp_path, tmp_path / "a", rollout_workers=workers, engine={"name": "vllm"})
    with pytest.raises(ConfigError, match=r"off_policy\.enabled is not supported"):
        toy_config(tmp_path, tmp_path / "b", rollout_workers=workers, off_policy={"enabled": True},
                   loss={"mismatch": {"kind": "tis"}})
    assert toy_config(tmp_path, tmp_path / "c", rollout_workers=workers).fingerprint() == \
        toy_config(tmp_path, tmp_path / "c").fingerprint()
