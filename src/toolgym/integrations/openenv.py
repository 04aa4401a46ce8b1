"""toolgym's apps as OpenEnv environments: one `MCPEnvironment` per app or composition, served by OpenEnv.

OpenEnv (`openenv-core`) is what TRL, SkyRL, ART and Fleet consume; one adapter reaches them all.

- `reset(task_id=... | seed=...)` starts a task of the served task set on a fresh copy of the seed; the
  observation carries the task's prompt (toolgym's system and user messages, full prompt style: the tools
  travel as MCP schemas) and its env_variables. With no task set, `reset(env_variables=...)` opens the app.
- The MCP tools (`ListToolsAction`, `CallToolAction`) are the app's agent tools with toolgym's own JSON
  schemas, plus `done(answer)`. A call the model got wrong is an MCP error result carrying toolgym's
  readable message; the episode goes on.
- `done` ends the episode: its observation has `done=True` and `reward` = toolgym's verdict, and its result
  text is the verdict as JSON (reward, partial_score, each check). An infrastructure failure (a crashed tool,
  a broken verifier) also ends the episode, with `reward=None`: never a 0 that poisons a group's advantages.
  `state` holds the same outcome for clients that ask (`GenericEnvClient.state()`).

Serve: `python -m toolgym.integrations.openenv --env tickets --tasks tasks.jsonl --port 8000`; connect with
OpenEnv's `MCPToolClient(base_url=...)`. Each WebSocket session gets its own environment instance.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from fastmcp import FastMCP
from fastmcp.tools import Tool as FastMCPTool
from fastmcp.tools.base import ToolResult
from openenv.core.env_server.http_server import create_app as openenv_create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State
from pydantic import PrivateAttr

from toolgym.agent.episode import DONE_TOOL
from toolgym.chat.render import DONE_TOOL_NAME, Renderer
from toolgym.envs import EnvError, Environment
from toolgym.envs.registry import make_env
from toolgym.schema import Task, Verdict
from toolgym.verify.task import verify_task

EnvFactory = Callable[[str], Environment]
DEFAULT_MAX_SESSIONS = 16  # each session holds a copy of the app databases


class ToolgymObservation(Observation):
    """What `reset` returns: the task to solve (the step observations are OpenEnv's MCP ones)."""

    task_id: str | None = None
    env: str = ""
    prompt: str = ""
    messages: list[dict[str, Any]] = []
    env_variables: dict[str, str] = {}


class ToolgymState(State):
    """The episode so far and, once it ended, toolgym's verdict."""

    task_id: str | None = None
    env: str = ""
    status: str = "running"  # running, ok (verified), error (infrastructure: no reward)
    reward: float | None = None
    partial_score: float | None = None
    final_answer: str | None = None
    error: str | None = None
    checks: list[dict[str, Any]] = []


class _AppTool(FastMCPTool):
    """One toolgym tool as a FastMCP tool with toolgym's own schema; the call goes to the episode's env."""

    _toolgym_call: Callable[[str, dict[str, Any]], tuple[str, bool]] = PrivateAttr()

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        text, is_error = self._toolgym_call(self.name, arguments)
        return ToolResult(content=text, is_error=is_error)


def _verdict_json(verdict: Verdict) -> str:
    return json.dumps({
        "reward": verdict.reward, "partial_score": verdict.partial_score, "error": verdict.error,
        "checks": [{"label": c.label, "passed": c.passed, "detail": c.detail} for c in verdict.checks],
    }, ensure_ascii=False)


class ToolgymMCPEnvironment(MCPEnvironment):
    """An app (or composition) of toolgym as an OpenEnv MCP environment over a task set."""

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True  # every instance has its own databases

    def __init__(self, env_name: str, tasks: Sequence[Task] = (), *, env_factory: EnvFactory = make_env) -> None:
        for task in tasks:
            if task.env != env_name:
                raise ValueError(f"task {task.id!r} runs in {task.env!r}, not in {env_name!r}")
            if task.user_scenario is not None:
                raise ValueError(f"task {task.id!r} needs a simulated user, which this environment does not run")
        self._env = env_factory(env_name)
        self._tasks = list(tasks)
        self._by_id = {t.id: t for t in self._tasks}
        self._next = 0
        self._specs = [*self._env.tool_specs("agent"), DONE_TOOL]
        server = FastMCP(f"toolgym-{self._env.name}", instructions=self._env.policy)
        for spec in self._specs:
            tool = _AppTool(name=spec.name, description=spec.description, parameters=spec.parameters)
            tool._toolgym_call = self._call
            server.add_tool(tool)
        super().__init__(server)
        self._task: Task | None = None
        self._state = ToolgymState(env=self._env.name)
        self._env.reset({})

    # -- episodes -------------------------------------------------------------------------------

    def _pick(self, seed: int | None, task_id: str | None) -> Task | None:
        if task_id is not None:
            if task_id not in self._by_id:
                raise ValueError(f"no task {task_id!r} in this environment's task set")
            return self._by_id[task_id]
        if not self._tasks:
            return None
        if seed is not None:
            return self._tasks[seed % len(self._tasks)]
        task = self._tasks[self._next % len(self._tasks)]
        self._next += 1
        return task

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None,
              env_variables: dict[str, str] | None = None, **kwargs: Any) -> ToolgymObservation:
        """A fresh copy of the seed for the chosen task (`task_id`, else `seed` or the next one in order)."""
        task = self._pick(seed, task_id)
        variables = dict(task.env_variables) if task is not None else dict(env_variables or {})
        self._env.reset(variables)
        self._task = task
        self._state = ToolgymState(episode_id=episode_id or str(uuid.uuid4()), step_count=0,
                                   task_id=task.id if task else None, env=self._env.name)
        messages: list[dict[str, Any]] = []
        if task is not None:
            # Full style: the policy and the context in the system prompt; the tools arrive as MCP schemas.
            rendered = Renderer(None, prompt_style="full").initial_messages(task, self._specs, self._env.policy)
            messages = [m.to_openai() for m in rendered]
        return ToolgymObservation(task_id=self._state.task_id, env=self._env.name, prompt=task.prompt if task else "",
                                  messages=messages, env_variables=variables, done=False, reward=None)

    def _end(self, status: str, verdict: Verdict | None = None, error: str | None = None) -> None:
        state = self._state
        state.status, state.error = status, error
        if verdict is not None and status == "ok":
            state.reward, state.partial_score = verdict.reward, verdict.partial_score
            state.checks = [{"label": c.label, "passed": c.passed, "detail": c.detail} for c in verdict.checks]

    def _call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """(result text, is_error) of one tool call; `done` verifies and ends the episode."""
        if self._state.status != "running":
            return "Error: this episode has ended; reset the environment for the next one.", True
        if name == DONE_TOOL_NAME:
            answer = arguments.get("answer")
            self._state.final_answer = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
            if self._task is None:
                self._end("ok")
                return "Done (no task to verify).", False
            verdict = verify_task(self._task, self._env, self._state.final_answer)
            self._end("error" if verdict.error else "ok", verdict, verdict.error)
            return _verdict_json(verdict), verdict.error is not None
        try:
            result = self._env.call_tool(name, arguments)
        except EnvError as exc:  # infrastructure: the episode ends without a reward
            self._end("error", error=str(exc))
            return f"Error: environment failure, the episode ends: {exc}", True
        return result.content, result.is_error

    def _finish(self, observation: Observation) -> Observation:
        self._state.step_count += 1
        if self._state.status != "running":
            observation.done = True
            observation.reward = self._state.reward if self._state.status == "ok" else None
        return observation

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return self._finish(super().step(action, timeout_s=timeout_s, **kwargs))

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return self._finish(await super().step_async(action, timeout_s=timeout_s, **kwargs))

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return Observation(done=False, reward=None,
                           metadata={"error": f"unsupported action {type(action).__name__}: use list_tools or call_tool"})

    @property
    def state(self) -> ToolgymState:
        return self._state

    def close(self) -> None:
        self._env.close()
        super().close()


def create_app(env_name: str, tasks: Sequence[Task] = (), *, max_sessions: int = DEFAULT_MAX_SESSIONS,
               env_factory: EnvFactory = make_env) -> Any:
    """OpenEnv's FastAPI app (WebSocket `/ws`, HTTP reset/step/state, MCP) for one toolgym environment."""
    tasks = tuple(t for t in tasks if t.env == env_name)
    factory = functools.partial(ToolgymMCPEnvironment, env_name, tasks, env_factory=env_factory)
    return openenv_create_app(factory, CallToolAction, CallToolObservation, env_name=f"toolgym-{env_name}",
                              max_concurrent_envs=max_sessions)


def main(argv: list[str] | None = None) -> None:
    """Serve one environment with OpenEnv's server; prints the base URL (the real port with --port 0)."""
    import uvicorn

    from toolgym.envs.mcp.server import bind_socket
    from toolgym.rollout.tasks import load_tasks

    parser = argparse.ArgumentParser(description="Serve a toolgym environment as an OpenEnv MCP environment.")
    parser.add_argument("--env", required=True, help="an app ('tickets') or a composition ('mail+drive')")
    parser.add_argument("--tasks", type=Path, default=None, help="task set (tasks.jsonl or dataset folder)")
    parser.add_argument("--split", default=None, help="only tasks of this split (train, heldout_tasks, ...)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS)
    args = parser.parse_args(argv)
    tasks: list[Task] = []
    if args.tasks is not None:
        _, tasks = load_tasks(args.tasks, split=args.split, envs=[args.env])
    app = create_app(args.env, tasks, max_sessions=args.max_sessions)
    sock = bind_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    print(f"toolgym env {args.env} ({len(tasks)} tasks) serving OpenEnv on http://{host}:{port}", file=sys.stderr,
          flush=True)
    try:
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    finally:
        sock.close()


if __name__ == "__main__":
    main()
