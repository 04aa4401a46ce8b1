"""RemoteMCPEnvironment: an Environment backed by a remote MCP server (stdio command or HTTP URL).

It offers the methods the episode loop, the verifiers and replay use - `reset(env_variables)`,
`tool_specs()`, `call_tool(name, arguments, caller)`, `calls`, `diff()`, `db()`, `name`,
`version`, `policy`, `apps`, `context`, `close()` - so hosted or third-party MCP environments
run in rollouts with their tasks.

Sync over async: the MCP client lives in an event loop on a thread of its own (one per
environment, started on first use and joined by `close()`), so the Environment-style blocking
API also works from inside the rollout's event loop. `close()` ends the session and, for stdio,
the server process; a finalizer does the same for an environment that is dropped unclosed.

Two kinds of server:
- toolgym-served (`toolgym serve env`): `reset` sends `toolgym/reset` with the task's
  env_variables on the same session; `diff()` and `db()` fetch the session's state through
  `toolgym/diff` and `toolgym/database`, so every declarative check and sandboxed Python
  verifier runs unchanged.
- any other MCP server: each episode needs a state no other episode touched. Its `ResetHook`
  (reset_hook.py) says how: a reset tool, a state key per episode, or a fresh state directory per
  episode; with none, `reset` opens a new session (a new process for stdio, whose environment
  variables carry the task's env_variables). Answer and tool-call checks work; a check that needs
  state raises RemoteStateError (a ValueError), which the verifier turns into a verifier error
  naming the cause, never a 0.
"""

from __future__ import annotations

import logging
import shlex
import sqlite3
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import mcp_types as types
from mcp import Client, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParams

from toolgym.envs.context import EnvContext
from toolgym.envs.database import RowChange, connect_bytes
from toolgym.envs.environment import EnvError, ToolCallRecord, ToolResult
from toolgym.envs.mcp.protocol import (
    CALLER_META_KEY,
    DATABASE_METHOD,
    DIFF_METHOD,
    INFO_METHOD,
    PROTOCOL,
    RESET_METHOD,
    RESULT,
    DatabaseParams,
    DiffParams,
    ResetParams,
    decode_database,
    decode_row,
    toolgym_request,
)
from toolgym.envs.mcp.reset_hook import ResetHook, StateDirectory, new_state_key
from toolgym.envs.mcp.session import (
    Session,
    close_session,
    describe_error,
    owned_http_transport,
    parse_server,
)
from toolgym.envs.mcp.state import RemoteApp, RemoteStateError, UnavailableChanges
from toolgym.envs.mcp.stdout_noise import StdoutNoise
from toolgym.envs.mcp.tool_results import result_text
from toolgym.schema import ToolSpec

__all__ = ["DEFAULT_TIMEOUT_S", "RemoteApp", "RemoteMCPEnvironment", "RemoteStateError", "parse_server"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 60.0
# JSON-RPC errors a server uses for "no such tool" / "bad arguments": the agent's mistake, so the
# agent reads them as a tool error, as it would in-process. Anything else is the server breaking.
AGENT_ERROR_CODES = frozenset({types.INVALID_PARAMS, types.METHOD_NOT_FOUND})


@dataclass(eq=False)
class RemoteMCPEnvironment:
    """An Environment whose apps live behind an MCP server. Reuse across episodes with `reset`.

    `server` is an http(s) URL (Streamable HTTP) or a command (argv list, or a string that is
    shell-split) started as a stdio subprocess. `env_name` is the environment name the tasks use:
    a toolgym server must serve exactly that environment (checked on connect); any other server
    takes it as its name (default: what a toolgym server reports, else the server's own name).
    `headers` go with every HTTP request (e.g. Authorization); `process_env` is added to a stdio
    server's environment. For a server that is not toolgym's own: `reset_hook` isolates episodes
    (reset_hook.py), `hidden_tools` are never offered to the agent (e.g. a call-log tool), and
    `result_field` picks the field of a structured result the agent reads.
    """

    server: str | Sequence[str]
    env_name: str | None = None
    headers: Mapping[str, str] | None = None
    process_env: Mapping[str, str] | None = None
    cwd: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    reset_hook: ResetHook = field(default_factory=ResetHook)
    hidden_tools: Sequence[str] = ()
    result_field: str | None = None
    context: EnvContext = field(default_factory=EnvContext)
    calls: list[ToolCallRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.url, self.argv = parse_server(self.server)
        self.label = self.url or shlex.join(self.argv or [])
        if self.url is not None and self.reset_hook.state_dir_variable is not None:
            raise ValueError(
                f"MCP server {self.label}: state_dir_variable needs a stdio server (a process whose environment "
                "toolgym sets); an HTTP server's state cannot be pointed at a fresh directory"
            )
        self._hidden = set(self.hidden_tools) | ({self.reset_hook.reset_tool} if self.reset_hook.reset_tool else set())
        self._state_key: str | None = None  # this episode's key, when the hook passes one
        self._state_dir: StateDirectory | None = None  # the server process's own, with state_dir_variable
        self._holder: dict[str, Session | None] = {"session": None}
        self._finalizer = weakref.finalize(self, close_session, self._holder)
        self._info: dict[str, Any] | None = None  # toolgym/info of a toolgym server; None otherwise
        self._server_name = ""
        self._server_version = ""
        self._instructions = ""
        self._agent_tools: list[ToolSpec] = []
        self._session_env: dict[str, str] | None = None  # the env_variables the session holds
        self._fresh = False  # no tool call since the session began or was reset
        self._databases: dict[tuple[str, str], sqlite3.Connection] = {}
        self._warned_http_variables = False
        self._lock = threading.RLock()  # the verifier runs in a worker thread; sessions change under this lock
        self._noise = StdoutNoise(self.label)  # a stdio server's non-JSON-RPC stdout, logged once per episode

    # -- identity -------------------------------------------------------------------------------

    @property
    def toolgym_served(self) -> bool:
        self._ensure_session()
        return self._info is not None

    @property
    def name(self) -> str:
        if self.env_name:
            return self.env_name
        self._ensure_session()
        return str(self._info["env"]) if self._info is not None else self._server_name

    @property
    def version(self) -> str:
        self._ensure_session()
        return str(self._info["version"]) if self._info is not None else self._server_version

    @property
    def policy(self) -> str:
        self._ensure_session()
        return str(self._info["policy"]) if self._info is not None else self._instructions

    @property
    def apps(self) -> list[RemoteApp]:
        self._ensure_session()
        if self._info is not None:
            return [RemoteApp(a["name"], a.get("version", ""), a.get("data_id")) for a in self._info["apps"]]
        return [RemoteApp(self._server_name or self.label, self._server_version)]

    @property
    def state_dir(self) -> Path | None:
        """The server's private state directory this episode (with a state_dir_variable hook)."""
        return self._state_dir.path if self._state_dir is not None and self._session is not None else None

    # -- the session ----------------------------------------------------------------------------

    @property
    def _session(self) -> Session | None:
        return self._holder["session"]

    def _client_target(self, env_variables: Mapping[str, str], state_dir: StateDirectory | None
                       ) -> tuple[Client, Any | None]:
        client_info = types.Implementation(name="toolgym", version="remote-env")
        if self.url is not None:
            transport: Any = self.url
            if self.headers:
                transport = owned_http_transport(self.url, dict(self.headers))
            return Client(transport, read_timeout_seconds=self.timeout_s, client_info=client_info), None
        assert self.argv is not None
        stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - owned by the session
        # The SDK passes only a safe subset of this process's environment (PATH, HOME, …), so
        # no secret of the trainer reaches a third-party server unasked.
        process_env = {**(self.process_env or {}), **dict(env_variables)}
        if state_dir is not None and self.reset_hook.state_dir_variable is not None:
            process_env[self.reset_hook.state_dir_variable] = str(state_dir.path)
        params = StdioServerParameters(command=self.argv[0], args=self.argv[1:], env=process_env, cwd=self.cwd)
        transport = self._noise.watch(stdio_client(params, errlog=stderr))
        client = Client(transport, read_timeout_seconds=self.timeout_s, client_info=client_info,
                        message_handler=self._noise.handle)
        return client, stderr

    def _ensure_session(self, env_variables: Mapping[str, str] | None = None) -> Session:
        with self._lock:
            session = self._session
            if session is not None and session.broken is None:
                return session
            return self._open_session(env_variables)

    def _open_session(self, env_variables: Mapping[str, str] | None) -> Session:
        self._end_session()
        variables = dict(env_variables if env_variables is not None else self.context.variables)
        # A third-party stdio server can only read env_variables from its process environment.
        state_dir = StateDirectory() if self.reset_hook.state_dir_variable and self.argv is not None else None
        target, stderr = self._client_target(variables, state_dir)
        session = Session(target, self.label, stderr)
        if state_dir is not None:
            session.after_close.append(state_dir.remove)
        self._state_dir = state_dir
        try:
            session.open(self.timeout_s)
        except BaseException as exc:
            tail = session.stderr_tail()
            session.close()
            noise = self._noise.summary()
            detail = (f"; server stderr: {tail}" if tail else "") + (f"; it printed {noise}" if noise else "")
            if isinstance(exc, TimeoutError):
                raise EnvError(f"MCP server {self.label} did not start within {self.timeout_s:g}s{detail}") from exc
            raise EnvError(f"cannot connect to MCP server {self.label}: {describe_error(exc)}{detail}") from exc
        self._holder["session"] = session
        try:
            self._learn_server(session)
        except BaseException:
            self._end_session()
            raise
        self._session_env = variables if self._info is None else None
        self._fresh = True
        return session

    def _learn_server(self, session: Session) -> None:
        client = session.client
        assert client is not None
        info = client.server_info
        self._server_name = info.name if info is not None else ""
        self._server_version = info.version if info is not None else ""
        self._instructions = client.instructions or ""
        try:
            reply = self._call(INFO_METHOD, None, session)
            self._info = reply if reply.get("protocol") == PROTOCOL else None
        except MCPError:
            self._info = None  # not a toolgym server: no state methods
        if self._info is not None and self.env_name and self._info["env"] != self.env_name:
            raise EnvError(
                f"MCP server {self.label} serves environment {self._info['env']!r}, not {self.env_name!r}"
            )
        self._agent_tools = self._list_tools(session)

    def _list_tools(self, session: Session) -> list[ToolSpec]:
        async def fetch(client: Client) -> list[types.Tool]:
            tools: list[types.Tool] = []
            cursor: str | None = None
            for _ in range(1000):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
            return tools

        tools = self._request(session, fetch)
        return [ToolSpec(name=t.name, description=t.description or "", parameters=dict(t.input_schema)) for t in tools]

    def _request(self, session: Session, make: Callable[[Client], Coroutine[Any, Any, T]]) -> T:
        """One request on the session; transport failures mark it broken (the next reset reconnects)."""
        try:
            return session.request(make, self.timeout_s + 5.0)
        except MCPError as exc:
            if exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):
                session.broken = describe_error(exc)
                tail = session.stderr_tail()
                detail = f"; server stderr: {tail}" if tail else ""
                raise EnvError(f"MCP session with {self.label} failed: {exc.message}{detail}") from exc
            raise
        except EnvError:
            raise
        except TimeoutError as exc:
            session.broken = f"no answer within {self.timeout_s:g}s"
            raise EnvError(f"MCP server {self.label} did not answer within {self.timeout_s:g}s") from exc
        except Exception as exc:
            session.broken = describe_error(exc)
            tail = session.stderr_tail()
            detail = f"; server stderr: {tail}" if tail else ""
            raise EnvError(f"MCP session with {self.label} failed: {describe_error(exc)}{detail}") from exc

    def _call(self, method: str, params: RequestParams | None, session: Session | None = None) -> dict[str, Any]:
        """A `toolgym/*` request; MCPError passes through for the caller to judge."""
        session = session or self._ensure_session()
        request = toolgym_request(method, params)

        async def send(client: Client) -> dict[str, Any]:
            return await client.session.send_request(request, RESULT)

        return self._request(session, send)

    def _end_session(self) -> None:
        with self._lock:
            self._drop_databases(everything=True)
            close_session(self._holder)

    # -- the Environment API --------------------------------------------------------------------

    def reset(self, env_variables: dict[str, str] | None = None) -> None:
        """A fresh state for the next episode, with these env_variables."""
        self._noise.flush()  # the episode that ends here
        variables = dict(env_variables or {})
        self.calls = []
        self.context = EnvContext(variables)
        self._drop_databases()
        session = self._ensure_session(variables)
        if self._info is not None:
            try:
                self._reset_remote(variables, session)
            except EnvError:
                # The session may have died or expired since the last episode: one new session.
                self._end_session()
                self._reset_remote(variables, self._ensure_session(variables))
        else:
            self._reset_third_party(variables)
        if self._info is None and self.url is not None and variables and not self._warned_http_variables:
            self._warned_http_variables = True
            logger.warning(
                "MCP server %s is not a toolgym server: env_variables %s cannot be sent to it over HTTP",
                self.label, sorted(variables),
            )
        self._fresh = True

    def _reset_remote(self, variables: dict[str, str], session: Session) -> None:
        if self._info is None:  # a reconnect found a different server behind the same address
            raise EnvError(f"MCP server {self.label} no longer answers {INFO_METHOD}")
        try:
            self._call(RESET_METHOD, ResetParams(env_variables=variables), session)
        except MCPError as exc:
            raise EnvError(f"MCP server {self.label} refused {RESET_METHOD}: {exc}") from exc

    def _reset_third_party(self, variables: dict[str, str]) -> None:
        """The hook's isolation; without one, a new session (the only isolation MCP itself offers)."""
        hook = self.reset_hook
        same_variables = self._session_env == variables
        if not (same_variables and (self._fresh or hook.keeps_session)):
            self._end_session()
            self._ensure_session(variables)
        self._state_key = new_state_key(self.name) if hook.state_key_argument else None
        if hook.reset_tool is None:
            return
        try:
            self._run_reset_tool(hook.reset_tool)
        except EnvError:
            session = self._session
            if session is not None and session.broken is None:
                raise  # the server refused the reset: a new session would not change its answer
            # The session died since the last episode: one new session.
            self._end_session()
            self._ensure_session(variables)
            self._run_reset_tool(hook.reset_tool)

    def _run_reset_tool(self, name: str) -> None:
        arguments = self.reset_hook.reset_call_arguments(self._state_key, self.name)
        try:
            result = self._send_tool_call(self._ensure_session(), name, arguments, None)
        except MCPError as exc:
            raise EnvError(f"reset tool {name!r} on MCP server {self.label} failed: {exc}") from exc
        if result.is_error:
            raise EnvError(f"reset tool {name!r} on MCP server {self.label} failed: {result_text(result)[:500]}")

    def _send_tool_call(
        self, session: Session, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None,
    ) -> types.CallToolResult:
        async def send(client: Client) -> types.CallToolResult:
            return await client.call_tool(name, arguments, meta=meta)

        return self._request(session, send)

    def close(self) -> None:
        """End the session (and a stdio server process) and join the MCP thread. `reset` reopens."""
        self._end_session()
        self._noise.flush()

    def tool_specs(self, owner: str = "agent") -> list[ToolSpec]:
        self._ensure_session()
        if owner == "agent":
            if self._info is not None:
                return list(self._agent_tools)
            return [self.reset_hook.agent_spec(t) for t in self._agent_tools if t.name not in self._hidden]
        if self._info is not None:
            return [ToolSpec.model_validate(s) for s in self._info.get(f"{owner}_tools", [])]
        return []

    def call_tool(self, name: str, arguments: Any, caller: str = "agent") -> ToolResult:
        """Run a tool remotely. Tool errors come back as results; a broken server raises EnvError."""
        started = time.perf_counter()
        args = arguments if isinstance(arguments, dict) else {}
        session = self._ensure_session()
        self._fresh = False
        self._drop_databases()
        if caller != "agent" and self._info is None:
            return self._record(name, args, caller, started, f"MCP server {self.label} has no {caller}-side tools", True)
        meta = {CALLER_META_KEY: caller} if self._info is not None and caller != "agent" else None
        sent = args
        if self._info is None:
            if name in self._hidden:  # as a server answers for a tool it does not have
                return self._record(name, args, caller, started, f"Unknown tool: {name}", True)
            if self.reset_hook.state_key_argument is not None and self._state_key is None:
                self._state_key = new_state_key(self.name)
            sent = self.reset_hook.server_arguments(args, self._state_key)
        try:
            result = self._send_tool_call(session, name, sent, meta)
        except MCPError as exc:
            if exc.code in AGENT_ERROR_CODES:
                return self._record(name, args, caller, started, exc.message, True)
            self.calls.append(ToolCallRecord(name, args, caller, False, str(exc), time.perf_counter() - started))
            raise EnvError(f"tool {name!r} on MCP server {self.label} failed: {exc}") from exc
        except EnvError as exc:
            self.calls.append(ToolCallRecord(name, args, caller, False, str(exc), time.perf_counter() - started))
            raise
        text = result_text(result, self.result_field if self._info is None else None)
        if result.is_error:
            error = text.removeprefix("Error: ")
            return self._record(name, args, caller, started, error, True, content=text)
        self.calls.append(ToolCallRecord(name, args, caller, True, None, time.perf_counter() - started))
        return ToolResult(text)

    def _record(
        self, name: str, args: dict[str, Any], caller: str, started: float, error: str, is_error: bool,
        content: str | None = None,
    ) -> ToolResult:
        self.calls.append(ToolCallRecord(name, args, caller, False, error, time.perf_counter() - started))
        return ToolResult(content if content is not None else f"Error: {error}", is_error=is_error)

    # -- state for verifiers --------------------------------------------------------------------

    def _state_reason(self, what: str) -> str:
        return (
            f"MCP server {self.label} is not a toolgym server (no {INFO_METHOD}): its {what} cannot be read, "
            "so checks that need the database or diff cannot run against it"
        )

    def diff(self, app: str | None = None) -> list[RowChange]:
        """The session's net seed → current changes (prefixed 'app.table' when several apps are joined)."""
        self._ensure_session()
        if self._info is None:
            return UnavailableChanges(self._state_reason("diff"))
        try:
            reply = self._call(DIFF_METHOD, DiffParams(app=app))
        except MCPError as exc:
            raise ValueError(f"{DIFF_METHOD} on {self.label}: {exc}") from exc
        return [
            RowChange(c["table"], c["op"], int(c["rowid"]), decode_row(c.get("before")), decode_row(c.get("after")))
            for c in reply["changes"]
        ]

    def db(self, which: str = "current", app: str | None = None) -> sqlite3.Connection:
        """A read-only local copy of the session's `seed` or `current` database of an app."""
        self._ensure_session()
        if self._info is None:
            raise RemoteStateError(self._state_reason("database"))
        if which not in ("seed", "current"):
            raise ValueError(f"unknown database {which!r}; use 'seed' or 'current'")
        names = [a["name"] for a in self._info["apps"]]
        if app is None:
            if len(names) != 1:
                raise ValueError(f"environment {self.name!r} has several apps; name one of them")
            app = names[0]
        elif app not in names:
            raise ValueError(f"environment {self.name!r} has no app {app!r}")
        key = (which, app)
        if key not in self._databases:
            try:
                reply = self._call(DATABASE_METHOD, DatabaseParams(which=which, app=app))  # type: ignore[arg-type]
            except MCPError as exc:
                raise ValueError(f"{DATABASE_METHOD} on {self.label}: {exc}") from exc
            self._databases[key] = connect_bytes(decode_database(reply), read_only=True)
        return self._databases[key]

    def _drop_databases(self, everything: bool = False) -> None:
        """Current copies go stale with every call; seed copies only when the session ends."""
        for key in [k for k in self._databases if everything or k[0] == "current"]:
            self._databases.pop(key).close()

    def __enter__(self) -> RemoteMCPEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
