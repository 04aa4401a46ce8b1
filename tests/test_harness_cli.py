"""`toolgym harness run`'s refusals and reruns: what it needs, tasks it cannot play, a resume with another
command, a task variable that would redirect the harness, and `--retry-errors`."""

from __future__ import annotations

import sys
from pathlib import Path

from typer.testing import CliRunner

from test_harness_support import booking_tasks, script_harness, write_dataset
from toolgym.cli.main import app
from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs import get_app
from toolgym.rollout.results import RESULTS_FILE, read_rows

# Fails on its first run in a folder, succeeds (without a tool call) from then on.
FLAKY = '''
import pathlib, sys
marker = pathlib.Path(sys.argv[1])
if not marker.exists():
    marker.write_text("ran")
    sys.exit("first run: a flaky failure")
'''


def _invoke(*arguments: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["harness", "run", "--no-progress", *arguments])
    return result.exit_code, result.output


def test_what_the_command_needs_and_tasks_it_cannot_play_are_usage_errors(tmp_path: Path) -> None:
    code, output = _invoke("--tasks", str(tmp_path), "--policy", "oracle", "--out", str(tmp_path / "run"))
    assert code == 2 and "needs --tasks, --command, --policy and --out" in output
    config = BuildConfig(apps=["phone_support"], tasks_per_family=1, heldout_envs=[], compositions=[])
    dual = [t for t in generate_app_tasks(get_app("phone_support"), config) if t.user_scenario is not None][:1]
    dataset = write_dataset(tmp_path / "dual", dual)
    code, output = _invoke("--tasks", str(dataset), "--command", "true", "--policy", "oracle",
                           "--out", str(tmp_path / "run"))
    assert code == 2 and "simulated user" in output and not (tmp_path / "run" / RESULTS_FILE).exists()


def test_a_resume_with_another_command_is_refused_and_retry_errors_runs_error_rows_again(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "data", booking_tasks(1))
    out = tmp_path / "run"
    command = f"{script_harness(tmp_path, 'flaky', FLAKY)} {tmp_path / 'marker'}"
    base = ["--tasks", str(dataset), "--policy", "oracle", "--out", str(out)]
    code, output = _invoke(*base, "--command", command)
    assert code == 0, output
    [first] = read_rows(out / RESULTS_FILE)
    assert first["status"] == "error" and "first run: a flaky failure" in first["error"]

    code, output = _invoke(*base, "--command", f"{sys.executable} -c pass")
    assert code == 2 and "different settings" in output and "command" in output

    code, output = _invoke(*base, "--command", command)  # a plain rerun keeps the error row
    assert code == 0 and "resumed 1" in output
    code, output = _invoke(*base, "--command", command, "--retry-errors")
    assert code == 0, output
    [retried] = read_rows(out / RESULTS_FILE)
    assert retried["status"] == "ok" and retried["reward"] == 0.0  # ran cleanly, never called a tool: scored


def test_a_task_variable_that_would_redirect_the_harness_is_refused(tmp_path: Path) -> None:
    [task] = booking_tasks(1)
    hostile = task.model_copy(update={"env_variables": {**task.env_variables, "PATH": "/tmp/evil"}})
    dataset = write_dataset(tmp_path / "data", [hostile])
    out = tmp_path / "run"
    code, output = _invoke("--tasks", str(dataset), "--command", "true", "--policy", "oracle", "--out", str(out))
    assert code == 0, output
    [row] = read_rows(out / RESULTS_FILE)
    assert row["status"] == "error" and row["error"].startswith("harness error: the task's env variable PATH")
