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
- any other MCP server: `reset` opens a new session (a new process for stdio, whose environment
  variables carry the task's env_variables), since a session is the only isolation MCP offers.
  Answer and tool-call checks work; a check that needs state raises RemoteStateError (a
  ValueError), which the verifier turns into a verifier error naming the cause, never a 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shlex
import sqlite3
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, SupportsIndex, TypeVar

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
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
from toolgym.schema import ToolSpec

logger = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 15.0  # the SDK's stdio shutdown is bounded at ~6.5 s (stdin close, TERM, KILL)
_STDERR_TAIL = 2000
# JSON-RPC errors a server uses for "no such tool" / "bad arguments": the agent's mistake, so the
# agent reads them as a tool error, as it would in-process. Anything else is the server breaking.
AGENT_ERROR_CODES = frozenset({types.INVALID_PARAMS, types.METHOD_NOT_FOUND})


class RemoteStateError(ValueError):
    """The remote server exposes no state, so a check that reads the database or diff cannot run."""


@dataclass(frozen=True)
class RemoteApp:
    """What verifiers read of an app: its name (the sandbox snapshots `db(which, app.name)`)."""

    name: str
    version: str = ""
    data_id: str | None = None


class _UnavailableChanges(list[RowChange]):
    """The diff of a server without state: empty until something reads it, then a clear error.

    `evaluate_checks` computes the diff up front for every task; answer and tool-call checks
    never read it, so only the checks that need state fail - loudly.
    """

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def _refuse(self) -> RemoteStateError:
        return RemoteStateError(self.reason)

    def __iter__(self) -> Iterator[RowChange]:
        raise self._refuse()

    def __len__(self) -> int:
        raise self._refuse()

    def __bool__(self) -> bool:
        raise self._refuse()

    def __getitem__(self, index: SupportsIndex | slice) -> Any:
        raise self._refuse()


def parse_server(server: str | Sequence[str]) -> tuple[str | None, list[str] | None]:
    """(url, None) for http(s)://…, else (None, argv) of a stdio command (a string is shell-split)."""
    if isinstance(server, str):
        text = server.strip()
        if text.startswith(("http://", "https://")):
            return text, None
        argv = shlex.split(text)
    else:
        argv = [str(a) for a in server]
    if not argv:
        raise ValueError("an MCP server is a URL (http://…/mcp) or a command to run over stdio; got nothing")
    return None, argv


class _LoopThread:
    """An asyncio loop on a daemon thread; `run` submits a coroutine and blocks for its result."""

    def __init__(self, label: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._main, name=f"toolgym-mcp[{label}]", daemon=True)
        self.thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        # Let cancelled stragglers finish before the loop closes.
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None) -> T:
        if threading.current_thread() is self.thread:
            coroutine.close()
            raise RuntimeError("a RemoteMCPEnvironment method was called from its own MCP thread")
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout=timeout_s)
        except TimeoutError:
            future.cancel()
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop already stopped
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(CLOSE_TIMEOUT_S)


class _Session:
    """One MCP client session, held open by a task on the loop thread until `close()`."""

    def __init__(self, target: Client, label: str, stderr: Any | None) -> None:
        self.label = label
        self.stderr = stderr  # stdio: a temporary file holding the server's stderr
        self.loop_thread = _LoopThread(label)
        self.client: Client | None = None
        self.broken: str | None = None
        self._stop: asyncio.Event | None = None
        self._held: asyncio.Future[None] | None = None
        self._target = target

    def open(self, timeout_s: float) -> None:
        """Connect and initialize; on failure the caller reads `stderr_tail()`, then `close()`s."""
        self.loop_thread.run(self._open(), timeout_s)

    async def _open(self) -> None:
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._held = asyncio.ensure_future(self._hold(ready))
        self.client = await ready

    async def _hold(self, ready: asyncio.Future[Client]) -> None:
        # The SDK's task groups and cancel scopes must be entered and left by the same task.
        assert self._stop is not None
        try:
            async with self._target as client:
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            elif not isinstance(exc, asyncio.CancelledError):
                logger.debug("MCP session %s ended with %r", self.label, exc)
            if isinstance(exc, asyncio.CancelledError):
                raise

    def stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        try:
            self.stderr.flush()
            self.stderr.seek(0)
            return self.stderr.read()[-_STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""

    def request(self, make: Callable[[Client], Coroutine[Any, Any, T]], timeout_s: float) -> T:
        if self.broken is None and self._held is not None and self._held.done():
            self.broken = "the session ended (the server closed the connection)"
        if self.client is None or self.broken is not None:
            raise EnvError(f"MCP session with {self.label} is not open: {self.broken or 'closed'}")
        client = self.client
        return self.loop_thread.run(make(client), timeout_s)

    def close(self) -> None:
        thread = self.loop_thread
        if self._stop is not None and self._held is not None and not thread.loop.is_closed():
            async def finish() -> None:
                assert self._stop is not None and self._held is not None
                self._stop.set()
                if self.client is None:  # still connecting: nothing waits on _stop, so cancel it
                    self._held.cancel()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(self._held), CLOSE_TIMEOUT_S)
                if not self._held.done():
                    self._held.cancel()
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await self._held

            with contextlib.suppress(Exception):
                thread.run(finish(), CLOSE_TIMEOUT_S * 2)
        self.client = None
        self._stop = self._held = None
        thread.stop()
        if self.stderr is not None:
            with contextlib.suppress(OSError):
                self.stderr.close()
            self.stderr = None


def _close_session(holder: dict[str, _Session | None]) -> None:
    session = holder.get("session")
    holder["session"] = None
    if session is not None:
        session.close()


def _result_text(result: types.CallToolResult) -> str:
    """The text a model reads: text blocks joined; other blocks named; structured content as JSON."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{block.type} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


@dataclass(eq=False)
class RemoteMCPEnvironment:
    """An Environment whose apps live behind an MCP server. Reuse across episodes with `reset`.

    `server` is an http(s) URL (Streamable HTTP) or a command (argv list, or a string that is
    shell-split) started as a stdio subprocess. `env_name` is the environment name the tasks use:
    a toolgym server must serve exactly that environment (checked on connect); any other server
    takes it as its name (default: what a toolgym server reports, else the server's own name).
    `headers` go with every HTTP request (e.g. Authorization); `process_env` is added to a stdio
    server's environment.
    """

    server: str | Sequence[str]
    env_name: str | None = None
    headers: Mapping[str, str] | None = None
    process_env: Mapping[str, str] | None = None
    cwd: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    context: EnvContext = field(default_factory=EnvContext)
    calls: list[ToolCallRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.url, self.argv = parse_server(self.server)
        self.label = self.url or shlex.join(self.argv or [])
        self._holder: dict[str, _Session | None] = {"session": None}
        self._finalizer = weakref.finalize(self, _close_session, self._holder)
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

    # -- the session ----------------------------------------------------------------------------

    @property
    def _session(self) -> _Session | None:
        return self._holder["session"]

    def _client_target(self, env_variables: Mapping[str, str]) -> tuple[Client, Any | None]:
        client_info = types.Implementation(name="toolgym", version="remote-env")
        if self.url is not None:
            transport: Any = self.url
            if self.headers:
                transport = _owned_http_transport(self.url, dict(self.headers))
            return Client(transport, read_timeout_seconds=self.timeout_s, client_info=client_info), None
        assert self.argv is not None
        stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - owned by the session
        # The SDK passes only a safe subset of this process's environment (PATH, HOME, …), so
        # no secret of the trainer reaches a third-party server unasked.
        params = StdioServerParameters(
            command=self.argv[0], args=self.argv[1:], env={**(self.process_env or {}), **dict(env_variables)},
            cwd=self.cwd,
        )
        transport = stdio_client(params, errlog=stderr)
        return Client(transport, read_timeout_seconds=self.timeout_s, client_info=client_info), stderr

    def _ensure_session(self, env_variables: Mapping[str, str] | None = None) -> _Session:
        with self._lock:
            session = self._session
            if session is not None and session.broken is None:
                return session
            return self._open_session(env_variables)

    def _open_session(self, env_variables: Mapping[str, str] | None) -> _Session:
        self._end_session()
        variables = dict(env_variables if env_variables is not None else self.context.variables)
        # A third-party stdio server can only read env_variables from its process environment.
        target, stderr = self._client_target(variables)
        session = _Session(target, self.label, stderr)
        try:
            session.open(self.timeout_s)
        except BaseException as exc:
            tail = session.stderr_tail()
            session.close()
            detail = f"; server stderr: {tail}" if tail else ""
            if isinstance(exc, TimeoutError):
                raise EnvError(f"MCP server {self.label} did not start within {self.timeout_s:g}s{detail}") from exc
            raise EnvError(f"cannot connect to MCP server {self.label}: {_describe(exc)}{detail}") from exc
        self._holder["session"] = session
        try:
            self._learn_server(session)
        except BaseException:
            self._end_session()
            raise
        self._session_env = variables if self._info is None else None
        self._fresh = True
        return session

    def _learn_server(self, session: _Session) -> None:
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

    def _list_tools(self, session: _Session) -> list[ToolSpec]:
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

    def _request(self, session: _Session, make: Callable[[Client], Coroutine[Any, Any, T]]) -> T:
        """One request on the session; transport failures mark it broken (the next reset reconnects)."""
        try:
            return session.request(make, self.timeout_s + 5.0)
        except MCPError as exc:
            if exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):
                session.broken = _describe(exc)
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
            session.broken = _describe(exc)
            tail = session.stderr_tail()
            detail = f"; server stderr: {tail}" if tail else ""
            raise EnvError(f"MCP session with {self.label} failed: {_describe(exc)}{detail}") from exc

    def _call(self, method: str, params: RequestParams | None, session: _Session | None = None) -> dict[str, Any]:
        """A `toolgym/*` request; MCPError passes through for the caller to judge."""
        session = session or self._ensure_session()
        request = toolgym_request(method, params)

        async def send(client: Client) -> dict[str, Any]:
            return await client.session.send_request(request, RESULT)

        return self._request(session, send)

    def _end_session(self) -> None:
        with self._lock:
            self._drop_databases(everything=True)
            _close_session(self._holder)

    # -- the Environment API --------------------------------------------------------------------

    def reset(self, env_variables: dict[str, str] | None = None) -> None:
        """A fresh state for the next episode, with these env_variables."""
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
        elif not (self._fresh and self._session_env == variables):
            # A third-party server's only isolation is the session: start a new one.
            self._end_session()
            self._ensure_session(variables)
        if self._info is None and self.url is not None and variables and not self._warned_http_variables:
            self._warned_http_variables = True
            logger.warning(
                "MCP server %s is not a toolgym server: env_variables %s cannot be sent to it over HTTP",
                self.label, sorted(variables),
            )
        self._fresh = True

    def _reset_remote(self, variables: dict[str, str], session: _Session) -> None:
        if self._info is None:  # a reconnect found a different server behind the same address
            raise EnvError(f"MCP server {self.label} no longer answers {INFO_METHOD}")
        try:
            self._call(RESET_METHOD, ResetParams(env_variables=variables), session)
        except MCPError as exc:
            raise EnvError(f"MCP server {self.label} refused {RESET_METHOD}: {exc}") from exc

    def close(self) -> None:
        """End the session (and a stdio server process) and join the MCP thread. `reset` reopens."""
        self._end_session()

    def tool_specs(self, owner: str = "agent") -> list[ToolSpec]:
        self._ensure_session()
        if owner == "agent":
            return list(self._agent_tools)
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

        async def send(client: Client) -> types.CallToolResult:
            return await client.call_tool(name, arguments if isinstance(arguments, dict) else {}, meta=meta)

        try:
            result = self._request(session, send)
        except MCPError as exc:
            if exc.code in AGENT_ERROR_CODES:
                return self._record(name, args, caller, started, exc.message, True)
            self.calls.append(ToolCallRecord(name, args, caller, False, str(exc), time.perf_counter() - started))
            raise EnvError(f"tool {name!r} on MCP server {self.label} failed: {exc}") from exc
        except EnvError as exc:
            self.calls.append(ToolCallRecord(name, args, caller, False, str(exc), time.perf_counter() - started))
            raise
        text = _result_text(result)
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
            return _UnavailableChanges(self._state_reason("diff"))
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


def _owned_http_transport(url: str, headers: dict[str, str]) -> Any:
    """A Streamable HTTP transport whose httpx2 client (carrying `headers`) it opens and closes itself."""

    @contextlib.asynccontextmanager
    async def transport() -> Any:
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http_client,
            streamable_http_client(url, http_client=http_client) as streams,
        ):
            yield streams

    return transport()


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an exception group or a chained error."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
