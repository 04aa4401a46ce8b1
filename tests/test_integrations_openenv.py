"""toolgym as OpenEnv environments: OpenEnv's own server on 127.0.0.1, driven by OpenEnv's own clients."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from test_integrations_support import APP, app_tasks

openenv = pytest.importorskip("openenv", reason="OpenEnv is an optional extra: pip install 'toolgym[openenv]'")

from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction  # noqa: E402
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from openenv.core.mcp_client import MCPToolClient  # noqa: E402

from toolgym.agent.episode import DONE_TOOL  # noqa: E402
from toolgym.envs import make_env  # noqa: E402
from toolgym.integrations.openenv import ToolgymMCPEnvironment  # noqa: E402
from toolgym.schema.jsonl import write_jsonl  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`python -m toolgym.integrations.openenv` on a free port of 127.0.0.1; yields its base URL."""
    tasks_file = tmp_path_factory.mktemp("openenv") / "tasks.jsonl"
    write_jsonl(tasks_file, list(app_tasks()))
    process = subprocess.Popen(
        [sys.executable, "-m", "toolgym.integrations.openenv", "--env", APP, "--tasks", str(tasks_file),
         "--host", "127.0.0.1", "--port", "0"],
        stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert match, f"no URL from the server: {line!r}"
        url = match.group(0)
        _wait_healthy(url)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _wait_healthy(url: str) -> None:
    import httpx

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} never became healthy")


def _text(result: Any) -> str:
    """The text of a tool result as OpenEnv's client hands it back (FastMCP data, or the MCP content)."""
    if isinstance(result, str):
        return result
    content = result.get("content") if isinstance(result, dict) else None
    return "".join(block.get("text", "") for block in content or []) if content else json.dumps(result)


def test_an_oracle_episode_over_openenvs_client_earns_toolgyms_reward(server: str) -> None:
    task = next(t for t in app_tasks() if t.expected_answer)
    with MCPToolClient(base_url=server).sync() as env:
        env.reset(task_id=task.id)
        schemas = {tool.name: tool.input_schema for tool in env.list_tools()}
        # toolgym's own schemas, untouched, and the done tool that ends the episode
        assert schemas == {s.name: s.parameters for s in make_env(APP).tool_specs("agent")} | {"done": DONE_TOOL.parameters}
        for call in task.reference_solution:
            assert not _text(env.call_tool(call.name, **call.arguments)).startswith("Error")
        with pytest.raises(RuntimeError, match="unknown argument"):  # toolgym's readable error, as an MCP error
            env.call_tool(task.reference_solution[0].name, nonsense=1)
        result = env.step(CallToolAction(tool_name="done", arguments={"answer": task.expected_answer}))
        assert result.done and result.reward == 1.0
        verdict = json.loads(_text(result.observation.result))
        assert verdict["partial_score"] == 1.0 and all(c["passed"] for c in verdict["checks"])


def test_a_wrong_answer_scores_zero_with_partial_credit_and_sessions_are_isolated(server: str) -> None:
    task = next(t for t in app_tasks() if t.expected_answer and len(t.checks) > 1)
    with MCPToolClient(base_url=server).sync() as first, MCPToolClient(base_url=server).sync() as second:
        first.reset(task_id=task.id)
        second.reset(task_id=task.id)
        for call in task.reference_solution:
            first.call_tool(call.name, **call.arguments)
        result = first.step(CallToolAction(tool_name="done", arguments={"answer": "no idea"}))
        assert result.done and result.reward == 0.0
        assert 0.0 < json.loads(_text(result.observation.result))["partial_score"] < 1.0
        with pytest.raises(RuntimeError, match="episode has ended"):
            first.call_tool("done", answer="again")
        assert second.step(CallToolAction(tool_name="done", arguments={"answer": task.expected_answer})).done


def test_reset_hands_over_the_task_prompt_and_state_the_outcome(server: str) -> None:
    task = app_tasks()[0]
    with GenericEnvClient(base_url=server).sync() as env:
        observation = env.reset(task_id=task.id).observation
        assert observation["task_id"] == task.id and observation["prompt"] == task.prompt
        assert [m["role"] for m in observation["messages"]] == ["system", "user"]
        assert observation["env_variables"] == task.env_variables
        state = env.state()
        assert state["task_id"] == task.id and state["status"] == "running"


def test_the_environment_in_process_refuses_tasks_it_cannot_run() -> None:
    task = app_tasks()[0]
    with pytest.raises(ValueError, match="runs in"):
        ToolgymMCPEnvironment("mail", [task])
    env = ToolgymMCPEnvironment(APP, [task])
    with pytest.raises(ValueError, match="no task"):
        env.reset(task_id="missing")
    assert env.reset(seed=5).task_id == task.id
    env.close()


def test_compositions_are_environments_too() -> None:
    env = ToolgymMCPEnvironment("mail+drive")
    tools = env.step(ListToolsAction())
    assert {t.name for t in tools.tools} == {s.name for s in make_env("mail+drive").tool_specs("agent")} | {"done"}
    env.close()

