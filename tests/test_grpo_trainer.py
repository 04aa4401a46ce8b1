"""GRPO on the toy app with the tiny model: metrics, honest groups, learning, LoRA + KL, resume after SIGKILL."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from test_grpo_support import (
    first_token_logprob,
    first_token_parity,
    read_jsonl,
    run_toy,
    toy_config,
    toy_dataset,
)
from test_rollout_support import broken_tasks, subprocess_env
from toolgym.pipeline.config import load_pipeline_config
from toolgym.schema import Episode
from toolgym.schema.jsonl import write_jsonl
from toolgym.train.grpo.config import ConfigError, grpo_config_from_dict, load_grpo_config
from toolgym.train.grpo.trainer import GRPOError

pytestmark = pytest.mark.slow

STEP_METRICS = (
    "reward_mean", "reward_std", "success_rate", "partial_score_mean", "groups_with_signal", "groups_anchored",
    "tool_calls_per_episode",
    "format_errors_per_episode", "turns_mean", "response_tokens_mean", "kl", "entropy", "sampled_token_nll",
    "clip_fraction", "grad_norm",
    "seconds_rollout", "seconds_update", "episodes_errored",
)


def train_rows(out: Path) -> list[dict]:
    return [r for r in read_jsonl(out / "metrics.jsonl") if r["kind"] == "train"]


def test_a_run_writes_metrics_evals_best_and_counts_errored_episodes(tmp_path: Path) -> None:
    config = toy_config(tmp_path, tmp_path / "run", tasks=str(toy_dataset(tmp_path / "data", with_broken=True)),
                        tasks_per_step=8, steps=2, loss={"kl_coef": 0.01})
    result = run_toy(config)
    rows = train_rows(tmp_path / "run")
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert all(key in row for key in STEP_METRICS)
        # every train task each step (8 tasks: 6 toy + 2 broken), 3 episodes each
        assert row["episodes"] == 24 and row["groups"] == 8
        # the crashing verifier and the missing environment: 6 errored episodes, their groups too small
        assert row["episodes_errored"] == 6 and row["groups_too_small"] == 2
        assert row["scored_episodes"] == 18
        assert row["groups_with_signal"] + row["groups_zero_variance"] + row["groups_too_small"] == 8
        assert row["kl"] is not None and row["kl"] >= 0
        families = row["families"]  # per env/family: the step's totals, split
        assert set(families) == {"toy", "nowhere"}
        assert sum(f["episodes"] for f in families.values()) == row["scored_episodes"]
        assert sum(f["successes"] for f in families.values()) == row["successes"]
        assert sum(f["groups_with_signal"] for f in families.values()) == row["groups_with_signal"]
        assert families["nowhere"] == {"episodes": 0, "successes": 0, "groups_with_signal": 0}
    assert rows[0]["kl"] == pytest.approx(0.0, abs=1e-6)  # before any update the policy is the reference
    assert rows[1]["kl"] > 0
    # evals at steps 0 and 2, in the sweep layout, with the best step exported per split
    evals = tmp_path / "run" / "evals"
    assert sorted(p.name for p in evals.iterdir()) == ["step-0", "step-2"]
    assert (evals / "step-2" / "greedy" / "results.jsonl").is_file()
    assert set(result.best) == {"heldout_tasks"}
    assert (Path(result.best["heldout_tasks"]["dir"]) / "best.json").is_file()
    assert (Path(result.final_dir) / "config.json").is_file()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["kind"] == "grpo" and manifest["status"] == "complete"


@pytest.mark.parametrize("ratio_level", ["token", "sequence"])
def test_grpo_raises_the_reward_it_is_given(tmp_path: Path, ratio_level: str) -> None:
    """The custom reward is the log-prob of the first sampled token: GRPO (and GSPO) must raise it well above
    the start's.

    One sampled token per episode, so every trained token is the one the reward judges.
    """
    config = toy_config(tmp_path, tmp_path / "run", steps=12, tasks_per_step=3, samples_per_task=6,
                        sampling={"max_new_tokens": 1}, optim={"lr": 5e-2}, eval={"enabled": False},
                        checkpoint={"save_every": 100}, loss={"ratio_level": ratio_level})
    run_toy(config, reward_fn=first_token_logprob)
    rows = train_rows(tmp_path / "run")
    rewards = [r["reward_mean"] for r in rows]
    first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
    assert last > first + 1.0, rewards  # nats: the first token became far more likely
    assert rows[-1]["sampled_token_nll"] < rows[0]["sampled_token_nll"] - 1.0  # the sampler sharpened


def test_update_epochs_pass_over_each_rollout_batch_again(tmp_path: Path) -> None:
    """update_epochs 3: three optimizer steps per updated step; passes after the first are off-policy."""
    ratios: dict[int, list[float]] = {}
    for epochs in (1, 3):
        out = tmp_path / f"run{epochs}"
        config = toy_config(tmp_path / "data", out, steps=3, samples_per_task=4, optim={"lr": 5e-2, "update_epochs": epochs},
                            eval={"enabled": False}, checkpoint={"save_every": 100})
        run_toy(config)
        updated = [r for r in train_rows(out) if r["updated"]]
        assert updated and all(r["optimizer_steps"] == epochs for r in updated)
        ratios[epochs] = [r["ratio_mean"] for r in updated]
    assert ratios[1] == pytest.approx([1.0] * len(ratios[1]), abs=1e-5)  # one on-policy pass: ratio 1
    assert any(abs(r - 1.0) > 1e-3 for r in ratios[3])  # later passes see the moved policy


def parity_on_second_copies(episode: Episode) -> float:
    """first_token_parity on the toy tasks' second copies (ids ending /1); a constant 0 elsewhere, so their
    groups never carry signal."""
    return first_token_parity(episode) if episode.task_id.endswith("/1") else 0.0


def test_dynamic_sampling_draws_fresh_tasks_until_enough_groups_carry_signal(tmp_path: Path) -> None:
    """DAPO's dynamic sampling: rounds of fresh tasks (never one drawn twice in a step) until tasks_per_step
    groups carry signal or max_rounds ran out; off, a step is one round."""
    rounds_seen: dict[bool, list[int]] = {}
    for enabled in (False, True):
        out = tmp_path / f"run-{enabled}"
        config = toy_config(tmp_path / "data", out, steps=4, tasks_per_step=2, samples_per_task=4,
                            dynamic_sampling={"enabled": enabled, "max_rounds": 3}, save_rollouts=True,
                            eval={"enabled": False}, checkpoint={"save_every": 100})
        run_toy(config, reward_fn=parity_on_second_copies)
        rows = train_rows(out)
        for row in rows:
            rounds = row["sampling_rounds"]
            assert row["episodes"] == rounds * 2 * 4 and row["groups"] == rounds * 2
            drawn = [r["task_id"] for r in read_jsonl(out / "rollouts" / f"step-{row['step']}.jsonl")]
            assert len(set(drawn)) == rounds * 2  # fresh tasks each round
            if enabled and rounds < 3:
                assert row["groups_with_signal"] >= 2  # stopped early only with enough signal
        rounds_seen[enabled] = [r["sampling_rounds"] for r in rows]
    assert rounds_seen[False] == [1, 1, 1, 1]
    assert max(rounds_seen[True]) > 1, rounds_seen  # half the tasks never carry signal: some step sampled again


def test_new_settings_left_off_keep_the_fingerprint_of_earlier_runs(tmp_path: Path) -> None:
    """A run from before dynamic sampling, GSPO and the RLOO baseline existed must still resume: their "off"
    values are not part of the fingerprint; turning any on is."""
    plain = toy_config(tmp_path, tmp_path / "run")
    off = toy_config(tmp_path, tmp_path / "run", dynamic_sampling={"enabled": False, "max_rounds": 5},
                     loss={"ratio_level": "token"}, advantage={"baseline": "group_mean"})
    dynamic = toy_config(tmp_path, tmp_path / "run", dynamic_sampling={"enabled": True})
    gspo = toy_config(tmp_path, tmp_path / "run", loss={"ratio_level": "sequence"})
    rloo = toy_config(tmp_path, tmp_path / "run", advantage={"baseline": "leave_one_out"})
    assert plain.fingerprint() == off.fingerprint()
    assert len({plain.fingerprint(), dynamic.fingerprint(), gspo.fingerprint(), rloo.fingerprint()}) == 4


def test_lora_with_kl_uses_the_adapter_off_as_reference(tmp_path: Path) -> None:
    config = toy_config(tmp_path, tmp_path / "run", steps=4, samples_per_task=4,
                        lora={"enabled": True, "rank": 4, "alpha": 8}, optim={"lr": 5e-2}, loss={"kl_coef": 0.1},
                        eval={"enabled": False})
    result = run_toy(config)
    updated = [r for r in train_rows(tmp_path / "run") if r["updated"]]
    assert len(updated) >= 2
    assert updated[0]["kl"] == pytest.approx(0.0, abs=1e-6)  # a fresh LoRA adapter is a no-op (B = 0)
    assert updated[-1]["kl"] > 1e-6  # once the adapter moved, adapter-on differs from adapter-off
    final = Path(result.final_dir)
    assert (final / "adapter_config.json").is_file() and not (final / "config.json").exists()
    assert (tmp_path / "run" / "checkpoints" / "step-00000004" / "adapter" / "adapter_model.safetensors").is_file()


def test_a_killed_run_resumes_as_if_never_stopped(tmp_path: Path) -> None:
    steps = 6
    unbroken = toy_config(tmp_path / "data", tmp_path / "unbroken", steps=steps)
    run_toy(unbroken)
    killed = unbroken.model_copy(update={"out": str(tmp_path / "killed")})
    config_file = tmp_path / "killed.json"
    config_file.write_text(killed.model_dump_json())
    process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("test_grpo_support.py")),
                                str(config_file)], env=subprocess_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    metrics = tmp_path / "killed" / "metrics.jsonl"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:  # kill after step 3 is logged: mid-way between checkpoints 2 and 4
        if process.poll() is not None:
            pytest.fail(f"the run ended before it could be killed: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        if metrics.exists() and any(r.get("step") == 3 and r["kind"] == "train" for r in read_jsonl(metrics)):
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert not (tmp_path / "killed" / "final").exists()
    result = run_toy(killed)
    assert result.resumed_from_step == 2
    assert _same_rows(tmp_path / "unbroken", tmp_path / "killed")
    a = load_file(str(tmp_path / "unbroken" / "final" / "model.safetensors"))
    b = load_file(str(tmp_path / "killed" / "final" / "model.safetensors"))
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], atol=1e-6), name
    state_a = json.loads((tmp_path / "unbroken" / "checkpoints" / f"step-{steps:08d}" / "trainer_state.json").read_text())
    state_b = json.loads((tmp_path / "killed" / "checkpoints" / f"step-{steps:08d}" / "trainer_state.json").read_text())
    assert state_a["curriculum"] == state_b["curriculum"]
    assert state_a["best"].keys() == state_b["best"].keys()


def _same_rows(a: Path, b: Path) -> bool:
    """Every step's numbers match (timings aside)."""
    timing = {"elapsed_s", "cpu_s", "seconds_rollout", "seconds_update"}
    rows_a, rows_b = train_rows(a), train_rows(b)
    assert len(rows_a) == len(rows_b)
    for row_a, row_b in zip(rows_a, rows_b, strict=True):
        for key in row_a:
            if key in timing:
                continue
            if isinstance(row_a[key], float):
                assert row_b[key] == pytest.approx(row_a[key], rel=1e-5, abs=1e-7), (row_a["step"], key)
            else:
                assert row_b[key] == row_a[key], (row_a["step"], key)
    return True


def test_config_errors_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "grpo.yaml"
    path.write_text("tasks: t\nmodel: m\nout: o\nloss:\n  clip_hgh: 0.3\n")
    with pytest.raises(ConfigError, match=r"grpo.yaml: field loss.clip_hgh"):
        load_grpo_config(path)
    path.write_text("tasks: t\nmodel: m\nout: o\nsamples_per_task: 1\n")
    with pytest.raises(ConfigError, match=r"field samples_per_task"):
        load_grpo_config(path)
    path.write_text("tasks: [t\n")
    with pytest.raises(ConfigError, match=r"grpo.yaml: line"):
        load_grpo_config(path)
    path.write_text("tasks: t\nmodel: m\nout: o\ncurriculum:\n  stratify: true\n")
    with pytest.raises(ConfigError, match=r"field curriculum.*scope to 'family'"):
        load_grpo_config(path)
    path.write_text("tasks: t\nmodel: m\nout: o\nexperimental:\n  kl_quiet_episodes: 2\n")
    with pytest.raises(ConfigError, match=r"experimental.kl_quiet_episodes .*needs loss.kl_coef > 0"):
        load_grpo_config(path)
    config = grpo_config_from_dict({"tasks": "t", "model": "m", "out": "o", "engine": {"name": "vllm"}})
    with pytest.raises(ConfigError, match="vllm"):
        config.check_engine()


def test_the_gpu_config_expresses_the_seed_run() -> None:
    path = Path(__file__).resolve().parent.parent / "configs" / "qwen3_8b_gpu.yaml"
    pipeline = load_pipeline_config(path)
    for config in (pipeline.grpo_config("t", "m", "o"), load_grpo_config(path, tasks="t", model="m", out="o")):
        assert config.samples_per_task == 4
        assert config.optim.lr == 1e-6
        assert config.loss.kl_coef == 0.001
        assert (config.sampling.temperature, config.sampling.top_p) == (0.9, 0.95)
        assert config.sampling.stop == ["</tool_call>"]
        assert config.sampling.max_turns == 50
        assert config.engine.rope_scaling == {"rope_type": "yarn", "factor": 2.0,
                                              "original_max_position_embeddings": 32768}
        assert config.engine.max_position_embeddings == 65536 == config.sampling.max_context_tokens
        assert config.engine.name == "vllm"


def test_yarn_rope_scaling_reaches_the_loaded_model(tmp_path: Path) -> None:
    from toolgym.train.grpo.trainer import load_model_for_grpo

    config = toy_config(tmp_path, tmp_path / "run", engine={
        "rope_scaling": {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4096},
        "max_position_embeddings": 8192})
    model = load_model_for_grpo(config)
    assert model.config.max_position_embeddings == 8192
    assert model.config.rope_parameters["rope_type"] == "yarn" and model.config.rope_parameters["factor"] == 2.0


def test_grpo_runs_after_an_earlier_stage_used_another_precision(tmp_path: Path) -> None:
    """The pipeline runs SFT then GRPO in one process; accelerate's process-wide state must not block GRPO."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state()  # as in a fresh process …
    Accelerator(cpu=True, mixed_precision="bf16")  # … where an SFT stage with precision auto ran first
    config = toy_config(tmp_path, tmp_path / "run", steps=1, eval={"enabled": False})  # fp32
    result = run_toy(config)
    assert result.steps == 1


def test_the_cli_reports_a_bad_config_clearly(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toolgym.cli.main import app

    missing = CliRunner().invoke(app, ["train", "grpo", "--config", str(tmp_path / "none.yaml")])
    assert missing.exit_code == 2 and "no such config file" in missing.output
    path = tmp_path / "grpo.yaml"
    path.write_text(f"tasks: {tmp_path}\nmodel: {tmp_path}\nout: {tmp_path / 'out'}\nengine:\n  name: vllm\n")
    vllm = CliRunner().invoke(app, ["train", "grpo", "--config", str(path)])
    assert vllm.exit_code == 2 and "vllm" in vllm.output


def test_a_run_whose_every_episode_errors_stops_and_says_why(tmp_path: Path) -> None:
    bad = next(t for t in broken_tasks() if "bad_verifier" in t.id)
    tasks = tmp_path / "broken.jsonl"
    write_jsonl(tasks, [bad.model_copy(update={"id": f"nowhere/list/{i}", "env": "nowhere"}) for i in range(2)])
    config = toy_config(tmp_path, tmp_path / "run", tasks=str(tasks), steps=5, eval={"enabled": False},
                        monitor={"max_all_error_steps": 2})
    with pytest.raises(GRPOError, match=r"2 steps in a row where every episode errored.*nowhere"):
        run_toy(config)
    rows = train_rows(tmp_path / "run")
    assert [r["step"] for r in rows] == [1, 2]  # both steps are in metrics.jsonl before the stop
    assert all(r["episodes_errored"] == r["episodes"] == 6 for r in rows)
    assert all("nowhere" in " ".join(r["error_examples"].values()) for r in rows)
