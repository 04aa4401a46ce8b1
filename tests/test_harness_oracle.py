"""Acceptance: both shipped example harnesses, with the oracle answering through the policy endpoint, solve 16
booking tasks: 16 rows, reward 1 each, every call reaching the task's environment over MCP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from test_harness_support import AGENTS_HARNESS, LOOP_HARNESS, booking_tasks, write_dataset
from toolgym.cli.main import app
from toolgym.dataset.manifest import read_manifest
from toolgym.rollout.results import RESULTS_FILE, read_rows, row_key

TASKS = 16


@pytest.mark.parametrize("command", [pytest.param(AGENTS_HARNESS, marks=pytest.mark.slow, id="openai_agents"),
                                     pytest.param(LOOP_HARNESS, id="openai_loop")])
def test_each_example_harness_with_the_oracle_solves_sixteen_booking_tasks(tmp_path: Path, command: str) -> None:
    tasks = booking_tasks(TASKS)
    dataset = write_dataset(tmp_path / "data", tasks)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["harness", "run", "--tasks", str(dataset), "--command", command,
                                      "--policy", "oracle", "--out", str(out), "--concurrency", "4",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = read_rows(out / RESULTS_FILE)
    assert sorted(row_key(r) for r in rows) == sorted((t.id, 0) for t in tasks)
    failed = {r["task_id"]: (r["status"], r["error"], r["harness"]["stderr_tail"][-300:]) for r in rows
              if r["reward"] != 1.0}
    assert not failed, failed
    by_id = {t.id: t for t in tasks}
    for row in rows:
        task = by_id[row["task_id"]]
        # The reference calls reached the environment through the harness's MCP client, in order.
        assert [u["name"] for u in row["harness"]["tool_uses"]] == [c.name for c in task.reference_solution]
        assert row["harness"]["exit_code"] == 0 and row["harness"]["prefix_breaks"] == 0
        assert row["final_answer"] == task.expected_answer
        assert row["info"]["prompt_style"] == "compact"  # the default model's style: teacher rows for the student
        assert row["policy"] == "oracle-instructing" and row["token_samples"] == []
    manifest = read_manifest(out)
    assert manifest["kind"] == "harness" and manifest["status"] == "complete" and manifest["command"] == command
    assert "pass rate 16/16" in result.output
    assert json.loads(json.dumps(rows[0]))["schema_version"] == "toolgym.rollout_row/1"
