"""GRPO through TRL's GRPOTrainer (`backend: trl`): toolgym's episodes and verifier rewards drive a real TRL update
on CPU with the shipped default model; settings TRL cannot honour are refused by name; the settings table in
docs/launch.md is the code's; the 8B config's dry run needs no GPU; 1 and 2 processes train alike."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from test_rollout_support import subprocess_env
from test_trl_grpo_support import read_jsonl, trl_config
from toolgym.config.base import ConfigError
from toolgym.config.grpo import GRPOConfig
from toolgym.integrations.trl_grpo.settings import MAPPING, check_trl_config, mapping_table, trl_arguments
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR

ROOT = Path(__file__).resolve().parents[1]
TOOLGYM_FIELDS = ("reward_mean", "success_rate", "families", "groups_with_signal", "episodes_errored",
                  "scored_episodes", "tool_calls_per_episode", "loss", "grad_norm", "kl", "seconds_rollout")


def leaf_settings(model: type, prefix: str = "") -> list[str]:
    from pydantic import BaseModel

    names = []
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            names += leaf_settings(kind, f"{prefix}{name}.")
        else:
            names.append(prefix + name)
    return names


# -- the mapping (no TRL run) ----------------------------------------------------------------------


def test_the_docs_table_is_the_mapping_and_covers_every_setting() -> None:
    text = (ROOT / "docs" / "launch.md").read_text()
    table = re.search(r"<!-- trl-mapping:start -->\n(.*?)\n<!-- trl-mapping:end -->", text, re.S)
    assert table is not None and table.group(1) == mapping_table()
    named = {name.strip() for setting, _ in MAPPING for name in setting.split(",")}
    sections = {name[:-2] for name in named if name.endswith(".*")}
    missing = [s for s in leaf_settings(GRPOConfig) if s not in named and s.split(".")[0] not in sections
               and ".".join(s.split(".")[:2]) not in sections]
    assert missing == []


def test_settings_become_their_grpo_config_fields(tmp_path: Path) -> None:
    config = trl_config(tmp_path, tmp_path / "run", steps=5, loss={"clip_low": 0.1, "clip_high": 0.3, "kl_coef": 0.02,
                                                                   "aggregation": "sequence_mean", "objective": "sequence"},
                        optim={"lr": 3e-5, "update_epochs": 2, "batch_tokens": 8192, "precision": "fp32"},
                        sampling={"temperature": 0.7, "max_context_tokens": 4096},
                        advantage={"std_normalize": False}, checkpoint={"save_every": 3, "keep": 4})
    args = trl_arguments(config, processes=2, device="cpu")
    assert (args["epsilon"], args["epsilon_high"], args["beta"]) == (0.1, 0.3, 0.02)
    assert args["loss_type"] == "grpo" and args["importance_sampling_level"] == "sequence"
    assert args["scale_rewards"] == "none" and args["temperature"] == 0.7 and args["learning_rate"] == 3e-5
    assert args["num_iterations"] == 2 and args["max_steps"] == 10 and args["save_steps"] == 6
    assert args["save_total_limit"] == 4 and args["num_generations"] == 4
    # 16 episodes a step over 2 processes: 8 each, 2 per micro-batch (8192 // 4096), 4 accumulation steps
    assert (args["per_device_train_batch_size"], args["gradient_accumulation_steps"]) == (2, 4)
    with pytest.raises(ConfigError, match="must divide by the 3"):
        trl_arguments(config, processes=3, device="cpu")


def test_settings_trl_cannot_honour_are_refused_by_name(tmp_path: Path) -> None:
    config = trl_config(tmp_path, tmp_path / "run",
                        advantage={"baseline": "leave_one_out"}, eval={"enabled": True},
                        experimental={"positive_only": True}, optim={"mini_batches": 2, "precision": "fp32"})
    with pytest.raises(ConfigError) as caught:
        check_trl_config(config)
    for name in ("advantage.baseline", "eval.enabled", "experimental.positive_only", "optim.mini_batches"):
        assert name in str(caught.value)
    check_trl_config(trl_config(tmp_path, tmp_path / "run"))  # the test config itself maps


def test_the_curriculum_picks_each_group_s_task_on_every_rank_alike(tmp_path: Path) -> None:
    from toolgym.integrations.trl_grpo.rollout import task_prompt
    from toolgym.integrations.trl_grpo.task_draw import TaskDraw
    from toolgym.schema import Task
    from toolgym.schema.jsonl import read_models

    config = trl_config(tmp_path, tmp_path / "run", tasks_per_step=2, samples_per_task=3,
                        curriculum={"enabled": True, "min_attempts": 3, "easy_above": 0.5, "easy_weight": 1e-6})
    tasks = {t.id: t for t in read_models(Path(config.tasks), Task)}
    draw = TaskDraw(config, tasks, tmp_path / "trl")
    # TRL's layout: 2 groups of 3 copies, dealt to 2 ranks in contiguous slices of 3; its prompts are uniform draws
    trl_prompts = [task_prompt(tasks["toy/parity/0"])] * 3 + [task_prompt(tasks["toy/parity/1"])] * 3
    played = draw.tasks_for(trl_prompts[:3], 0, 0) + draw.tasks_for(trl_prompts[3:], 0, 3)
    first, second = draw.step_tasks(0)
    assert [t.id for t in played] == [first] * 3 + [second] * 3 and first != second
    # a group solved every time becomes easy: its weight drops on every rank that recorded the same groups
    from toolgym.algorithms.advantages import build_groups
    from toolgym.schema import Episode
    from toolgym.schema.checks import Verdict

    solved = [Episode(task_id=first, env="toy", verdict=Verdict(reward=1.0, partial_score=1.0)) for _ in range(3)]
    groups, _ = build_groups(solved, lambda env: 0.0)
    draw.record(0, groups, main=True)
    assert draw.curriculum.weight(first) == pytest.approx(1e-6) and draw.curriculum.weight(second) == 1.0
    resumed = TaskDraw(config, tasks, tmp_path / "trl")
    resumed.resume(1)  # the state after step 1, as a resumed run reads it
    assert resumed.step_tasks(1) == draw.step_tasks(1) and resumed.curriculum.to_dict() == draw.curriculum.to_dict()
    with pytest.raises(FileNotFoundError, match=r"step-2\.json"):
        resumed.resume(2)
    with pytest.raises(RuntimeError, match="consecutive copies"):
        draw.tasks_for([task_prompt(tasks["toy/parity/0"]), task_prompt(tasks["toy/parity/1"])], 0, 0)


def test_server_mode_samples_each_rank_s_turns_through_the_server_s_completions(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from toolgym.integrations.trl_grpo.rollout import trl_vllm_policy
    from toolgym.policy.openai_policy import OpenAIPolicy

    config = trl_config(tmp_path, tmp_path / "run", engine={"name": "vllm", "device": "cpu"},
                        trl={"vllm_mode": "server", "vllm_server_host": "10.0.0.5", "vllm_server_port": 8123})
    args = SimpleNamespace(**trl_arguments(config, processes=1, device="cpu"), vllm_server_base_url=None)
    policy = trl_vllm_policy(SimpleNamespace(args=args), config)
    # token ids in, ids and log-probs out, rendered here with the model's own tokenizer
    assert isinstance(policy, OpenAIPolicy) and policy.mode == "token" and policy.tokenizer is not None
    assert policy.base_url == "http://10.0.0.5:8123/v1" and policy.model == config.model
    args.vllm_server_base_url = "http://serve:9000/"
    assert trl_vllm_policy(SimpleNamespace(args=args), config).base_url == "http://serve:9000/v1"


def test_the_cli_refuses_an_unmapped_setting_before_loading_anything(tmp_path: Path) -> None:
    config = trl_config(tmp_path, tmp_path / "run")
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config.model_dump(mode="json")))
    done = subprocess.run([sys.executable, "-m", "toolgym.cli.main", "train", "grpo", "--config", str(path),
                           "--set", "off_policy.enabled=true", "--set", "loss.mismatch.kind=tis"],
                          capture_output=True, text=True, timeout=120, env=subprocess_env(), check=False)
    assert done.returncode != 0 and "off_policy.enabled" in done.stdout + done.stderr
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_the_8b_trl_config_dry_runs_without_gpus_and_prints_the_trl_settings() -> None:
    done = subprocess.run([sys.executable, "-m", "toolgym.cli.main", "train", "grpo", "--config",
                           "configs/launch/grpo_qwen3_8b_trl.yaml", "--dry-run"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=subprocess_env(), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    for line in ("use_vllm: True", "vllm_mode: server", "loss_type: dapo", "epsilon_high: 0.28", "beta: 0.001",
                 "num_generations: 4", "vllm_importance_sampling_mode: token_truncate", "memory plan: qwen3"):
        assert line in done.stdout
    assert "fits:" in done.stdout
    assert "vLLM (gpu_memory_utilization" not in done.stdout  # server mode: vLLM serves from GPUs of its own
    colocated = subprocess.run([sys.executable, "-m", "toolgym.cli.main", "train", "grpo", "--config",
                                "configs/launch/grpo_qwen3_8b_trl.yaml", "--dry-run", "--set", "trl.vllm_mode=colocate"],
                               cwd=ROOT, capture_output=True, text=True, timeout=120, env=subprocess_env(), check=False)
    assert colocated.returncode == 0 and "vLLM (gpu_memory_utilization" in colocated.stdout  # its share on each card
    probe = subprocess.run([sys.executable, "-c", "import sys; from toolgym.cli.train_grpo import print_trl_settings; "
                            "from toolgym.config.loading import load_grpo_config; "
                            "print_trl_settings(load_grpo_config('configs/launch/grpo_qwen3_8b_trl.yaml')); "
                            "print('TRL-IMPORTED' if 'trl' in sys.modules else 'NO-TRL')"],
                           cwd=ROOT, capture_output=True, text=True, timeout=120, env=subprocess_env(), check=False)
    assert probe.returncode == 0 and "NO-TRL" in probe.stdout


# -- real TRL runs ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_trl_trains_on_toolgym_episodes_scored_by_its_verifier(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    from test_rollout_support import env_factory
    from toolgym.integrations.trl_grpo.run import run_trl_grpo

    out = tmp_path / "run"
    result = run_trl_grpo(trl_config(tmp_path, out), env_factory=env_factory)
    rows = read_jsonl(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2] and all(r["backend"] == "trl" for r in rows)
    for row in rows:
        assert all(key in row for key in TOOLGYM_FIELDS)
        episodes = read_jsonl(out / "rollouts" / f"step-{row['step']}.jsonl")
        assert len(episodes) == row["episodes"] == 16
        scored = [e for e in episodes if e["status"] != "error"]
        # the infra-error task: its 4 episodes counted, never scored (TRL's reward mean leaves them out too)
        assert row["episodes_errored"] == 4 and {e["task_id"] for e in episodes if e["status"] == "error"} == {
            "nowhere/list/0"}
        shaped = [e["reward"] + 0.5 * e["partial_score"] for e in scored]
        assert row["reward_mean"] == pytest.approx(sum(shaped) / len(shaped))
        assert row["trl_reward_mean"] == pytest.approx(row["reward_mean"], abs=1e-6)  # what TRL trained on
        assert set(row["families"]) == {"toy", "nowhere"}
    assert any(r["groups_with_signal"] > 0 for r in rows) and any(r["grad_norm"] > 0 for r in rows)
    before = load_file(str(DEFAULT_MODEL_DIR / "model.safetensors"))
    after = load_file(str(Path(result.final_dir) / "model.safetensors"))
    changed = [k for k in after if k in before and not torch.equal(before[k], after[k])]
    assert len(changed) > len(after) // 2
    AutoModelForCausalLM.from_pretrained(result.final_dir)  # final/ is a model transformers loads
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["backend"] == "trl" and "checkpoint" in manifest["resume"]
    assert manifest["trl_arguments"]["num_generations"] == 4


def _launch_trl(processes: int, config_path: Path) -> subprocess.CompletedProcess[str]:
    from test_rollout_support import free_port

    script = str(ROOT / "tests" / "test_trl_grpo_support.py")
    if processes == 1:
        command = [sys.executable, script, str(config_path)]
    else:
        command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes",
                   str(processes), "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                   "--main_process_port", str(free_port()), script, str(config_path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, env=subprocess_env(), check=False)


@pytest.mark.slow
@pytest.mark.distributed
def test_two_processes_train_the_trl_run_like_one(tmp_path: Path) -> None:
    losses = {}
    for processes in (1, 2):
        out = tmp_path / f"p{processes}"
        config = trl_config(tmp_path / f"d{processes}", out)
        path = tmp_path / f"c{processes}.json"
        path.write_text(json.dumps(config.model_dump(mode="json")))
        done = _launch_trl(processes, path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        rows = read_jsonl(out / "metrics.jsonl")
        assert [r["step"] for r in rows] == [1, 2] and all(r["episodes"] == 16 for r in rows)
        losses[processes] = [r["loss"] for r in rows]
    print("per-step loss, 1 process:", losses[1], "2 processes:", losses[2])
    # the same episodes (TRL deals each rank its slice of the batch; seeds follow the position in it), the same
    # loss: what differs is float summation order across the gloo all-reduce
    assert losses[2] == pytest.approx(losses[1], rel=1e-5, abs=1e-7)
    assert any(abs(loss) > 1e-4 for loss in losses[1])  # a real update, not two zeros


@pytest.mark.slow
def test_a_killed_trl_run_resumes_from_trl_s_checkpoint(tmp_path: Path) -> None:
    import signal
    import time

    out = tmp_path / "run"
    config = trl_config(tmp_path, out, checkpoint={"save_every": 1, "keep": 2}, tasks_per_step=2,
                        curriculum={"enabled": True, "min_attempts": 4})
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config.model_dump(mode="json")))
    script = str(ROOT / "tests" / "test_trl_grpo_support.py")
    process = subprocess.Popen([sys.executable, script, str(path)], env=subprocess_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while not (out / "trl" / "checkpoint-1" / "trainer_state.json").is_file() and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done = _launch_trl(1, path)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["result"]["steps"] == 2
    assert manifest["resumed_from_step"] >= 1  # TRL's checkpoint, not a fresh start
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2]  # no row twice, none missing
    # the curriculum resumed from its state after step 1: step 2 played the tasks that state draws, whole groups
    from toolgym.integrations.trl_grpo.task_draw import TaskDraw
    from toolgym.schema import Task
    from toolgym.schema.jsonl import read_models

    draw = TaskDraw(config, {t.id: t for t in read_models(Path(config.tasks), Task)}, out / "trl")
    draw.resume(1)
    assert sum(draw.curriculum.groups.values()) == 2  # step 1's two groups, recorded once
    played = [e["task_id"] for e in read_jsonl(out / "rollouts" / "step-2.jsonl")]
    expected = draw.step_tasks(1)
    assert played == [expected[0]] * 4 + [expected[1]] * 4


@pytest.mark.slow
def test_update_epochs_are_trl_iterations_within_one_metrics_row(tmp_path: Path) -> None:
    from test_rollout_support import env_factory
    from toolgym.integrations.trl_grpo.run import run_trl_grpo

    out = tmp_path / "run"
    config = trl_config(tmp_path, out, save_rollouts=False,
                        optim={"lr": 1e-4, "precision": "fp32", "update_epochs": 2, "batch_tokens": 8192})
    assert run_trl_grpo(config, env_factory=env_factory).steps == 2
    rows = read_jsonl(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]  # one row per sampled batch, not per optimizer step
    for row in rows:
        assert len(row["losses"]) == 2 and row["loss"] == pytest.approx(sum(row["losses"]) / 2)
        assert row["trl_reward_mean"] == pytest.approx(row["reward_mean"], abs=1e-6)
    assert rows[0]["losses"][0] != rows[0]["losses"][1]  # the second pass sees the weights the first one moved
