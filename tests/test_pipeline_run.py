"""`toolgym pipeline` end to end at toy scale: real apps, the tiny model, every stage, skip and resume rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from test_rollout_support import tiny_model_dir
from toolgym.cli.main import app
from toolgym.pipeline.config import pipeline_config_from_dict
from toolgym.pipeline.run import PipelineError, run_pipeline
from toolgym.train.grpo.config import ConfigError

pytestmark = pytest.mark.slow


def small_config(out: Path, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "out": str(out), "seed": 0, "threads": 1,
        "model": {"path": str(tiny_model_dir())},
        "tasks": {"build": {"apps": ["code_host", "mail"], "tasks_per_family": 6, "heldout_envs": ["mail"],
                            "heldout_task_fraction": 0.3, "compositions": []},
                  "families": ["code_host/comment_on_issue", "code_host/pull_request_status", "mail/send_to_contact"],
                  "train_limit": 6, "eval_limit": 2},
        "sft": {"max_steps": 3, "lr": 1e-3, "save_every": 100, "eval_fraction": 0.0},
        "rft": {"settings": {"samples_per_task": 2, "limit": 2, "max_new_tokens": 12, "max_turns": 2,
                             "sft": {"max_steps": 1}}},
        "grpo": {"settings": {"steps": 1, "tasks_per_step": 2, "samples_per_task": 2,
                              "sampling": {"max_new_tokens": 12, "max_turns": 2}, "eval": {"enabled": False}}},
        # greedy only (trials 0), as the quickstart evals: the sampled-trial path is tested in test_eval_summary
        "eval": {"settings": {"trials": 0, "max_new_tokens": 12, "max_turns": 2, "concurrency": 4}},
    }
    config.update(overrides)
    return config


def test_the_pipeline_runs_every_stage_then_skips_them(tmp_path: Path) -> None:
    run = tmp_path / "run"
    summary = run_pipeline(pipeline_config_from_dict(small_config(run)))
    statuses = {s["name"]: s["status"] for s in summary["stages"]}
    # an untrained tiny model solves nothing: RFT keeps nothing and GRPO starts from the SFT model
    assert statuses == {"tasks": "done", "validate": "done", "teacher": "done", "sft": "done",
                        "random_init": "disabled", "rft": "nothing_kept", "grpo": "done", "eval": "done"}
    assert json.loads((run / "grpo" / "manifest.json").read_text())["base_model"] == str((run / "sft" / "final").resolve())
    results = summary["results"]
    assert set(results) == {"untrained", "sft", "grpo"}  # rft left no model
    for stage in results.values():
        for split in ("heldout_tasks", "heldout_env"):
            numbers = stage[split]
            assert numbers["episodes"] == 2 == numbers["scored"] + numbers["errored"]
            assert numbers["greedy"]["episodes"] == 2 and numbers["greedy_only"]
            assert "1" in numbers["pass_at_k"]
    pairs = {(c["from"], c["to"], c["split"]) for c in summary["comparisons"]}
    assert ("untrained", "sft", "heldout_tasks") in pairs and ("sft", "grpo", "heldout_env") in pairs
    for comparison in summary["comparisons"]:  # the same 2 tasks paired: what was won and lost, and McNemar
        assert comparison["tasks_won"] + comparison["tasks_lost"] <= 2 and 0 < comparison["paired_p_value"] <= 1
        assert sum(f["won"] + f["lost"] for f in comparison["by_family"].values()) == (
            comparison["tasks_won"] + comparison["tasks_lost"])
    assert summary["acceptance"]["split"] == "heldout_tasks" and "sft_meets_min" in summary["acceptance"]
    on_disk = json.loads((run / "summary.json").read_text())
    assert on_disk["results"] == summary["results"]
    assert (run / "report.html").is_file() and (run / "report.md").is_file()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["kind"] == "pipeline" and manifest["status"] == "complete"
    assert (run / "dataset" / "tasks.jsonl").is_file() and (run / "teacher" / "sft_rows.jsonl").is_file()

    # A second run finds every output and leaves them alone.
    stamps = {p: p.stat().st_mtime_ns for p in (run / "summary.json", run / "report.html", run / "sft" / "manifest.json")}
    again = run_pipeline(pipeline_config_from_dict(small_config(run)))
    assert again["results"] == summary["results"]
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    invocation = json.loads((run / "manifest.json").read_text())["invocations"][-1]
    assert invocation["ran"] == [] and len(invocation["skipped"]) == 8

    # Changed SFT settings do not silently reuse the old SFT output.
    changed = small_config(run, sft={"max_steps": 4, "lr": 1e-3, "save_every": 100, "eval_fraction": 0.0})
    with pytest.raises(PipelineError, match=r"stage sft: .*other settings; delete sft/"):
        run_pipeline(pipeline_config_from_dict(changed))


def test_a_missing_model_or_engine_fails_before_any_work(tmp_path: Path) -> None:
    config = small_config(tmp_path / "run", model={"path": str(tmp_path / "nowhere")})
    with pytest.raises(PipelineError, match=r"stage teacher failed: .*nowhere is not a model folder"):
        run_pipeline(pipeline_config_from_dict(config))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert {s["name"]: s["status"] for s in summary["stages"]}["teacher"] == "failed"
    gpu = small_config(tmp_path / "gpu")
    gpu["grpo"]["settings"]["engine"] = {"name": "vllm"}
    with pytest.raises(ConfigError, match="vllm"):
        run_pipeline(pipeline_config_from_dict(gpu))
    assert not (tmp_path / "gpu").exists()


def test_the_cli_runs_a_config_file_with_the_random_init_control(tmp_path: Path) -> None:
    import yaml
    from safetensors.torch import load_file

    config = small_config(tmp_path / "run", rft={"enabled": False}, random_init={"enabled": True, "seed": 3},
                          eval={"stages": ["untrained", "random_init", "sft"],
                                "settings": {"trials": 0, "max_new_tokens": 12, "max_turns": 2},
                                "stage_settings": {"sft": {"trials": 1, "samples_per_task": 2}}})
    config["grpo"]["enabled"] = False
    config["sft"]["max_steps"] = 1
    path = tmp_path / "pipe.yaml"
    path.write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(app, ["pipeline", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    run = tmp_path / "run"
    summary = json.loads((run / "summary.json").read_text())
    statuses = {s["name"]: s["status"] for s in summary["stages"]}
    assert statuses["grpo"] == "disabled" and statuses["random_init"] == "done"
    assert set(summary["results"]) == {"untrained", "random_init", "sft"}
    # eval.stage_settings: SFT's eval ran a sampled trial (2 samples a task) beside the greedy pass, no other did
    assert (run / "eval" / "sft" / "trial-1").is_dir() and not (run / "eval" / "untrained" / "trial-1").exists()
    sft_numbers = summary["results"]["sft"]["heldout_tasks"]
    assert "greedy_only" not in sft_numbers and sft_numbers["episodes"] == 2 * sft_numbers["greedy"]["episodes"]
    assert summary["results"]["untrained"]["heldout_tasks"]["greedy_only"]
    assert ("random_init", "sft", "heldout_tasks") in {(c["from"], c["to"], c["split"]) for c in summary["comparisons"]}
    # the control trains the same way (same steps) from fresh weights of the base's shape and tokenizer
    control = run / "random_init"
    assert json.loads((control / "sft" / "manifest.json").read_text())["result"]["steps"] == 1
    base, fresh = load_file(tiny_model_dir() / "model.safetensors"), load_file(control / "model" / "model.safetensors")
    assert base.keys() == fresh.keys() and all(base[k].shape == fresh[k].shape for k in base)
    assert any(not base[k].equal(fresh[k]) for k in base)
    assert (control / "model" / "tokenizer.json").read_bytes() == (tiny_model_dir() / "tokenizer.json").read_bytes()
    bad = CliRunner().invoke(app, ["pipeline", str(path), "--only", "sft,nope"])
    assert bad.exit_code == 2 and "unknown stage(s) nope" in bad.output


def test_rl_fraction_keeps_train_tasks_from_the_teacher_for_rft_and_grpo(tmp_path: Path) -> None:
    from toolgym.pipeline import stages
    from toolgym.schema import Task
    from toolgym.schema.jsonl import read_models

    config = pipeline_config_from_dict(small_config(tmp_path / "run"))
    config.tasks.rl_fraction = 0.5
    run_pipeline(config, only=["tasks", "validate", "teacher"])
    ctx = stages.Context(config=config, run=tmp_path / "run")
    train = {t.id for t in stages.dataset_tasks(ctx, "train")}
    rl_file = stages.rl_tasks_file(ctx)
    rl = read_models(rl_file, Task)
    rl_train = {t.id for t in rl if t.split == "train"}
    taught = {json.loads(line)["task_id"] for line in (tmp_path / "run" / "teacher" / "sft_rows.jsonl").open()}
    assert rl_train and taught and rl_train < train
    assert not rl_train & taught and taught <= train - rl_train  # the teacher never ran an RL task
    # the held-out splits stay in the RL file (GRPO's own eval reads them), unchanged
    assert [t.id for t in rl if t.split != "train"] == [t.id for t in stages.dataset_tasks(ctx) if t.split != "train"]
