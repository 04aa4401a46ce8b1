"""Corrupt input files through the real CLI: a clear `file:line[: field]` message and an exit code, never a traceback.

Every command that reads user rows (`data validate`, `data convert`, `tasks validate`, `tasks import`)
gets each class of bad line: nesting past the stack, an integer past Python's digit limit, bytes that
are not UTF-8, a lone surrogate escape, a line that is not an object, a missing field, a wrong type;
results rows also get a null reward on an ok row and a duplicate (task_id, sample_index). A file with
no valid row (empty, or every row rejected) exits non-zero.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolgym.cli.main import app
from toolgym.data.convert import convert_rows
from toolgym.data.validate import validate_file
from toolgym.rollout.results import episode_to_row
from toolgym.schema import Episode, Message, ToolCall, ToolSpec, Verdict
from toolgym.schema.jsonl import MAX_DEPTH, BadJson, iter_lines, loads

VERIFIER = "def validate_task(env, final_answer=None):\n    return 1\n"
DEEP_ARRAY = b"[" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
BIG_INT = b'{"id": "t", "difficulty": ' + b"7" * 4301 + b"}"
NOT_UTF8 = b'{"id": "caf\xe9", "prompt": "x"}'
LONE_SURROGATE = b'{"id": "t", "prompt": "\\ud800 then text"}'
NOT_AN_OBJECT = b'"just a string"'


def results_row(task_id: str = "toy/a", sample_index: int = 0, **changes: Any) -> dict[str, Any]:
    """A real results.jsonl row (the rollout's own `episode_to_row`), with `changes` applied."""
    episode = Episode(
        task_id=task_id, env="toy", sample_index=sample_index, turns=2,
        messages=[
            Message(role="system", content="You keep notes."),
            Message(role="user", content="Add milk."),
            Message(role="assistant", tool_calls=[ToolCall(name="add_note", arguments={"title": "milk"}, id="c1")]),
            Message(role="tool", content='{"id": 1}', tool_call_id="c1", name="add_note"),
            Message(role="assistant", content="Added."),
        ],
        tools=[ToolSpec(name="add_note")], verdict=Verdict(reward=1.0, partial_score=1.0),
    )
    row = episode_to_row(episode)
    row.update(changes)
    return row


def line(row: Any) -> bytes:
    return json.dumps(row).encode()


def fleet_record(key: str, **changes: Any) -> dict[str, Any]:
    return {"key": key, "prompt": f"Do {key}", "env_id": "booking", "verifier_func": VERIFIER, **changes}


def task_row(task_id: str, **changes: Any) -> dict[str, Any]:
    return {"id": task_id, "env": "nowhere", "env_version": "1", "prompt": f"Do {task_id}", **changes}


def write_lines(path: Path, lines: list[bytes]) -> Path:
    """Line 1 is blank, so the bad rows start on line 2 (a reader must count blank lines too)."""
    path.write_bytes(b"\n" + b"".join(raw + b"\n" for raw in lines))
    return path


def run(*args: str) -> tuple[int, str]:
    """The CLI's exit code and output (whitespace removed: rich wraps long paths anywhere)."""
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result.exit_code, "".join(result.output.split())


def says(text: str, *parts: str) -> bool:
    return "".join(" ".join(parts).split()) in text


def command(name: str, path: Path) -> list[str]:
    out = path.with_name(path.name + ".out")
    return {
        "data validate": ["data", "validate", str(path)],
        "data convert": ["data", "convert", str(path), "--out", str(out)],
        "tasks validate": ["tasks", "validate", str(path), "--out", str(out), "--workers", "1"],
        "tasks import": ["tasks", "import", str(path), "--out", str(out)],
    }[name]


COMMANDS = ["data validate", "data convert", "tasks validate", "tasks import"]
# (bad line, what the message says, the field it names or None)
READ_FAULTS = {
    "deep array": (DEEP_ARRAY, "nested", None),
    "deep object": (DEEP_OBJECT, "nested", None),
    "deep row with a verifier": (b'{"verifier_code": "x", "a": ' + DEEP_ARRAY, "nested", None),
    "4301-digit integer": (BIG_INT, "more than 4300 digits", None),
    "non-UTF-8 bytes": (NOT_UTF8, "invalid UTF-8: byte 0xe9", None),
    "lone surrogate": (LONE_SURROGATE, "lone surrogate", "prompt"),
    "non-object line": (NOT_AN_OBJECT, "JSON object", None),
}


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("fault", list(READ_FAULTS))
def test_an_unreadable_line_is_named_by_file_and_line(tmp_path: Path, name: str, fault: str) -> None:
    raw, message, field = READ_FAULTS[fault]
    path = write_lines(tmp_path / "input.jsonl", [raw])
    code, text = run(*command(name, path))
    assert code == 1, text  # the file has no valid row
    assert says(text, f"{path}:2") and says(text, message), text
    if field:
        assert says(text, f"field '{field}'"), text


def test_a_real_process_reports_deep_nesting_without_a_traceback(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "results.jsonl", [DEEP_ARRAY, BIG_INT])
    result = subprocess.run([sys.executable, "-m", "toolgym.cli.main", "data", "validate", str(path)],
                            capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "400"})
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    assert f"{path.name}:2: invalid JSON: nested deeper than" in output.replace("\n", "")
    assert f"{path.name}:3: invalid JSON: an integer has more than 4300 digits" in output.replace("\n", "")


DROP = object()  # a field left out of the row
RESULTS_FAULTS = {
    "missing episode": ({"episode": DROP}, "field 'episode': Field required"),
    "reward is text": ({"reward": "high"}, "field 'reward': Input should be a valid number, got 'high'"),
    "reward null on an ok row": ({"reward": None}, "field 'reward': must be a number in [0, 1] when status is 'ok'"),
    "unknown status": ({"status": "great"}, "field 'status': Input should be 'ok', 'truncated' or 'error'"),
    "sample index is text": ({"sample_index": "0"}, "field 'sample_index': Input should be a valid integer"),
}


def _faulty_row(changes: dict[str, Any]) -> dict[str, Any]:
    row = results_row()
    for name, value in changes.items():
        if value is DROP:
            row.pop(name)
        else:
            row[name] = value
    return row


@pytest.mark.parametrize("name", ["data validate", "data convert"])
@pytest.mark.parametrize("fault", list(RESULTS_FAULTS))
def test_a_bad_results_row_is_named_by_line_and_field(tmp_path: Path, name: str, fault: str) -> None:
    changes, message = RESULTS_FAULTS[fault]
    path = write_lines(tmp_path / "results.jsonl", [line(_faulty_row(changes))])
    code, text = run(*command(name, path))
    assert code == 1, text
    assert says(text, f"{path}:2: {message}"), text


def test_strict_validate_rejects_what_convert_skips_and_both_name_the_line(tmp_path: Path) -> None:
    good = results_row()
    path = write_lines(tmp_path / "results.jsonl", [line(good), line(_faulty_row({"reward": None}))])
    code, text = run("data", "validate", str(path))
    assert code == 0 and says(text, "valid 1 · invalid 1") and says(text, f"{path}:3: field 'reward'")
    code, text = run("data", "validate", str(path), "--strict")
    assert code == 1
    code, text = run(*command("data convert", path))
    assert code == 0 and says(text, "rows out 1") and says(text, f"invalid row {path}:3: field 'reward'")


def test_a_duplicate_key_is_reported_and_converted_once(tmp_path: Path) -> None:
    row = results_row()
    path = write_lines(tmp_path / "results.jsonl", [line(row), line(results_row("toy/b")), line(row)])
    code, text = run("data", "validate", str(path), "--strict")
    assert code == 1 and says(text, f"{path}:4: duplicate (task_id, sample_index): task 'toy/a' sample 0 "
                                    "is already on line 2"), text
    out = tmp_path / "sft.jsonl"
    code, text = run("data", "convert", str(path), "--out", str(out))
    assert code == 0 and says(text, "rows out 2") and says(text, f"{path}:4: duplicate"), text
    rows = [json.loads(raw) for raw in out.read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == ["toy/a", "toy/b"]


TASK_FAULTS = {
    "missing field": ({"prompt": DROP}, "field 'prompt': Field required"),
    "wrong type": ({"difficulty": "hard"}, "field 'difficulty': Input should be a valid integer"),
}
IMPORT_FAULTS = {
    "missing field": ({"prompt": DROP}, "field 'prompt': missing"),
    "wrong type": ({"prompt": 5}, "field 'prompt': must be a non-empty string, got int 5"),
}


@pytest.mark.parametrize("fault", list(TASK_FAULTS))
def test_tasks_validate_names_the_bad_field(tmp_path: Path, fault: str) -> None:
    changes, message = TASK_FAULTS[fault]
    row = {k: v for k, v in task_row("t", **changes).items() if v is not DROP}
    path = write_lines(tmp_path / "tasks.jsonl", [line(row)])
    code, text = run(*command("tasks validate", path))
    assert code == 1 and says(text, f"{path}:2 t: invalid_row: {message}") and says(text, "no task kept"), text


@pytest.mark.parametrize("fault", list(IMPORT_FAULTS))
def test_tasks_import_names_the_bad_field(tmp_path: Path, fault: str) -> None:
    changes, message = IMPORT_FAULTS[fault]
    record = {k: v for k, v in fleet_record("k", **changes).items() if v is not DROP}
    path = write_lines(tmp_path / "fleet.jsonl", [line(record)])
    code, text = run(*command("tasks import", path))
    assert code == 1 and says(text, f"{path}:2: {message}"), text


def test_import_that_rejects_every_record_fails_with_each_reason(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "fleet.jsonl", [
        line(fleet_record("a", prompt="")), LONE_SURROGATE, line(fleet_record("c", verifier_func="def (")),
    ])
    code, text = run(*command("tasks import", path))
    assert code == 1 and says(text, "imported 0 / rejected 3") and says(text, "every record rejected"), text
    assert says(text, f"{path}:2: field 'prompt'") and says(text, f"{path}:3: field 'prompt'")
    assert says(text, f"{path}:4: field 'verifier_func': syntax error")
    assert (path.with_name(path.name + ".out") / "errors.jsonl").read_text().count("\n") == 3


def test_import_of_an_unparseable_verifier_is_a_rejection(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "fleet.jsonl", [line(fleet_record("a", verifier_func="-" * 100_000 + "1")),
                                                  line(fleet_record("b"))])
    code, text = run(*command("tasks import", path))
    assert code == 0 and says(text, "imported 1 / rejected 1") and says(text, f"{path}:2: field 'verifier_func'")


EMPTY_MESSAGES = {
    "data validate": "no valid rows in {path} (the file is empty)",
    "data convert": "{path} is empty: nothing to convert",
    "tasks validate": "{path} has no task rows: no task kept",
    "tasks import": "{path} has no records: no task imported",
}


@pytest.mark.parametrize("name", COMMANDS)
def test_an_empty_file_fails(tmp_path: Path, name: str) -> None:
    path = tmp_path / "input.jsonl"
    path.write_bytes(b"\n\n")
    code, text = run(*command(name, path))
    assert code == 1 and says(text, EMPTY_MESSAGES[name].format(path=path)), text


def test_markup_in_a_row_is_printed_as_text(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "fleet.jsonl", [line(fleet_record("[/bold]", prompt=["[/red]"]))])
    code, text = run(*command("tasks import", path))
    assert code == 1 and says(text, "got list ['[/red]']"), text
    rows = write_lines(tmp_path / "rows.jsonl", [b'{"messages": [{"role": "[/x]", "content": "hi"}]}'])
    code, text = run("data", "validate", str(rows))
    assert code == 1 and says(text, "'[/x]'"), text


def test_validate_and_convert_agree_row_by_row(tmp_path: Path) -> None:
    error_row = results_row("toy/err", status="error", reward=None, partial_score=None)
    error_row["episode"]["status"] = "error"
    lines = [
        line(results_row("toy/a")),
        line(results_row("toy/a")),  # duplicate
        line(_faulty_row({"episode": DROP})),
        line(_faulty_row({"reward": None})),
        line(results_row("toy/b", reward=True)),
        line(error_row),  # valid, never converted
        b'{"task_id": ',
        line(results_row("toy/c", sample_index=1)),
        line(results_row("toy/d", status="truncated")),  # disagrees with its episode's status
    ]
    path = write_lines(tmp_path / "results.jsonl", lines)
    report = validate_file(path)
    rows, converted = convert_rows(iter_lines(path), source=str(path))
    flagged = sorted(line for line, _ in report.examples)
    assert flagged == sorted(line for line, _ in converted.invalid) == [3, 4, 5, 6, 8, 10]
    assert report.valid == converted.valid_rows == 3
    assert sorted((r["task_id"], r["sample_index"]) for r in rows) == [("toy/a", 0), ("toy/c", 1)]
    assert converted.accounted and converted.skipped["status error (infrastructure failure: no reward)"] == 1


def test_the_reader_keeps_what_json_allows() -> None:
    assert loads('{"t": "\\ud83d\\ude00"}') == {"t": "\U0001F600"}  # a surrogate pair is one character
    assert loads('{"t": "[[[[' + "[" * 200 + '"}')["t"].startswith("[[[")  # brackets in text are not nesting
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(BadJson, match="nested deeper than"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(BadJson, match="lone surrogate") as caught:
        loads('{"a": [{"b": "\\udfff"}]}')
    assert caught.value.field == "a[0].b"


def test_a_bom_and_crlf_lines_read_as_rows(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + line({"a": 1}) + b"\r\n" + line({"b": "\u2028"}) + b"\r\n")
    assert list(iter_lines(path)) == [(1, {"a": 1}), (2, {"b": "\u2028"})]


# -- whole files: an MCP env profile, a tau2 split file ----------------------------------------------

# (file name, bytes, what the error says after "PATH: ")
PROFILE_FAULTS = {
    "deep.json": (DEEP_ARRAY, f"invalid JSON: nested deeper than {MAX_DEPTH} levels"),
    "deep-object.json": (DEEP_OBJECT, f"invalid JSON: nested deeper than {MAX_DEPTH} levels"),
    "deep.toml": (b"server = " + DEEP_ARRAY, f"invalid TOML: nested deeper than {MAX_DEPTH} levels"),
    "deep-table.toml": (b"server = " + b"{a = " * 100_000, f"invalid TOML: nested deeper than {MAX_DEPTH} levels"),
    "broken.json": (b'{\n  "server": "x",\n}\n', "line 3 column 1: invalid JSON: Expecting property name"),
    "broken.toml": (b'server = "x"\nhidden_tools = [,]\n', "line 2 column 17: invalid TOML: Invalid value"),
}


@pytest.fixture(scope="module")
def booking_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real tasks.jsonl for `toolgym rollout`, which reads the tasks before the --env-mcp specs."""
    from toolgym.dataset.build import BuildConfig, generate_app_tasks
    from toolgym.envs import get_app
    from toolgym.schema.jsonl import write_jsonl

    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    write_jsonl(path, generate_app_tasks(get_app("booking"), BuildConfig(tasks_per_family=1))[:1])
    return path


@pytest.mark.parametrize("name", list(PROFILE_FAULTS))
def test_a_bad_env_mcp_profile_is_named_by_file_not_a_traceback(tmp_path: Path, booking_tasks: Path,
                                                                name: str) -> None:
    raw, message = PROFILE_FAULTS[name]
    profile = tmp_path / name
    profile.write_bytes(raw)
    code, text = run("rollout", "--tasks", str(booking_tasks), "--policy", "oracle", "--out", str(tmp_path / "run"),
                     "--env-mcp", f"booking=profile:{profile}", "--no-progress")
    assert code == 2, text
    assert says(text, f"MCP env profile {profile}: {message}"), text


@pytest.mark.parametrize("given", [False, True], ids=["beside the tasks", "--splits"])
def test_a_deep_tau2_split_file_is_named_by_file_not_a_traceback(tmp_path: Path, given: bool) -> None:
    tasks = tmp_path / "tasks.json"
    tasks.write_text("[]", encoding="utf-8")
    splits = tmp_path / ("my_splits.json" if given else "split_tasks.json")
    splits.write_bytes(DEEP_OBJECT)
    code, text = run("tasks", "import", "--format", "tau2", str(tasks), "--out", str(tmp_path / "out"),
                     *(["--splits", str(splits)] if given else []))
    assert code == 2, text
    assert says(text, f"{splits}: invalid JSON: nested deeper than {MAX_DEPTH} levels"), text
