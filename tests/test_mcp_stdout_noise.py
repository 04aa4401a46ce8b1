"""A third-party stdio MCP server that prints non-JSON-RPC lines on stdout: one summary per episode.

The server is a real subprocess speaking JSON-RPC by hand (as servers in other languages do), with a
banner at start and debug lines between its replies. The SDK would log each such line as an error
with a traceback; RemoteMCPEnvironment logs one warning per episode with the count and the first
line, and a server that dies or never answers still fails with an error that says what it printed.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from toolgym.envs import EnvError
from toolgym.envs.mcp.remote import RemoteMCPEnvironment

NOISY_SERVER = '''
import json
import sys

MODE = sys.argv[1]  # "serve", or "mute": print the banner, then never answer


def say(line):
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()


def answer(request_id, result=None, error=None):
    say(json.dumps({"jsonrpc": "2.0", "id": request_id, **({"error": error} if error else {"result": result})}))


NUMBER = {"type": "integer"}
TOOLS = [
    {"name": "add", "description": "Add two integers.",
     "inputSchema": {"type": "object", "properties": {"a": NUMBER, "b": NUMBER}, "required": ["a", "b"]}},
    {"name": "crash", "description": "Exit mid-call.", "inputSchema": {"type": "object", "properties": {}}},
]
say("raw notes server 0.1 starting")
say("loading plugins... done")
for raw in sys.stdin:
    message = json.loads(raw)
    if MODE == "mute" or "id" not in message:
        continue
    method, request_id = message.get("method"), message["id"]
    if method == "initialize":
        answer(request_id, {"protocolVersion": message["params"]["protocolVersion"],
                            "capabilities": {"tools": {}}, "serverInfo": {"name": "raw-notes", "version": "0.1"}})
    elif method == "tools/list":
        answer(request_id, {"tools": TOOLS})
    elif method == "tools/call" and message["params"]["name"] == "crash":
        say("fatal: out of cheese")
        sys.exit(3)
    elif method == "tools/call":
        arguments = message["params"]["arguments"]
        say(f"DEBUG add({arguments['a']}, {arguments['b']})")
        say('{"level": "info", "msg": "valid JSON, not a JSON-RPC message"}')
        answer(request_id, {"content": [{"type": "text", "text": str(arguments["a"] + arguments["b"])}]})
    else:
        answer(request_id, error={"code": -32601, "message": f"Method not found: {method}"})
'''
BANNER = "'raw notes server 0.1 starting'"
SDK_STDIO_LOGGER = "mcp.client.stdio"  # where the SDK logs each unparsable stdout line


def noisy_server(tmp_path: Path, mode: str = "serve", timeout_s: float = 30.0) -> RemoteMCPEnvironment:
    script = tmp_path / "noisy_server.py"
    script.write_text(NOISY_SERVER, encoding="utf-8")
    return RemoteMCPEnvironment([sys.executable, str(script), mode], env_name="notes", timeout_s=timeout_s)


def summaries(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The noise summaries logged; and no per-line record (nor any traceback) from the SDK."""
    assert [r for r in caplog.records if r.name.startswith(SDK_STDIO_LOGGER)] == []
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    return [r.getMessage() for r in caplog.records if "not JSON-RPC" in r.getMessage()]


def test_lines_that_are_not_json_rpc_are_one_warning_per_episode(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    env = noisy_server(tmp_path)
    try:
        env.reset({})  # episode 1: a new process prints its 2-line banner
        assert env.call_tool("add", {"a": 2, "b": 3}).content == "5"  # 2 more lines before each reply
        assert env.call_tool("add", {"a": 1, "b": 1}).content == "2"
        assert summaries(caplog) == []  # nothing yet: the episode has not ended
        env.reset({})  # episode 2: a new session, a new banner
        assert env.call_tool("add", {"a": 4, "b": 3}).content == "7"
    finally:
        env.close()
    logged = summaries(caplog)
    assert len(logged) == 2, logged
    assert logged[0].endswith(f"printed 6 line(s) on stdout that are not JSON-RPC messages (ignored); "
                              f"the first: {BANNER}")
    assert "printed 4 line(s)" in logged[1] and logged[1].endswith(BANNER)
    assert all(r.levelno == logging.WARNING for r in caplog.records if "not JSON-RPC" in r.getMessage())


def test_a_server_that_dies_mid_call_still_fails_the_call(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = noisy_server(tmp_path)
    try:
        env.reset({})
        with pytest.raises(EnvError, match=r"MCP session with .* failed"):
            env.call_tool("crash", {})
    finally:
        env.close()
    (logged,) = summaries(caplog)
    assert "printed 3 line(s)" in logged  # the banner and its last words, summarized after the failure


def test_a_server_that_only_prints_fails_to_start_saying_what_it_printed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = noisy_server(tmp_path, mode="mute", timeout_s=3)
    try:
        with pytest.raises(EnvError, match="did not start within 3s") as raised:
            env.reset({})
    finally:
        env.close()
    assert f"it printed 2 line(s) on stdout that are not JSON-RPC messages (ignored); the first: {BANNER}" in str(
        raised.value)
    assert summaries(caplog) == []  # said in the error, not again in the log
