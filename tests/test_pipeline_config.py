"""Pipeline config validation and summary.json numbers (no model runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolgym.eval.stats import Rate
from toolgym.pipeline.config import load_pipeline_config, pipeline_config_from_dict
from toolgym.pipeline.summary import acceptance, comparisons, headline
from toolgym.train.grpo.config import ConfigError

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


@pytest.mark.parametrize("name", ["quickstart.yaml", "qwen3_8b_gpu.yaml"])
def test_shipped_configs_load(name: str) -> None:
    config = load_pipeline_config(CONFIGS / name)
    grpo = config.grpo_config("tasks", "model", "out")
    assert grpo.seed == config.seed
    assert config.section_fingerprint("sft") != config.section_fingerprint("grpo")


def test_quickstart_is_a_cpu_run_of_the_tiny_default() -> None:
    config = load_pipeline_config(CONFIGS / "quickstart.yaml")
    assert config.model.path == "default" and config.model.device == "cpu"
    assert config.grpo_config("t", "m", "o").engine.name == "hf"
    assert config.tasks.build.heldout_envs == ["mail"]


@pytest.mark.parametrize(("data", "message"), [
    ({"sft": {"learning_rate": 1e-3}}, r"field sft.learning_rate: unknown setting; known: .*\blr\b"),
    ({"rft": {"settings": {"samples": 4}}}, r"field rft.settings.samples: unknown setting; known: .*samples_per_task"),
    ({"rft": {"settings": {"sft": {"epoch": 2}}}}, r"field rft.settings.sft.epoch: unknown setting; known: .*epochs"),
    ({"grpo": {"settings": {"model": "x"}}}, r"grpo.settings.model is set by the pipeline"),
    ({"grpo": {"settings": {"loss": {"clip_hi": 0.3}}}}, r"field grpo.settings.loss.clip_hi: unknown setting; known: .*clip_high"),
    ({"eval": {"settings": {"k": [1]}}}, r"field eval.settings.k: unknown setting; known: .*ks"),
    ({"eval": {"stage_settings": {"grpo": {"sample": 4}}}}, r"field eval.stage_settings.grpo.sample: unknown setting"),
    ({"eval": {"stage_settings": {"dpo": {"trials": 1}}}}, r"field eval.stage_settings.dpo"),
    ({"tasks": {"build": {"app": ["booking"]}}}, r"field tasks.build.app: unknown setting; known: .*apps"),
    ({"teacher": {"polcy": "oracle"}}, r"field teacher.polcy"),
    ({"tasks": {"eval_limit": {"heldout": 3}}}, r"field tasks.eval_limit"),
    ({"tasks": {"eval_limit": {"heldout_env": 0}}}, r"field tasks.eval_limit: .*at least 1"),
])
def test_bad_settings_name_the_file_and_field(tmp_path: Path, data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        pipeline_config_from_dict({"out": str(tmp_path), **data}, "pipe.yaml")
    with pytest.raises(ConfigError, match=r"^pipe\.yaml: field "):
        pipeline_config_from_dict({"out": str(tmp_path), **data}, "pipe.yaml")


def test_eval_limit_caps_each_held_out_split_or_the_named_ones(tmp_path: Path) -> None:
    one = pipeline_config_from_dict({"out": str(tmp_path), "tasks": {"train_limit": 9, "eval_limit": 5}})
    assert [one.tasks.limit_for(s) for s in ("train", "heldout_tasks", "heldout_env")] == [9, 5, 5]
    named = pipeline_config_from_dict({"out": str(tmp_path), "tasks": {"eval_limit": {"heldout_env": 72}}})
    assert [named.tasks.limit_for(s) for s in ("train", "heldout_tasks", "heldout_env")] == [None, None, 72]


def test_fingerprints_follow_upstream_settings(tmp_path: Path) -> None:
    base = pipeline_config_from_dict({"out": str(tmp_path)})
    changed = pipeline_config_from_dict({"out": str(tmp_path), "sft": {"max_steps": 7}})
    for stage in ("tasks", "validate", "teacher"):
        assert base.section_fingerprint(stage) == changed.section_fingerprint(stage)
    for stage in ("sft", "rft", "grpo", "eval"):
        assert base.section_fingerprint(stage) != changed.section_fingerprint(stage)
    moved = pipeline_config_from_dict({"out": str(tmp_path / "elsewhere")})
    assert all(base.section_fingerprint(s) == moved.section_fingerprint(s) for s in ("tasks", "sft", "grpo", "eval"))


def _numbers(successes: int, scored: int, errored: int = 0, greedy: tuple[int, int] | None = None) -> dict:
    numbers = {"successes": successes, "scored": scored, "errored": errored, "episodes": scored + errored}
    if greedy is not None:
        numbers["greedy"] = {"successes": greedy[0], "scored": greedy[1], "errored": 0, "episodes": greedy[1]}
    return numbers


def test_comparisons_use_the_greedy_rate_and_never_an_unpaired_test() -> None:
    results = {
        "untrained": {"heldout_tasks": _numbers(0, 60, greedy=(0, 60))},
        "sft": {"heldout_tasks": _numbers(15, 58, errored=2, greedy=(20, 60))},
        "grpo": {"heldout_tasks": _numbers(25, 60, greedy=(26, 60)), "heldout_env": _numbers(1, 40, greedy=(0, 40))},
    }
    assert headline(results["sft"]["heldout_tasks"]).successes == 20
    every = comparisons(results)
    found = {(c["from"], c["to"], c["split"]): c for c in every if c["measure"] == "greedy"}
    assert set(found) == {("untrained", "sft", "heldout_tasks"), ("sft", "grpo", "heldout_tasks"),
                          ("untrained", "grpo", "heldout_tasks")}
    # the sampled trials ran beside the greedy pass: each comparison also on them, as its own row
    beside = {(c["from"], c["to"]): c for c in every if c["measure"] == "sampled"}
    assert set(beside) == {(a, b) for a, b, _ in found}
    assert (beside[("sft", "grpo")]["from_rate"], beside[("sft", "grpo")]["to_rate"]) == ("15/58", "25/60")
    sft_grpo = found[("sft", "grpo", "heldout_tasks")]
    assert (sft_grpo["from_rate"], sft_grpo["to_rate"]) == ("20/60", "26/60")
    assert sft_grpo["difference_pp"] == pytest.approx(10.0)
    # the same tasks scored twice: without the paired episodes there is no test, never a two-proportion one
    assert sft_grpo["p_value"] is None and sft_grpo["test"] == "none: no paired episodes"
    verdict = acceptance(results, "heldout_tasks", 0.30, 5.0)
    assert verdict["sft_meets_min"] is True  # 20/60 = 33%
    assert verdict["grpo_meets_gain"] is True and verdict["grpo_gain_points"] == pytest.approx(10.0)
    assert (verdict["sft_sampled"], verdict["grpo_sampled"]) == (str(Rate(15, 58)), str(Rate(25, 60)))
    assert verdict["grpo_sampled_gain_points"] == pytest.approx(100 * (25 / 60 - 15 / 58), abs=1e-3)
    assert verdict["untrained"].startswith("0/60") and "random_init" not in verdict
    results["random_init"] = {"heldout_tasks": _numbers(2, 60, greedy=(1, 60))}
    control = {(c["from"], c["to"]): c for c in comparisons(results)
               if c["split"] == "heldout_tasks" and c["measure"] == "greedy"}
    assert control[("random_init", "sft")]["from_rate"] == "1/60"
    assert acceptance(results, "heldout_tasks", 0.30, 5.0)["random_init"].startswith("1/60")
