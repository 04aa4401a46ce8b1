"""Shared pieces of the MCP tests: `toolgym serve env` as a real subprocess, a third-party server, tasks.

Everything is real: servers are subprocesses speaking stdio or Streamable HTTP on 127.0.0.1 (a
free port picked by the server itself, `--port 0`), clients are the official `mcp` SDK.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from mcp import StdioServerParameters

from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.dataset.replay import replay_task
from toolgym.envs import get_app, make_env
from toolgym.schema import Task

URL_LINE = re.compile(r"serving MCP on (http://\S+)")


def serve_env_argv(env_name: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "toolgym.cli.main", "serve", "env", env_name, *extra]


def stdio_params(env_name: str, *extra: str) -> StdioServerParameters:
    argv = serve_env_argv(env_name, "--transport", "stdio", *extra)
    return StdioServerParameters(command=argv[0], args=argv[1:])


@contextlib.contextmanager
def http_server(env_name: str, *extra: str, startup_s: float = 120.0) -> Iterator[str]:
    """`toolgym serve env ENV --transport http --port 0` in a subprocess; yields its /mcp URL."""
    process = subprocess.Popen(
        serve_env_argv(env_name, "--transport", "http", "--port", "0", *extra),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    lines: list[str] = []
    found: list[str] = []
    seen = threading.Event()

    def drain() -> None:  # keep reading stderr so the server never blocks on a full pipe
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if not found and (match := URL_LINE.search(line)):
                found.append(match.group(1))
                seen.set()
        seen.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        if not seen.wait(startup_s) or not found:
            raise RuntimeError(f"toolgym serve env {env_name} did not start: {''.join(lines)[-2000:]}")
        yield found[0]
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        reader.join(5)


def child_pids() -> set[int]:
    """Live child processes of this test process (Linux /proc), to prove none is leaked."""
    me, children = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == me and fields[0] != "Z":
            children.add(int(entry.name))
    return children


def wait_until(condition, timeout_s: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@cache
def app_tasks(app: str) -> tuple[Task, ...]:
    """One task per family of `app` (the dataset build's own generator), each replaying to reward 1."""
    tasks = generate_app_tasks(get_app(app), BuildConfig(tasks_per_family=1))
    kept = tuple(t for t in tasks if replay_task(t).kept)
    assert len(kept) >= 6, f"too few {app} tasks replay to reward 1"
    return kept


def write_task(app: str, tool: str | None = None) -> Task:
    """A task whose reference solution writes (its replay leaves a non-empty diff)."""
    for task in app_tasks(app):
        if tool is not None and not any(c.name == tool for c in task.reference_solution):
            continue
        if leaves_changes(task):
            return task
    raise AssertionError(f"no {app} task writes with {tool}")


def leaves_changes(task: Task) -> bool:
    env = make_env(task.env)
    env.reset(task.env_variables)
    for call in task.reference_solution:
        env.call_tool(call.name, call.arguments)
    changed = bool(env.diff())
    env.close()
    return changed


THIRD_PARTY_SERVER = '''
"""A plain MCP server (the SDK's MCPServer), knowing nothing of toolgym: in-memory notes per process."""
import os
from mcp.server import MCPServer

server = MCPServer("notes-demo", version="0.3", instructions="Keep short notes for the user.")
NOTES: list[str] = []


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def remember(text: str) -> str:
    """Store a note."""
    NOTES.append(text)
    return f"{len(NOTES)} note(s) stored"


@server.tool()
def count_notes() -> int:
    """How many notes are stored."""
    return len(NOTES)


@server.tool()
def whoami() -> str:
    """The user this server runs for (from its environment)."""
    return os.environ.get("LOGGED_IN_USER", "nobody")


server.run("stdio")
'''


def third_party_argv(tmp_path: Path) -> list[str]:
    script = tmp_path / "notes_server.py"
    script.write_text(THIRD_PARTY_SERVER, encoding="utf-8")
    return [sys.executable, str(script)]
