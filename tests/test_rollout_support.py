"""Shared pieces of the policy and rollout tests: the tiny model (built once), toy tasks, a real server.

Everything here is real: the tiny Qwen3 model comes from `init_tiny`, the server is
`toolgym serve policy` in a subprocess on 127.0.0.1, and the toy tasks run in the toy app.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import httpx

from toolgym.envs import Environment, make_env
from toolgym.envs.examples.toy import APP as TOY_APP
from toolgym.model.tiny import init_tiny
from toolgym.schema import (
    AnswerContains,
    DiffOnly,
    ExpectedChange,
    FieldEquals,
    RowExists,
    Task,
    ToolCall,
    ToolCalled,
)

ENV_VARIABLES = {"CURRENT_DATE": "2026-06-19", "LOGGED_IN_USER": "ana", "LOGGED_IN_NAME": "Ana Lee"}
CRASHING_VERIFIER = "def validate_task(env, final_answer=None):\n    raise RuntimeError('verifier bug: no such table')\n"


@cache
def tiny_model_dir() -> Path:
    """The tiny model, built with init_tiny once per test session into a temporary folder."""
    root = Path(tempfile.mkdtemp(prefix="toolgym-tiny-"))
    atexit.register(shutil.rmtree, root, True)
    return init_tiny(root / "tiny", hidden_size=64, layers=2, heads=4, kv_heads=2, seed=0)


def env_factory(name: str) -> Environment:
    """The registered apps, plus the toy app of the SDK tests under the name 'toy'."""
    return Environment([TOY_APP]) if name == "toy" else make_env(name)


def _toy(task_id: str, prompt: str, calls: list[ToolCall], **fields: object) -> Task:
    return Task(
        id=task_id, env="toy", env_version=TOY_APP.version, prompt=prompt, env_variables=dict(ENV_VARIABLES),
        reference_solution=calls, **fields,  # type: ignore[arg-type]
    )


def toy_tasks() -> list[Task]:
    """Three good toy tasks (replay to reward 1)."""
    return [
        _toy("toy/list/0", "List my notes.", [ToolCall(name="list_my_notes")],
             checks=[ToolCalled(name="list_my_notes"), DiffOnly(expected=[])],
             expected_answer="Here are your notes."),
        _toy("toy/add/0", "Add a note 'Buy milk' due tomorrow.",
             [ToolCall(name="add_note", arguments={"title": "Buy milk", "due": "tomorrow"})],
             checks=[RowExists(table="notes", where={"owner": "ana", "title": "Buy milk", "due": "2026-06-20"}),
                     DiffOnly(expected=[ExpectedChange(table="notes", op="insert", where={"title": "Buy milk"})])],
             expected_answer="Added 'Buy milk' for 2026-06-20."),
        _toy("toy/complete/0", "Mark note 1 as done.",
             [ToolCall(name="list_my_notes"), ToolCall(name="complete_note", arguments={"note_id": 1})],
             checks=[FieldEquals(table="notes", where={"id": 1}, field="done", value=1),
                     DiffOnly(expected=[ExpectedChange(table="notes", op="update", where={"id": 1}, fields=["done"])]),
                     AnswerContains(values=["done"])],
             expected_answer="Note 1 is done."),
    ]


def broken_tasks() -> list[Task]:
    """A task whose tool raises (a bug in the env) and one whose verifier crashes."""
    return [
        _toy("toy/crash/0", "Run the crash tool.", [ToolCall(name="crash")],
             checks=[DiffOnly(expected=[])], expected_answer="Done."),
        _toy("toy/bad_verifier/0", "List my notes.", [ToolCall(name="list_my_notes")],
             verifier_code=CRASHING_VERIFIER, expected_answer="Here are your notes."),
    ]


def suite_tasks(tasks_per_family: int = 1, apps: list[str] | None = None) -> list[Task]:
    """Tasks of every registered app and composition that builds now, kept only if their reference
    solution replays to reward 1 (apps under construction elsewhere are skipped, not failed)."""
    from toolgym.dataset.build import BuildConfig, generate_app_tasks, generate_composition_tasks
    from toolgym.dataset.replay import replay_task
    from toolgym.envs import app_names, get_app
    from toolgym.envs.multi import composition_names, get_composition

    config = BuildConfig(apps=apps or app_names(), tasks_per_family=tasks_per_family, heldout_envs=[],
                         compositions=[])
    tasks: list[Task] = []
    for name in config.apps:
        with contextlib.suppress(Exception):
            tasks.extend(generate_app_tasks(get_app(name), config))
    for name in [] if apps else composition_names():
        with contextlib.suppress(Exception):
            tasks.extend(generate_composition_tasks(get_composition(name), config))
    kept = []
    for task in tasks:
        with contextlib.suppress(Exception):
            if replay_task(task).kept:
                kept.append(task)
    return kept


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def subprocess_env() -> dict[str, str]:
    """The test process's environment, quiet, with torch on one thread (2 shared cores)."""
    env = dict(os.environ)
    env.update({"TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"})
    return env


class PolicyServer:
    """`toolgym serve policy` in a subprocess; `url` is its OpenAI base URL."""

    def __init__(self, model_dir: Path, *extra_args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.model = str(model_dir)
        self.log = tempfile.NamedTemporaryFile(prefix="toolgym-server-", suffix=".log", delete=False)  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolgym.cli.main", "serve", "policy", str(model_dir), "--port", str(self.port),
             "--batch-wait-ms", "20", *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT, env=subprocess_env(),
        )

    def wait_ready(self, timeout_s: float = 120.0) -> PolicyServer:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}: {self.output()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return self
            time.sleep(0.2)
        raise TimeoutError(f"server not ready after {timeout_s}s: {self.output()}")

    def generate_calls(self) -> int:
        return int(httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=5).json()["generate_calls"])

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")[-3000:]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def close(self) -> None:
        self.kill()
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)


@contextlib.contextmanager
def policy_server(model_dir: Path, *extra_args: str) -> Iterator[PolicyServer]:
    server = PolicyServer(model_dir, *extra_args)
    try:
        yield server.wait_ready()
    finally:
        server.close()
