"""Training through an agent harness: `engine.name: harness` makes every GRPO episode a run of the harness command
against the trainer's current weights, and `rft.settings.harness` samples RFT's episodes the same way. The
sampler's log-probs recorded through the endpoint are the ones the trainer recomputes."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from test_harness_support import AGENTS_HARNESS, LOOP_HARNESS, booking_tasks
from test_rollout_support import subprocess_env
from toolgym.config.base import ConfigError
from toolgym.config.grpo import GRPOConfig
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR
from toolgym.schema.jsonl import write_jsonl

# The task's own verifier (run in its sandbox): an even-length final answer passes, so the default model's sampled
# episodes differ in reward within a group and GRPO has something to update on.
PARITY_VERIFIER = ("def validate_task(env, final_answer=None):\n"
                   "    return 1 if final_answer and len(final_answer) % 2 == 0 else 0\n")
# The HF engine's log-probs match the trainer's fp32 recomputation to 1e-4 per token (tests/test_policy_hf.py).
HF_TOLERANCE = 1e-4


def parity_booking_tasks(path: Path, count: int) -> Path:
    tasks = [t.model_copy(update={"checks": [], "verifier_code": PARITY_VERIFIER}) for t in booking_tasks(count)]
    write_jsonl(path, tasks)
    return path


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_harness_engine_settings_are_checked() -> None:
    base = {"tasks": "t", "model": "m", "out": "o"}
    with pytest.raises(ValueError, match=r"needs engine\.command"):
        GRPOConfig.model_validate({**base, "engine": {"name": "harness"}})
    with pytest.raises(ValueError, match=r"read only by engine\.name harness"):
        GRPOConfig.model_validate({**base, "engine": {"name": "hf", "command": "python agent.py"}})
    from toolgym.integrations.trl_grpo.settings import check_trl_config

    config = GRPOConfig.model_validate({**base, "backend": "trl", "engine": {"name": "harness", "command": "x"}})
    with pytest.raises(ConfigError, match=r"engine\.name"):
        check_trl_config(config)
    from toolgym.policy.engines import build_policy, parse_policy_spec

    with pytest.raises(ValueError, match="toolgym harness run"):
        build_policy(parse_policy_spec("harness"))


@pytest.mark.slow
def test_grpo_trains_on_episodes_the_agents_sdk_harness_played(tmp_path: Path) -> None:
    tasks = parity_booking_tasks(tmp_path / "tasks.jsonl", 2)
    out = tmp_path / "run"
    config = {"tasks": str(tasks), "model": str(DEFAULT_MODEL_DIR), "out": str(out), "steps": 2, "tasks_per_step": 2,
              "samples_per_task": 2, "threads": 1, "seed": 0, "save_rollouts": True,
              "sampling": {"max_new_tokens": 32, "max_turns": 3, "temperature": 1.0, "timeout_s": 300},
              "curriculum": {"enabled": False}, "eval": {"enabled": False},
              "loss": {"mismatch": {"kind": "tis", "cap": 100.0}},
              "optim": {"lr": 1e-4, "precision": "fp32"}, "engine": {"device": "cpu"}}
    path = tmp_path / "grpo.json"
    path.write_text(json.dumps(config))
    done = subprocess.run([sys.executable, "-m", "toolgym.cli.main", "train", "grpo", "--config", str(path),
                           "--set", "engine.name=harness", "--set", f"engine.command={AGENTS_HARNESS}"],
                          capture_output=True, text=True, timeout=1200, env=subprocess_env(), check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [r for r in read_rows(out / "metrics.jsonl") if r.get("kind", "train") == "train"]
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        episodes = read_rows(out / "rollouts" / f"step-{row['step']}.jsonl")
        assert len(episodes) == 4 and all(e["status"] != "error" for e in episodes), [e.get("error") for e in episodes]
        # every episode: the harness's requests, recorded as exact token samples with the sampler's log-probs
        assert all(e["token_samples"] and e["token_samples"][0]["sampler_logprobs"] for e in episodes)
    print("per step (groups with signal, mean |log ratio|, max ratio):",
          [(r["groups_with_signal"], r.get("mismatch_abs_log_ratio"), r.get("mismatch_max_ratio")) for r in rows])
    trained = [r for r in rows if r.get("groups_with_signal")]
    assert trained, "no group had reward variance: nothing was trained"
    for row in trained:
        # the trainer's recomputation of what the endpoint sampled: within the HF engine's own tolerance
        assert row["mismatch_abs_log_ratio"] <= HF_TOLERANCE
        assert row["mismatch_max_ratio"] <= math.exp(HF_TOLERANCE)
        assert row["updated"]


@pytest.mark.slow
def test_rft_samples_its_episodes_through_the_harness(tmp_path: Path) -> None:
    from toolgym.config.train import RFTConfig
    from toolgym.train.rft import run_rft

    tasks = tmp_path / "tasks.jsonl"
    write_jsonl(tasks, booking_tasks(2))
    config = RFTConfig(tasks=str(tasks), model=str(DEFAULT_MODEL_DIR), out=str(tmp_path / "rft"), policy="oracle",
                       harness=LOOP_HARNESS, samples_per_task=1, concurrency=2, min_reward=1.0, timeout_s=120,
                       sft={"max_steps": 1, "batch_tokens": 4096, "eval_fraction": 0.0})
    result = run_rft(config)
    rows = read_rows(tmp_path / "rft" / "rollout" / "results.jsonl")
    assert len(rows) == 2 and all(r["reward"] == 1.0 and r["harness"]["command"] == LOOP_HARNESS for r in rows)
    assert sum(result.selection.kept.values()) == 2
