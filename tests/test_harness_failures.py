"""What a harness can do wrong, and what its row says: killed mid-episode or hanging is an infrastructure error with
its stderr tail (never scored, its process group gone); one that never calls a tool is a scored failure; one cut
by the endpoint's limit is truncated and scored; a run killed mid-way resumes to exactly one row per pair."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from test_harness_support import LOOP_HARNESS, booking_tasks, script_harness, write_dataset
from test_rollout_support import subprocess_env
from toolgym.harness.runner import run_harness
from toolgym.policy.instructing_oracle import InstructingOraclePolicy
from toolgym.rollout.results import RESULTS_FILE, error_cause, read_rows, row_key
from toolgym.schema import Task

# Calls the model, makes the tool call it got through MCP, then dies as an OOM kill would.
KILLED_MID_EPISODE = '''
import asyncio, json, os, signal, sys
from mcp import Client
from openai import OpenAI

reply = OpenAI(max_retries=0).chat.completions.create(
    model=os.environ["OPENAI_MODEL"], messages=[{"role": "user", "content": os.environ["TOOLGYM_TASK_PROMPT"]}],
    tools=[{"type": "function", "function": {"name": "list_cities", "parameters": {"type": "object"}}}]
).choices[0].message

async def call() -> None:
    async with Client(os.environ["TOOLGYM_MCP_URL"]) as client:
        await client.call_tool("list_cities", {})

asyncio.run(call())
print("about to be killed", file=sys.stderr, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
'''
# Starts a child that would outlive it, then hangs.
HANGING = '''
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(sys.argv[1], "w").write(str(child.pid))
print("waiting forever", file=sys.stderr, flush=True)
time.sleep(600)
'''
CRASHING = '''
import sys
print("Traceback (most recent call last):\\nValueError: the harness's own bug", file=sys.stderr)
sys.exit(3)
'''
# Asks the model once and stops there, whatever it answered.
NO_TOOLS = '''
import os
from openai import OpenAI
OpenAI(max_retries=0).chat.completions.create(
    model=os.environ["OPENAI_MODEL"], messages=[{"role": "user", "content": os.environ["TOOLGYM_TASK_PROMPT"]}])
'''


def _run(tmp_path: Path, tasks: list[Task], command: str, **options: Any) -> list[dict[str, Any]]:
    out = tmp_path / "run"
    asyncio.run(run_harness(tasks, InstructingOraclePolicy(prompt_style="compact"), command=command, out_dir=out,
                            cwd=tmp_path, **options))
    return read_rows(out / RESULTS_FILE)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as handle:  # a zombie waiting for its reaper has gone too
        return handle.read().split()[2] != "Z"


def test_a_harness_killed_mid_episode_is_an_infrastructure_error_with_its_stderr(tmp_path: Path) -> None:
    [task] = booking_tasks(1)
    [row] = _run(tmp_path, [task], script_harness(tmp_path, "killed", KILLED_MID_EPISODE))
    assert row["status"] == "error" and row["reward"] is None and row["partial_score"] is None
    assert error_cause(row["error"]) == "harness error"
    assert "SIGKILL" in row["error"] and "about to be killed" in row["error"]
    # What it did before it died is kept for the record, but nothing is scored.
    assert [u["name"] for u in row["harness"]["tool_uses"]] == ["list_cities"]
    assert row["harness"]["requests"] == 1 and row["checks"] == []


def test_a_hanging_harness_times_out_as_an_error_and_its_process_group_is_killed(tmp_path: Path) -> None:
    [task] = booking_tasks(1)
    pid_file = tmp_path / "child.pid"
    command = f"{script_harness(tmp_path, 'hanging', HANGING)} {pid_file}"
    began = time.monotonic()
    [row] = _run(tmp_path, [task], command, timeout_s=4.0)
    assert time.monotonic() - began < 60
    assert row["status"] == "error" and row["reward"] is None
    assert error_cause(row["error"]) == "timeout" and "waiting forever" in row["error"]
    assert row["harness"]["timed_out"] and row["harness"]["exit_code"] is None
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the harness's child outlived the episode"


def test_crashes_are_errors_and_an_agent_that_never_calls_a_tool_is_a_scored_failure(tmp_path: Path) -> None:
    tasks = list(booking_tasks(2))
    crashed = _run(tmp_path / "crash", tasks, script_harness(tmp_path, "crashing", CRASHING))
    for row in crashed:
        assert row["status"] == "error" and "exited with code 3" in row["error"]
        assert "the harness's own bug" in row["error"] and row["harness"]["stderr_tail"].endswith("own bug")
    idle = _run(tmp_path / "idle", tasks, script_harness(tmp_path, "no_tools", NO_TOOLS))
    for row in idle:
        assert row["status"] == "ok" and row["reward"] == 0.0 and row["checks"], row["error"]
        assert row["harness"]["tool_uses"] == [] and row["harness"]["requests"] == 1


def test_the_endpoints_turn_limit_truncates_and_the_episode_is_still_scored(tmp_path: Path) -> None:
    task = next(t for t in booking_tasks(16) if len(t.reference_solution) >= 2)
    [row] = _run(tmp_path, [task], LOOP_HARNESS, max_turns=1)
    assert row["status"] == "truncated" and row["stop_condition"] == "max_turns"
    assert row["reward"] == 0.0 and row["harness"]["requests"] == 1 and row["harness"]["truncated_by"] == "max_turns"
    assert row["harness"]["exit_code"] != 0  # the harness failed on the refusal; the limit, not it, decided


def test_a_killed_run_resumes_to_exactly_one_row_per_task_and_sample(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "data", booking_tasks(2))
    out = tmp_path / "run"
    command = [sys.executable, "-m", "toolgym.cli.main", "harness", "run", "--tasks", str(dataset), "--command",
               LOOP_HARNESS, "--policy", "oracle", "--out", str(out), "--samples", "3", "--concurrency", "2",
               "--no-progress"]
    results = out / RESULTS_FILE
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=subprocess_env())
    deadline = time.monotonic() + 300
    while (not results.exists() or results.read_bytes().count(b"\n") < 2) and process.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    before = read_rows(results)
    assert 2 <= len(before) < 6, f"the run was not cut mid-way ({len(before)} of 6 rows)"
    with open(results, "ab") as handle:  # what a kill in the middle of a write leaves behind
        handle.write(b'{"schema_version": "toolgym.rollout_row/1", "example_id": "booking/')

    finished = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    rows = read_rows(results)
    keys = [row_key(r) for r in rows]
    assert len(keys) == len(set(keys)) == 6
    assert rows[: len(before)] == before  # finished episodes were kept, not run again
    assert all(r["reward"] == 1.0 for r in rows[len(before):]), [r["error"] for r in rows]
    assert "dropped a torn last line" in finished.stdout and f"resumed {len(before)}" in finished.stdout
