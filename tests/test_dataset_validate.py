"""`toolgym tasks validate`: replay keeps good tasks byte-for-byte and reports every broken one with its reason."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgym.cli.main import app
from toolgym.dataset.validate import TeacherConfig, validate_dataset, write_validation
from toolgym.envs import registry
from toolgym.envs.examples.toy import APP
from toolgym.rollout.teacher_check import validate_with_teacher
from toolgym.schema import DiffOnly, ExpectedChange, FieldEquals, RowExists, Task, ToolCall
from toolgym.schema.jsonl import dumps


@pytest.fixture(autouse=True)
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `make_env("toy")` work here and in forked pool workers."""
    monkeypatch.setitem(registry.APP_MODULES, "toy", "toolgym.envs.examples.toy")
    monkeypatch.setitem(registry._loaded, "toy", APP)


def make_task(task_id: str, **changes: object) -> Task:
    base = Task(
        id=task_id,
        env="toy",
        env_version="1.0.0",
        prompt=f"Add a note 'buy milk' due tomorrow ({task_id})",
        env_variables={"CURRENT_DATE": "2026-06-15", "LOGGED_IN_USER": "ana"},
        checks=[
            RowExists(table="notes", where={"owner": "ana", "title": "buy milk"}, weight=2, label="note exists"),
            FieldEquals(table="notes", where={"title": "buy milk"}, field="due", value="2026-06-16", label="due tomorrow"),
            DiffOnly(expected=[ExpectedChange(table="notes", op="insert", where={"title": "buy milk"})], label="only the insert"),
        ],
        reference_solution=[ToolCall(name="add_note", arguments={"title": "buy milk", "due": "tomorrow"})],
        expected_answer="Added buy milk for tomorrow.",
    )
    return base.model_copy(update=changes)


GOOD_VERIFIER = (
    "def validate_task(env, final_answer=None):\n"
    "    row = env.db('current').table('notes').eq('title', 'buy milk').first()\n"
    "    return int(row is not None and row['due'] == '2026-06-16')\n"
)


def dataset_lines() -> list[str]:
    good = make_task("toy/good")
    wrong_check = make_task("toy/wrong_check")
    wrong_check.checks[1] = FieldEquals(table="notes", where={"title": "buy milk"}, field="due", value="2026-06-17",
                                        label="due tomorrow")
    return [
        # kept rows keep their exact bytes, whatever their JSON formatting
        json.dumps(good.model_dump(mode="json"), ensure_ascii=False),
        dumps(wrong_check),
        dumps(make_task("toy/bad_call", reference_solution=[ToolCall(name="complete_note", arguments={"note_id": 2})],
                        checks=[DiffOnly(expected=[])])),
        dumps(make_task("toy/crash", reference_solution=[ToolCall(name="crash", arguments={})])),
        dumps(make_task("nope/task", env="nope")),
        dumps(make_task("toy/verifier_ok", checks=[], verifier_code=GOOD_VERIFIER)),
        dumps(make_task("toy/verifier_broken", checks=[], verifier_code="def validate_task(env, final_answer=None):\n    return 1/0\n")),
        json.dumps({**make_task("toy/bad_row").model_dump(mode="json"), "difficulty": 9}),
        "{not json",
        dumps(make_task("toy/good")),  # same id again
    ]


def write_dataset(path: Path) -> Path:
    path.write_text("\n".join(dataset_lines()) + "\n\n")
    return path


EXPECTED = {
    1: ("toy/good", "kept"),
    2: ("toy/wrong_check", "checks_failed"),
    3: ("toy/bad_call", "reference_call_failed"),
    4: ("toy/crash", "env_error"),
    5: ("nope/task", "unknown_env"),
    6: ("toy/verifier_ok", "kept"),
    7: ("toy/verifier_broken", "verifier_error"),
    8: ("toy/bad_row", "invalid_row"),
    9: (None, "invalid_row"),
    10: ("toy/good", "duplicate_id"),
}


def test_each_task_gets_the_right_reason(tmp_path: Path) -> None:
    run = validate_dataset(write_dataset(tmp_path / "tasks.jsonl"), workers=1)
    assert {r.line: (r.id, r.reason) for r in run.reports} == EXPECTED
    by_line = {r.line: r for r in run.reports}
    assert by_line[1].kept and (by_line[1].reward, by_line[1].partial_score) == (1.0, 1.0)
    wrong = by_line[2]
    assert (wrong.reward, wrong.partial_score) == (0.0, pytest.approx(3 / 4))
    assert wrong.failed_checks == [{"label": "due tomorrow", "kind": "field_equals",
                                    "detail": "notes.due = '2026-06-16'; want '2026-06-17'"}]
    assert "no note with id 2 belongs to you" in by_line[3].detail
    assert "ZeroDivisionError" in by_line[4].detail
    assert "unknown app 'nope'" in by_line[5].detail
    assert "ZeroDivisionError" in by_line[7].detail and by_line[7].reward is None
    assert by_line[8].detail.startswith("field 'difficulty'")
    assert "already used on line 1" in by_line[10].detail
    assert run.by_reason() == {"kept": 2, "invalid_row": 2, "duplicate_id": 1, "unknown_env": 1, "env_error": 1,
                               "verifier_error": 1, "reference_call_failed": 1, "checks_failed": 1}


def test_a_process_pool_gives_the_same_reports(tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "tasks.jsonl")
    serial = validate_dataset(path, workers=1)
    pooled = validate_dataset(path, workers=2)
    strip = lambda reports: [{**r.__dict__, "replay_ms": 0} for r in reports]  # noqa: E731
    assert strip(pooled.reports) == strip(serial.reports)


def test_outputs_keep_rows_byte_for_byte_and_count_by_env_and_reason(tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "tasks.jsonl")
    run = validate_dataset(path, workers=1)
    written = write_validation(run, tmp_path / "validated")
    lines = dataset_lines()
    assert written["tasks"].read_bytes() == (lines[0] + "\n" + lines[5] + "\n").encode()
    report = [json.loads(line) for line in written["report"].read_text().splitlines()]
    assert len(report) == 10
    assert set(report[0]) >= {"id", "env", "kept", "reason", "reward", "partial_score", "failed_checks"}
    manifest = json.loads((tmp_path / "validated" / "manifest.json").read_text())
    assert manifest["kind"] == "validated_tasks"
    assert manifest["input_sha256"] != manifest["tasks_sha256"]
    assert manifest["counts"]["input"] == 10 and manifest["counts"]["kept"] == 2
    assert manifest["counts"]["by_env"]["toy"] == {"input": 8, "kept": 2, "dropped": 6}
    assert manifest["counts"]["by_env"]["nope"] == {"input": 1, "kept": 0, "dropped": 1}
    assert manifest["counts"]["by_reason"]["checks_failed"] == 1
    assert manifest["env_versions"] == {"toy": "1.0.0"}


def test_validate_command_prints_the_table_and_throughput(tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "tasks.jsonl")
    out = tmp_path / "validated"
    result = CliRunner().invoke(app, ["tasks", "validate", str(path), "--out", str(out), "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert "Environment" in result.output and "Dropped" in result.output
    assert "checks_failed 1" in result.output and "tasks/s" in result.output
    assert (out / "tasks.jsonl").exists() and (out / "report.jsonl").exists() and (out / "manifest.json").exists()


def test_teacher_keeps_tasks_it_solves(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(dumps(make_task("toy/a")) + "\n" + dumps(make_task("toy/b", prompt="another")) + "\n")
    run = validate_with_teacher(path, workers=1, teacher=TeacherConfig(policy="oracle", samples=2), out_dir=tmp_path / "out")
    assert [r.reason for r in run.reports] == ["kept", "kept"]
    assert run.reports[0].teacher == {"samples": 2, "passed": 2, "errors": 0}
    assert (tmp_path / "out" / "teacher" / "results.jsonl").exists()


class RefusingTeacher(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint whose model never calls a tool."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "refuser",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "I cannot do that."}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


def test_teacher_over_http_drops_tasks_it_cannot_solve(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), RefusingTeacher)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        path = tmp_path / "tasks.jsonl"
        path.write_text(dumps(make_task("toy/a")) + "\n")
        out = tmp_path / "validated"
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        result = CliRunner().invoke(app, ["tasks", "validate", str(path), "--out", str(out), "--workers", "1",
                                          "--teacher-url", url, "--teacher-model", "refuser", "--samples", "2"])
    finally:
        server.shutdown()
        server.server_close()
    assert result.exit_code == 1, result.output  # nothing kept: the outputs are written, the command fails
    assert "no task kept" in result.output
    [report] = [json.loads(line) for line in (out / "report.jsonl").read_text().splitlines()]
    assert (report["reason"], report["teacher"]) == ("teacher_unsolved", {"samples": 2, "passed": 0, "errors": 0})
    assert (out / "tasks.jsonl").read_text() == ""
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["teacher"]["policy"] == f"openai:{url}#refuser" and manifest["teacher"]["samples"] == 2


def test_teacher_options_must_come_together(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(dumps(make_task("toy/a")) + "\n")
    result = CliRunner().invoke(app, ["tasks", "validate", str(path), "--teacher-url", "http://127.0.0.1:9/v1"])
    assert result.exit_code == 2 and "give both --teacher-url and --teacher-model" in result.output
