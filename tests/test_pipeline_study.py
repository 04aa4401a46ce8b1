"""configs/study.yaml and the study driver: seeds as runs of their own, GRPO variants from a seed's own SFT and
RFT outputs, and the report over seeds at the end (toy scale for the end-to-end run)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from test_pipeline_run import small_config
from toolgym.cli.main import app
from toolgym.config.base import ConfigError
from toolgym.eval.report_seeds_runs import config_differences
from toolgym.pipeline.config import load_pipeline_config, pipeline_config_from_dict
from toolgym.pipeline.study import seed_config, variant_config

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): value}


def test_study_yaml_is_the_quickstart_over_seeds_with_a_larger_held_out_split() -> None:
    study = load_pipeline_config(CONFIGS / "study.yaml")
    quickstart = load_pipeline_config(CONFIGS / "quickstart.yaml")
    a, b = _flat(quickstart.as_written()), _flat(study.as_written())
    changed = {key for key in set(a) | set(b) if a.get(key, "unset") != b.get(key, "unset")}
    assert {k for k in changed if not k.startswith(("eval.stage_settings.", "study."))} == {
        "out", "tasks.build.tasks_per_family", "tasks.build.heldout_task_fraction", "tasks.eval_limit_seed"}
    assert all(key in a and key not in b for key in changed if key.startswith("eval.stage_settings."))  # dropped
    assert {key for key in changed if key.startswith("study.")} == {
        "study.seeds", "study.teacher_follows_seed", "study.grpo_variants.turn.advantage.credit",
        "study.grpo_variants.turn_shared.advantage.credit", "study.grpo_variants.turn_shared.advantage.turn_discount",
        "study.grpo_variants.turn_light.advantage.credit", "study.grpo_variants.turn_light.advantage.turn_weight",
        "study.grpo_variants.turn_light_shared.advantage.credit",
        "study.grpo_variants.turn_light_shared.advantage.turn_weight",
        "study.grpo_variants.turn_light_shared.advantage.turn_discount"}
    assert study.study.grpo_variants["turn_shared"]["advantage"]["turn_discount"] == 0.9
    assert study.study.seeds == [0, 1, 2] and quickstart.study.seeds == []
    assert study.tasks.build.tasks_per_family == 145 and study.tasks.build.heldout_task_fraction == 0.24
    assert study.tasks.limit_for("heldout_tasks") is None and study.tasks.limit_for("heldout_env") == 24
    assert study.eval.for_stage("grpo")["trials"] == 0  # greedy only, the measure of the paired tests


def test_each_seed_and_variant_resolves_to_a_pipeline_run() -> None:
    study = load_pipeline_config(CONFIGS / "study.yaml")
    runs = [seed_config(study, seed) for seed in study.study.seeds]
    assert [(r.out, r.seed) for r in runs] == [(f"runs/study/seed-{s}", s) for s in (0, 1, 2)]
    assert runs[2].teacher.policy == "imperfect:premature_done=0.6,wrong_format=0.2,seed=2"
    assert all(not r.study.seeds for r in runs)
    # the same held-out tasks under every seed: the held-out caps are drawn with eval_limit_seed, not the run's seed
    assert {r.tasks.limit_seed("heldout_env", r.seed) for r in runs} == {0}
    assert [r.tasks.limit_seed("train", r.seed) for r in runs] == [0, 1, 2]
    assert config_differences(runs[0].model_dump(mode="json", by_alias=True),
                              runs[1].model_dump(mode="json", by_alias=True)) == []
    turn = variant_config(study, 1, "turn")
    assert turn.out == "runs/study/variants/turn/seed-1" and turn.eval.stages == ["grpo"]
    assert turn.grpo.settings.advantage.credit == "turn" and runs[1].grpo.settings.advantage.credit == "episode"
    assert turn.grpo.settings.optim.lr == runs[1].grpo.settings.optim.lr  # the rest of grpo.settings kept
    for stage in ("tasks", "validate", "teacher", "sft", "rft"):  # what the variant reuses: the seed's fingerprints
        assert turn.section_fingerprint(stage) == runs[1].section_fingerprint(stage)
    assert turn.section_fingerprint("grpo") != runs[1].section_fingerprint("grpo")


def test_the_new_settings_leave_earlier_runs_fingerprints_alone(tmp_path: Path) -> None:
    base = {"out": str(tmp_path), "tasks": {"eval_limit": 5}}
    plain = pipeline_config_from_dict(base)
    assert "eval_limit_seed" not in json.dumps(plain.written())
    assert plain.section_fingerprint("sft") == pipeline_config_from_dict({**base, "study": {}}).section_fingerprint("sft")
    seeded = pipeline_config_from_dict({**base, "tasks": {"eval_limit": 5, "eval_limit_seed": 3}})
    assert seeded.section_fingerprint("tasks") != plain.section_fingerprint("tasks")


@pytest.mark.parametrize(("data", "message"), [
    ({"tasks": {"eval_limit": 5}, "study": {"seeds": [0, 1]}}, r"tasks\.eval_limit_seed: set it with study\.seeds"),
    ({"study": {"grpo_variants": {"turn": {}}}}, r"study\.grpo_variants: GRPO variants run per seed"),
    ({"study": {"seeds": [0, 0]}}, r"a seed twice"),
    ({"study": {"seeds": [0, 1], "grpo_variants": {"a/b": {}}}}, r"grpo variant 'a/b': a name of letters"),
    ({"study": {"seeds": [0, 1], "grpo_variants": {"turn": {"advantage": {"credit": "token"}}}}},
     r"study\.grpo_variants\.turn: advantage\.credit: .*credit must be one of episode, turn; got 'token'"),
])
def test_bad_study_settings_are_refused(tmp_path: Path, data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        pipeline_config_from_dict({"out": str(tmp_path), **data}, "study.yaml")


@pytest.mark.slow
def test_a_two_seed_study_with_a_turn_credit_variant_runs_and_reports(tmp_path: Path) -> None:
    config = small_config(tmp_path / "study")
    config["tasks"]["eval_limit_seed"] = 0
    config["study"] = {"seeds": [0, 1], "grpo_variants": {"turn": {"advantage": {"credit": "turn"}}}}
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(app, ["pipeline", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    root = tmp_path / "study"
    for seed in (0, 1):
        run, variant = root / f"seed-{seed}", root / "variants" / "turn" / f"seed-{seed}"
        assert json.loads((run / "manifest.json").read_text())["status"] == "complete"
        manifest = json.loads((variant / "manifest.json").read_text())
        assert manifest["status"] == "complete" and manifest["config"]["seed"] == seed
        assert manifest["config"]["grpo"]["settings"]["advantage"]["credit"] == "turn"
        invocation = manifest["invocations"][-1]
        assert invocation["ran"] == ["grpo", "eval"]
        assert set(invocation["skipped"]) == {"tasks", "validate", "teacher", "sft", "rft"}
        # the variant's GRPO started from its seed's own SFT model (RFT kept nothing at this scale), linked not copied
        weights = next((run / "sft" / "final").glob("*.safetensors"))
        assert os.stat(weights).st_ino == os.stat(variant / "sft" / "final" / weights.name).st_ino
        grpo = json.loads((variant / "grpo" / "manifest.json").read_text())
        assert grpo["base_model"] == str((variant / "sft" / "final").resolve())
        assert sorted(p.name for p in (variant / "eval").iterdir()) == ["grpo"]
    data = json.loads((root / "study.json").read_text())
    held = data["splits"]["heldout_tasks"]
    assert list(held["stages"]) == ["untrained", "sft", "grpo", "grpo-turn"]
    assert all(stage["scored"] + stage["errored"] == 2 * 2 for stage in held["stages"].values())  # 2 tasks × 2 seeds
    assert {(c["from"], c["to"]) for c in held["comparisons"]} >= {("grpo", "grpo-turn"), ("sft", "grpo-turn")}
    assert "grpo → grpo-turn" in result.output and (root / "report.html").is_file()


def test_a_variant_is_seeded_once_its_seed_has_finished_what_it_reuses(tmp_path: Path) -> None:
    from toolgym.dataset.manifest import write_manifest
    from toolgym.pipeline.study import reusable, seed_variant

    base, variant = tmp_path / "seed-0", tmp_path / "variants" / "turn" / "seed-0"
    records = {name: {"status": "done", "fingerprint": f"fp-{name}"} for name in ("tasks", "validate", "teacher")}
    write_manifest(base, "pipeline", status="complete", stages_by_name=records)  # what `--only tasks,...` leaves
    assert not reusable(base)
    for name, text in (("dataset/tasks.jsonl", "{}\n"), ("sft/final/model.safetensors", "w"), ("rft/manifest.json", "{}")):
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)
    records |= {"sft": {"status": "done", "fingerprint": "fp-sft"}, "rft": {"status": "nothing_kept", "fingerprint": "r"},
                "grpo": {"status": "done", "fingerprint": "fp-grpo"}}
    write_manifest(base, "pipeline", status="complete", stages_by_name=records)
    assert reusable(base)
    seed_variant(base, variant)
    manifest = json.loads((variant / "manifest.json").read_text())
    assert set(manifest["stages_by_name"]) == {"tasks", "validate", "teacher", "sft", "rft"}  # never grpo
    assert manifest["stages_by_name"]["rft"]["fingerprint"] == "r"
    assert os.stat(base / "sft/final/model.safetensors").st_ino == os.stat(variant / "sft/final/model.safetensors").st_ino
    assert os.stat(base / "dataset/tasks.jsonl").st_ino != os.stat(variant / "dataset/tasks.jsonl").st_ino  # a copy
    # seeding again keeps what the variant's own runs recorded
    write_manifest(variant, "pipeline", status="complete", config={"seed": 0},
                   stages_by_name={**manifest["stages_by_name"], "grpo": {"status": "done", "fingerprint": "own"}})
    seed_variant(base, variant)
    again = json.loads((variant / "manifest.json").read_text())
    assert again["stages_by_name"]["grpo"]["fingerprint"] == "own" and again["config"] == {"seed": 0}
