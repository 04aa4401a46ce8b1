"""Fleet record import: field aliases, good rows kept, bad rows reported by file:line:field."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from toolgym.cli.main import app
from toolgym.dataset.fleet import import_fleet_file, write_import
from toolgym.schema import Task
from toolgym.schema.jsonl import read_models

VERIFIER = "def validate_task(env, final_answer=None):\n    return 1\n"


def good(key: str, **extra: object) -> dict:
    return {
        "key": key,
        "prompt": f"Do the thing {key}",
        "env_id": "booking",
        "version": "v1.2",
        "data_id": "booking-data",
        "data_version": "v3",
        "verifier_func": VERIFIER,
        "task_modality": "tool_use",
        "env_variables": {"CURRENT_DATE": "2026-06-15", "LOGGED_IN_USER": "ana", "LOGGED_IN_NAME": "Ana"},
        "difficulty": 2,
        **extra,
    }


def write_array(path: Path, records: list[object]) -> Path:
    """Pretty-printed like all_tool_use.json: each record spans several lines."""
    path.write_text(json.dumps(records, indent=2) + "\n")
    return path


def line_of(path: Path, needle: str) -> int:
    """The line of the '{' that opens the record holding `needle`."""
    lines = path.read_text().splitlines()
    hit = next(i for i, line in enumerate(lines) if needle in line)
    return next(i for i in range(hit, -1, -1) if lines[i].strip() == "{") + 1


def test_a_good_record_becomes_a_task_with_every_field(tmp_path: Path) -> None:
    path = write_array(tmp_path / "all_tool_use.json", [good("task_1", metadata={"avg_steps": 4})])
    result = import_fleet_file(path)
    assert result.errors == []
    [task] = result.tasks
    assert (task.id, task.env, task.env_version, task.prompt) == ("task_1", "booking", "v1.2", "Do the thing task_1")
    assert (task.data_id, task.data_version, task.difficulty, task.task_modality) == ("booking-data", "v3", 2, "tool_use")
    assert task.env_variables["LOGGED_IN_USER"] == "ana"
    assert task.verifier_code == VERIFIER
    assert task.metadata == {"source": "fleet", "source_file": "all_tool_use.json", "source_line": 2,
                             "fleet": {"metadata": {"avg_steps": 4}}}


def test_alias_fields_and_env_key_versions(tmp_path: Path) -> None:
    record = {
        "task_key": "task_2", "prompt": "p", "env_key": "hubspot:v1.4", "data_key": "hs-data",
        "verifier_code": VERIFIER, "difficulty": "3", "env_variables": {"CURRENT_DATE": "2026-06-15", "SEATS": 2},
    }
    [task] = import_fleet_file(write_array(tmp_path / "a.json", [record])).tasks
    assert (task.id, task.env, task.env_version, task.data_id, task.difficulty) == ("task_2", "hubspot", "v1.4", "hs-data", 3)
    assert task.env_variables == {"CURRENT_DATE": "2026-06-15", "SEATS": "2"}
    assert task.task_modality == "tool_use"
    minimal = {"key": "task_3", "prompt": "p", "env_id": "fira", "verifier_func": VERIFIER}
    [task] = import_fleet_file(write_array(tmp_path / "b.json", [minimal])).tasks
    assert (task.env_version, task.difficulty, task.env_variables) == ("latest", 1, {})


def test_bad_records_in_a_json_array_name_their_line_and_field(tmp_path: Path) -> None:
    records = [
        good("ok_1"),
        {**good("bad_prompt"), "prompt": ""},
        {k: v for k, v in good("no_env").items() if k != "env_id"},
        {**good("bad_difficulty"), "difficulty": 7},
        {**good("bad_modality"), "task_modality": "telepathy"},
        {**good("bad_verifier"), "verifier_func": "def validate_task(env):\n    return (\n"},
        {**good("no_function"), "verifier_func": "x = 1\n"},
        {**good("bad_vars"), "env_variables": {"CURRENT_DATE": ["2026"]}},
        {**good("clash"), "task_key": "something_else"},
        good("ok_1"),
        ["not", "an", "object"],
        good("ok_2"),
    ]
    path = write_array(tmp_path / "all_tool_use.json", records)
    result = import_fleet_file(path)
    assert [t.id for t in result.tasks] == ["ok_1", "ok_2"]
    errors = [(e.line, e.field, e.message) for e in result.errors]
    expected_fields = ["prompt", "env_id", "difficulty", "task_modality", "verifier_func", "verifier_func",
                       "env_variables.CURRENT_DATE", "key", "key", None]
    assert [field for _, field, _ in errors] == expected_fields
    assert errors[0] == (line_of(path, '"bad_prompt"'), "prompt", "must be a non-empty string, got str ''")
    assert errors[1][0] == line_of(path, '"no_env"') and errors[1][2] == "missing (give 'env_id' or 'env_key')"
    assert errors[2][2] == "must be 1, 2 or 3, got 7"
    assert errors[4][2].startswith("syntax error at verifier line 2")
    assert errors[5][2] == "defines no validate_task(env, final_answer=None) function"
    assert "disagrees with 'task_key'" in errors[7][2]
    assert errors[8][2].startswith("duplicate task key 'ok_1' (first on line ")
    assert errors[9][2] == "a record must be a JSON object, got list"
    bad_prompt_line = line_of(path, '"bad_prompt"')
    assert str(result.errors[0]) == f"{path}:{bad_prompt_line}: field 'prompt': must be a non-empty string, got str ''"


def test_bad_rows_in_jsonl_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        json.dumps(good("a")) + "\n"
        + "{not json\n"
        + "\n"
        + json.dumps({**good("b"), "difficulty": True}) + "\n"
        + json.dumps(good("c")) + "\n"
    )
    result = import_fleet_file(path)
    assert [t.id for t in result.tasks] == ["a", "c"]
    assert [(e.line, e.field) for e in result.errors] == [(2, None), (4, "difficulty")]
    assert result.errors[0].message.startswith("invalid JSON: ")
    assert result.errors[1].key == "b"


def test_a_broken_array_keeps_the_records_before_the_break(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text("[\n" + json.dumps(good("a")) + ",\n" + json.dumps(good("b")) + ",\n{\"key\": \"c\", \n")
    result = import_fleet_file(path)
    assert [t.id for t in result.tasks] == ["a", "b"]
    [error] = result.errors
    assert error.line == 4  # where record "c" starts
    assert error.message.startswith("invalid JSON in the record starting here: ") and "at line 5" in error.message


def test_import_command_writes_tasks_errors_and_manifest(tmp_path: Path) -> None:
    source = write_array(tmp_path / "all_tool_use.json", [good("a"), {**good("b"), "prompt": 5}, good("c")])
    out = tmp_path / "imported"
    result = CliRunner().invoke(app, ["tasks", "import", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "imported 2 / rejected 1" in result.output
    assert "field 'prompt': must be a non-empty string, got int 5" in result.output
    tasks = read_models(out / "tasks.jsonl", Task)
    assert [t.id for t in tasks] == ["a", "c"]
    [error] = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    assert (error["field"], error["key"], error["line"]) == ("prompt", "b", line_of(source, '"b"'))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "fleet_import"
    assert manifest["counts"] == {"records": 3, "imported": 2, "rejected": 1, "by_env": {"booking": 2}}



def test_import_command_reads_a_config_file_then_set_and_refuses_an_unknown_key(tmp_path: Path) -> None:
    source = write_array(tmp_path / "all_tool_use.json", [good("a")])
    config = tmp_path / "import.yaml"
    config.write_text(f"out: {tmp_path / 'from_file'}\nformat: fleet\n")
    runner = CliRunner()
    from_file = runner.invoke(app, ["tasks", "import", str(source), "--config", str(config)])
    assert from_file.exit_code == 0, from_file.output
    assert [t.id for t in read_models(tmp_path / "from_file" / "tasks.jsonl", Task)] == ["a"]

    overridden = runner.invoke(app, ["tasks", "import", str(source), "--config", str(config),
                                     "--set", f"out={tmp_path / 'from_set'}"])
    assert overridden.exit_code == 0, overridden.output
    assert (tmp_path / "from_set" / "tasks.jsonl").is_file()
    # the file's other settings still apply under --set: fleet refuses a tau2-only setting given there
    tau2_only = runner.invoke(app, ["tasks", "import", str(source), "--config", str(config), "--set", "env=airline"])
    assert tau2_only.exit_code == 2 and "options of --format tau2" in tau2_only.output

    config.write_text(f"out: {tmp_path / 'x'}\nwrite_tool: [book]\n")
    bad = runner.invoke(app, ["tasks", "import", str(source), "--config", str(config)])
    text = " ".join(bad.output.split())
    assert bad.exit_code == 2, bad.output
    assert f"{config}" in text and "field write_tool: unknown setting; known:" in text and "(line 2)" in text
    assert not (tmp_path / "x").exists()

def test_write_import_is_readable_as_a_dataset(tmp_path: Path) -> None:
    result = import_fleet_file(write_array(tmp_path / "x.json", [good("a")]))
    written = write_import(result, tmp_path / "out")
    assert read_models(written["tasks"], Task)[0].verifier_code == VERIFIER
