"""RemoteMCPEnvironment: in-process parity, oracle rollouts over stdio and HTTP, third-party servers, recovery."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import tempfile
import threading
from pathlib import Path

import pytest

from test_mcp_support import (
    app_tasks,
    child_pids,
    http_server,
    leaves_changes,
    third_party_argv,
    wait_until,
    write_task,
)
from toolgym.agent.episode import run_episode
from toolgym.envs import EnvError, app_names, get_app, make_env
from toolgym.envs.mcp.factory import parse_remote_spec, remote_env_factory, toolgym_stdio_command
from toolgym.envs.mcp.remote import RemoteMCPEnvironment, RemoteStateError
from toolgym.policy.base import SamplingParams
from toolgym.policy.oracle import OraclePolicy
from toolgym.rollout.results import RESULTS_FILE, read_rows
from toolgym.rollout.runner import run_rollout
from toolgym.schema import AnswerContains, DiffOnly, RowExists, Task, ToolCall, ToolCalled
from toolgym.verify import verify_task

# A Fleet-form verifier that reads both databases: 1 iff the episode changed anything.
CHANGED_ANYTHING = """
def validate_task(env, final_answer=None):
    try:
        env.db("seed").diff(env.db("current")).expect_only([])
    except AssertionError:
        return 1
    return 0
"""


def _mcp_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("toolgym-mcp")]


def _no_leaks(children_before: set[int]) -> None:
    assert _mcp_threads() == []
    assert wait_until(lambda: child_pids() <= children_before), f"leaked processes {child_pids() - children_before}"


def test_remote_env_matches_in_process_state_results_and_verdict() -> None:
    task = write_task("booking", "book_flight")
    before = child_pids()
    local = make_env("booking")
    remote = RemoteMCPEnvironment(toolgym_stdio_command("booking"), env_name="booking")
    try:
        assert remote.toolgym_served
        assert (remote.name, remote.version, remote.policy) == (local.name, local.version, local.policy)
        assert [a.name for a in remote.apps] == ["booking"]
        assert remote.tool_specs() == local.tool_specs()
        for env in (local, remote):
            env.reset(task.env_variables)
            assert env.diff() == []
        calls = [*task.reference_solution, ToolCall(name="search_flights", arguments={"origin": 3})]
        for call in calls:
            mine, theirs = local.call_tool(call.name, call.arguments), remote.call_tool(call.name, call.arguments)
            assert (theirs.content, theirs.is_error) == (mine.content, mine.is_error)
        assert [(c.name, c.arguments, c.ok, c.error) for c in remote.calls] == \
               [(c.name, c.arguments, c.ok, c.error) for c in local.calls]
        assert remote.diff() == local.diff() != []
        assert remote.db("seed").serialize() == local.db("seed").serialize()
        table = remote.diff()[0].table
        query = f'SELECT * FROM "{table}" ORDER BY rowid'
        assert [tuple(r) for r in remote.db("current").execute(query)] == \
               [tuple(r) for r in local.db("current").execute(query)]
        python_task = task.model_copy(update={"verifier_code": CHANGED_ANYTHING})
        for checked in (task, python_task):
            ours, theirs = verify_task(checked, local, task.expected_answer), verify_task(checked, remote, task.expected_answer)
            assert theirs.error is None and theirs == ours and theirs.reward == 1.0
        remote.reset(task.env_variables)  # same session, fresh state
        assert remote.diff() == [] and remote.calls == []
    finally:
        remote.close()
        local.close()
    _no_leaks(before)


def _rollout(tasks: list[Task], env_factory, out: Path) -> dict[str, tuple]:  # type: ignore[no-untyped-def]
    summary = asyncio.run(run_rollout(tasks, OraclePolicy(), out_dir=out, concurrency=2, env_factory=env_factory))
    assert summary.episodes == len(tasks)
    rows = read_rows(out / RESULTS_FILE)
    return {
        r["task_id"]: (r["status"], r["error"], r["reward"], r["partial_score"], [c["passed"] for c in r["checks"]])
        for r in rows
    }


@pytest.mark.slow
def test_oracle_rollout_over_remote_mcp_scores_the_same_as_in_process(tmp_path: Path) -> None:
    """Booking and forum tasks (one per family), some with a sandboxed Python verifier too."""
    tasks = [*app_tasks("booking")[:6], *app_tasks("forum")[:6]]
    writer = write_task("forum")
    reader = next(t for t in app_tasks("booking") if not leaves_changes(t))
    tasks += [
        writer.model_copy(update={"id": writer.id + "+python", "verifier_code": CHANGED_ANYTHING}),
        reader.model_copy(update={"id": reader.id + "+python", "verifier_code": CHANGED_ANYTHING}),
    ]
    before = child_pids()
    in_process = _rollout(tasks, make_env, tmp_path / "local")
    assert sorted(r[2] for r in in_process.values()) == [0.0] + [1.0] * (len(tasks) - 1)  # the reader verifier says 0
    over_stdio = _rollout(tasks, remote_env_factory(["stdio"]), tmp_path / "stdio")
    with http_server("booking") as booking_url, http_server("forum") as forum_url:
        factory = remote_env_factory([f"booking={booking_url}", f"forum={forum_url}"])
        over_http = _rollout(tasks, factory, tmp_path / "http")
    assert over_stdio == in_process
    assert over_http == in_process
    _no_leaks(before)


@pytest.mark.slow
def test_third_party_server_runs_answer_and_tool_checks_and_refuses_state_checks(tmp_path: Path) -> None:
    before = child_pids()
    env = RemoteMCPEnvironment(third_party_argv(tmp_path), env_name="notes")
    try:
        assert not env.toolgym_served
        assert (env.name, env.version, env.policy) == ("notes", "0.3", "Keep short notes for the user.")
        assert {s.name for s in env.tool_specs()} == {"add", "remember", "count_notes", "whoami"}
        assert env.tool_specs("user") == []

        env.reset({"LOGGED_IN_USER": "ana"})
        assert env.call_tool("whoami", {}).content == "ana"  # env_variables reach a stdio server's environment
        assert env.call_tool("remember", {"text": "milk"}).content == "1 note(s) stored"
        assert env.call_tool("count_notes", {}).content == "1"
        bad = env.call_tool("add", {"a": "two", "b": 3})
        assert bad.is_error and "a" in bad.content and env.calls[-1].ok is False
        env.reset({"LOGGED_IN_USER": "ana"})  # a new session: the only isolation MCP offers
        assert env.call_tool("count_notes", {}).content == "0"
        env.reset({"LOGGED_IN_USER": "bo"})
        assert env.call_tool("whoami", {}).content == "bo"
        with pytest.raises(RemoteStateError, match="not a toolgym server"):
            env.db("current")

        def task(task_id: str, **fields: object) -> Task:
            return Task(id=task_id, env="notes", env_version="0.3", prompt="What is 2 + 3?",
                        reference_solution=[ToolCall(name="add", arguments={"a": 2, "b": 3})],
                        expected_answer="2 + 3 = 5", **fields)  # type: ignore[arg-type]

        answered = task("notes/answer", checks=[ToolCalled(name="add", arguments={"a": 2}), AnswerContains(values=["5"])])
        needs_rows = task("notes/rows", checks=[AnswerContains(values=["5"]), RowExists(table="notes", where={"id": 1})])
        needs_diff = task("notes/diff", checks=[DiffOnly(expected=[])])
        needs_python = task("notes/python", verifier_code=CHANGED_ANYTHING)

        async def run(t: Task):  # type: ignore[no-untyped-def]
            return await run_episode(t, env, OraclePolicy(), SamplingParams())

        episode = asyncio.run(run(answered))
        assert episode.status == "ok" and episode.reward == 1.0 and episode.final_answer == "2 + 3 = 5"
        for broken in (needs_rows, needs_diff):
            episode = asyncio.run(run(broken))
            assert episode.status == "error" and episode.verdict is not None and episode.verdict.error
            assert "not a toolgym server" in episode.error and "cannot run" in episode.error  # type: ignore[operator]
        episode = asyncio.run(run(needs_python))
        assert episode.status == "error" and "could not snapshot the databases" in episode.error  # type: ignore[operator]
    finally:
        env.close()
    _no_leaks(before)


def test_user_side_tools_go_through_mcp_with_their_caller() -> None:
    dual = next((name for name in app_names() if make_env(name).tool_specs("user")), None)
    if dual is None:
        pytest.skip("no registered app has user-side (dual-control) tools")
    local = make_env(dual)
    remote = RemoteMCPEnvironment(toolgym_stdio_command(dual), env_name=dual)
    try:
        assert remote.tool_specs("user") == local.tool_specs("user")
        assert not {s.name for s in remote.tool_specs("agent")} & {s.name for s in remote.tool_specs("user")}
        user_tool = local.tool_specs("user")[0].name
        variables = {"LOGGED_IN_USER": get_app(dual).world().query("SELECT username FROM users LIMIT 1")[0]["username"]}
        for env in (local, remote):
            env.reset(variables)
        as_agent = remote.call_tool(user_tool, {})
        assert as_agent.is_error and "belongs to the user" in as_agent.content
        assert remote.call_tool(user_tool, {}, caller="user").content == local.call_tool(user_tool, {}, caller="user").content
        assert remote.calls[-1].caller == "user" and remote.calls[-1].ok
    finally:
        remote.close()
        local.close()


def test_a_dead_server_is_an_env_error_and_the_next_reset_reconnects() -> None:
    before = child_pids()
    env = RemoteMCPEnvironment(toolgym_stdio_command("forum"), env_name="forum")
    try:
        env.reset({})
        server_pids = child_pids() - before
        assert server_pids
        for pid in server_pids:
            os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda: not (child_pids() & server_pids))
        with pytest.raises(EnvError, match=r"MCP session with .* failed"):
            env.call_tool("list_communities", {})
        assert env.calls[-1].ok is False
        env.reset({})
        assert child_pids() - before and not (child_pids() & server_pids)  # a new server process
        assert env.diff() == []
        local = make_env("forum")
        local.reset({})
        assert env.call_tool("list_communities", {}).content == local.call_tool("list_communities", {}).content
        local.close()
    finally:
        env.close()
    _no_leaks(before)


def test_specs_route_environments_and_a_mismatched_server_is_refused() -> None:
    assert parse_remote_spec("stdio").env is None
    assert parse_remote_spec("forum=http://127.0.0.1:9/mcp").env == "forum"
    assert parse_remote_spec("http://h:1/mcp?a=b").target == "http://h:1/mcp?a=b"
    assert parse_remote_spec("mail+drive=stdio:npx my-server --env {env}").server("mail+drive") == \
        ["npx", "my-server", "--env", "mail+drive"]
    assert parse_remote_spec("http://h/{env}/mcp").server("crm") == "http://h/crm/mcp"
    for bad in ("ftp://h/mcp", "forum=", "stdio:", "booking=sdtio"):
        with pytest.raises(ValueError, match="--env-mcp"):
            parse_remote_spec(bad)

    factory = remote_env_factory([f"forum=stdio:{' '.join(toolgym_stdio_command('booking'))}"])
    with pytest.raises(KeyError, match="no --env-mcp spec serves environment 'crm'"):
        factory("crm")
    mismatched = factory("forum")
    with pytest.raises(EnvError, match="serves environment 'booking', not 'forum'"):
        mismatched.reset({})
    mismatched.close()
    assert _mcp_threads() == []


def test_a_server_that_cannot_start_names_its_stderr() -> None:
    script = Path(tempfile.mkdtemp()) / "broken.py"
    script.write_text("import sys\nsys.stderr.write('cannot open the toolbox\\n')\nsys.exit(3)\n")
    env = RemoteMCPEnvironment(["python", str(script)], timeout_s=30)
    with pytest.raises(EnvError, match="cannot open the toolbox"):
        env.reset({})
    env.close()
    assert _mcp_threads() == []


def test_a_silent_server_times_out_and_an_absent_one_is_refused_without_leaks() -> None:
    before = child_pids()
    silent = RemoteMCPEnvironment(["python", "-c", "import time; time.sleep(120)"], timeout_s=3)
    with pytest.raises(EnvError, match="did not start within 3s"):
        silent.tool_specs()
    silent.close()
    _no_leaks(before)

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    absent = RemoteMCPEnvironment(f"http://127.0.0.1:{port}/mcp", timeout_s=10)
    with pytest.raises(EnvError, match=f"cannot connect to MCP server http://127.0.0.1:{port}/mcp"):
        absent.reset({})
    absent.close()
    assert _mcp_threads() == []


def test_http_with_headers_connects_resets_and_closes() -> None:
    with http_server("forum") as url:
        env = RemoteMCPEnvironment(url, env_name="forum", headers={"Authorization": "Bearer not-checked"})
        env.reset({"CURRENT_DATE": "2026-06-01"})
        assert env.toolgym_served and env.context.variables == {"CURRENT_DATE": "2026-06-01"}
        assert not env.call_tool("list_communities", {}).is_error
        assert env.diff() == []
        env.close()
        env.reset({})  # a closed environment reopens on reset, like Environment
        assert env.calls == []
        env.close()
    assert _mcp_threads() == []


def test_rollout_cli_runs_envs_over_mcp(tmp_path: Path) -> None:
    """`toolgym rollout --env-mcp stdio` runs the oracle through a toolgym MCP server: reward 1."""
    import json
    import subprocess
    import sys

    from toolgym.dataset.build import BuildConfig, generate_app_tasks
    from toolgym.envs import get_app
    from toolgym.schema.jsonl import write_jsonl

    tasks = generate_app_tasks(get_app("booking"), BuildConfig(tasks_per_family=1))[:2]
    write_jsonl(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "toolgym.cli.main", "rollout", "--tasks", str(tmp_path / "tasks.jsonl"),
         "--policy", "oracle", "--out", str(out), "--env-mcp", "stdio", "--no-progress"],
        capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in rows] == [1.0, 1.0]
    assert json.loads((out / "manifest.json").read_text())["config"]["env_mcp"] == ["stdio"]


def test_profile_specs_configure_the_reset_hook_per_env_and_bad_profiles_name_the_field(tmp_path: Path) -> None:
    profile = tmp_path / "notes.toml"
    profile.write_text(
        'server = ["python", "{env}_server.py"]\ncwd = "servers"\nhidden_tools = ["count_notes"]\n'
        'result_field = "parsed_content"\n[reset]\nreset_tool = "reset_state"\nstate_key_argument = "state_key"\n',
        encoding="utf-8",
    )
    spec = parse_remote_spec(f"notes=profile:{profile}")
    assert spec.env == "notes" and spec.profile is not None
    assert spec.server("notes") == ["python", "notes_server.py"]
    env = remote_env_factory([f"notes=profile:{profile}", "stdio"], headers={"Authorization": "Bearer key"})("notes")
    assert (env.argv, env.cwd, env.headers) == (["python", "notes_server.py"], str(tmp_path / "servers"), None)
    assert env.reset_hook.reset_tool == "reset_state" and env.reset_hook.state_key_argument == "state_key"
    assert (tuple(env.hidden_tools), env.result_field) == (("count_notes",), "parsed_content")
    env.close()

    json_profile = tmp_path / "notes.json"
    json_profile.write_text(json.dumps({"server": "http://127.0.0.1:9/mcp", "reset": {"reset_tool": "reset"}}))
    assert parse_remote_spec(f"profile:{json_profile}").profile.reset.reset_tool == "reset"  # type: ignore[union-attr]
    bad = {
        "missing.toml": ("hidden_tools = []\n", "field 'server': Field required"),
        "typo.toml": ('server = "x"\n[reset]\nreset_tol = "r"\n', "field 'reset.reset_tol': Extra inputs"),
        "http_dir.toml": ('server = "http://h/mcp"\n[reset]\nstate_dir_variable = "D"\n', "needs a stdio server"),
        "broken.toml": ("server = [\n", "MCP env profile"),
        "notes.yaml": ("server: x\n", "a profile is a .toml or .json file"),
    }
    for name, (text, message) in bad.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(ValueError, match="--env-mcp") as raised:
            parse_remote_spec(f"notes=profile:{tmp_path / name}")
        assert message in str(raised.value) and name in str(raised.value)
    for text in ("profile:", f"profile:{tmp_path / 'absent.toml'}"):
        with pytest.raises(ValueError, match="--env-mcp"):
            parse_remote_spec(text)
