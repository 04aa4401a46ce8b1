"""`toolgym tasks build` and `tasks validate` read the config tree: a file, shortcut flags and `--set` give the
same dataset; bad keys are named by file and line; v0.1 has no env_variables wherever it is built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from toolgym.cli.main import app
from toolgym.config.tasks import TasksBuildConfig, TasksValidateConfig
from toolgym.dataset.build import BuildConfig, build_tasks
from toolgym.pipeline.config import pipeline_config_from_dict
from toolgym.pipeline.run import run_pipeline

SMALL = ["--apps", "booking", "--tasks-per-family", "2"]


def build(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["tasks", "build", *args])
    return result.exit_code, result.output


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]


def test_a_config_file_gives_the_same_dataset_as_the_flags(tmp_path: Path) -> None:
    code, output = build("--apps", "booking,drive", "--seed", "3", "--tasks-per-family", "2",
                         "--heldout-envs", "drive", "--out", str(tmp_path / "flags"))
    assert code == 0, output
    config = tmp_path / "build.yaml"
    config.write_text(f"seed: 3\napps: [booking, drive]\ntasks_per_family: 2\nheldout_envs: [drive]\n"
                      f"out: {tmp_path / 'file'}\n")
    code, output = build("--config", str(config))
    assert code == 0, output
    flags, from_file = (tmp_path / "flags" / "tasks.jsonl").read_bytes(), (tmp_path / "file" / "tasks.jsonl").read_bytes()
    assert flags == from_file and flags
    assert {t["env"] for t in rows(tmp_path / "file")} == {"booking", "drive"}
    manifests = [json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("flags", "file")]
    assert manifests[0]["build_config"] == manifests[1]["build_config"] == {
        "version": "v0.2", "seed": 3, "apps": ["booking", "drive"], "tasks_per_family": 2, "heldout_envs": ["drive"],
        "heldout_task_fraction": 0.08, "with_env_variables": True, "compositions": []}
    # a flag wins over the file, `--set` over both
    code, output = build("--config", str(config), "--seed", "4", "--set", "seed=5", "--out", str(tmp_path / "set"))
    assert code == 0, output
    assert json.loads((tmp_path / "set" / "manifest.json").read_text())["generator_seed"] == 5


def test_set_overrides_a_setting(tmp_path: Path) -> None:
    code, output = build("--apps", "booking", "--set", "tasks_per_family=2", "--out", str(tmp_path / "set"))
    assert code == 0, output
    code, output = build("--apps", "booking", "--tasks-per-family", "3", "--out", str(tmp_path / "three"))
    assert code == 0, output
    assert json.loads((tmp_path / "set" / "manifest.json").read_text())["build_config"]["tasks_per_family"] == 2
    assert 0 < len(rows(tmp_path / "set")) < len(rows(tmp_path / "three"))


def test_an_unknown_key_is_refused_by_file_key_and_line(tmp_path: Path) -> None:
    config = tmp_path / "build.yaml"
    config.write_text("seed: 3\napps: [booking]\ntask_per_family: 2\n")
    code, output = build("--config", str(config), "--out", str(tmp_path / "out"))
    assert code == 2
    squeezed = "".join(output.split())  # rich wraps long lines; the path itself has no spaces
    assert f"{config}(withcommand-linesettings):fieldtask_per_family:unknownsetting;known:" in squeezed
    assert "tasks_per_family" in squeezed and squeezed.endswith("(line3)")
    assert not (tmp_path / "out").exists()


def test_bad_values_are_usage_errors(tmp_path: Path) -> None:
    code, output = build("--apps", "booking,nope", "--out", str(tmp_path / "out"))
    assert code == 2 and "unknown app 'nope'" in output
    code, output = build(*SMALL, "--set", "compositions=[mail+nope]", "--out", str(tmp_path / "out"))
    assert code == 2 and "unknown composition 'mail+nope'" in output
    code, output = build("--apps", "booking", "--tasks-per-family", "0", "--out", str(tmp_path / "out"))
    assert code == 2 and "tasks_per_family" in output
    assert not (tmp_path / "out").exists()


def test_v01_has_no_env_variables_from_the_cli(tmp_path: Path) -> None:
    for version in ("v0.1", "v0.2"):
        code, output = build(*SMALL, "--version", version, "--out", str(tmp_path / version))
        assert code == 0, output
    assert all(t["env_variables"] == {} for t in rows(tmp_path / "v0.1"))
    assert all(t["env_variables"] for t in rows(tmp_path / "v0.2"))
    manifest = json.loads((tmp_path / "v0.1" / "manifest.json").read_text())
    assert manifest["version"] == "v0.1" and manifest["build_config"]["with_env_variables"] is False


def test_v01_has_no_env_variables_from_the_pipeline_section(tmp_path: Path) -> None:
    build_section = {"version": "v0.1", "apps": ["booking"], "tasks_per_family": 2, "heldout_envs": []}
    config = pipeline_config_from_dict({"out": str(tmp_path / "run"), "tasks": {"build": build_section}})
    assert config.tasks.build.with_env_variables is False
    run_pipeline(config, only=["tasks"])
    built = tmp_path / "run" / "dataset" / "built"
    assert rows(built) and all(t["env_variables"] == {} for t in rows(built))
    assert json.loads((built / "manifest.json").read_text())["build_config"]["with_env_variables"] is False
    # the CLI and the pipeline section are one model: the same settings give the same tasks
    code, output = build("--version", "v0.1", "--apps", "booking", "--tasks-per-family", "2", "--heldout-envs", "",
                         "--out", str(tmp_path / "cli"))
    assert code == 0, output
    assert (tmp_path / "cli" / "tasks.jsonl").read_bytes() == (built / "tasks.jsonl").read_bytes()


def test_with_env_variables_follows_the_version_unless_set() -> None:
    assert BuildConfig(version="v0.1").with_env_variables is False
    assert BuildConfig(version="v0.2").with_env_variables is True
    assert BuildConfig(version="v0.1", with_env_variables=True).with_env_variables is True
    assert BuildConfig(version="v0.2", with_env_variables=False).with_env_variables is False
    v01 = build_tasks(BuildConfig(version="v0.1", with_env_variables=True, apps=["booking"], tasks_per_family=1))
    assert v01 and all(t.env_variables for t in v01)
    with pytest.raises(ValidationError, match="at least 1 item"):
        BuildConfig(apps=[])
    assert TasksBuildConfig(out="x", apps=["booking"]).build_config() == BuildConfig(apps=["booking"])


def test_validate_settings_build_the_teacher_check() -> None:
    assert TasksValidateConfig().teacher.teacher_config() is None
    settings = TasksValidateConfig.model_validate({"teacher": {"url": "http://h/v1", "model": "m", "samples": 2,
                                                               "max_turns": 5}})
    teacher = settings.teacher.teacher_config()
    assert teacher is not None
    assert teacher.model_dump() == {"samples": 2, "concurrency": 8, "max_turns": 5, "temperature": 0.8,
                                    "top_p": 1.0, "top_k": 0, "max_new_tokens": 512, "timeout_s": 300.0,
                                    "max_context_tokens": 4096, "done_tool": False, "max_format_errors": None,
                                    "turn_progress": False, "policy": "openai:http://h/v1#m", "api_key": None}


def test_validate_reads_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "validate.yaml"
    config.write_text("workers: 1\nteacher:\n  url: http://127.0.0.1:9/v1\n")
    result = CliRunner().invoke(app, ["tasks", "validate", str(tmp_path / "tasks.jsonl"), "--config", str(config)])
    assert result.exit_code == 2 and "give both --teacher-url and --teacher-model" in result.output
    config.write_text("workers: 0\n")
    result = CliRunner().invoke(app, ["tasks", "validate", str(tmp_path / "tasks.jsonl"), "--config", str(config)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and "field workers" in text and "(line 1)" in text
