"""Serve an environment's agent tools over MCP (official `mcp` SDK), one isolated state per session.

Every MCP session - a stdio connection, or a Streamable HTTP `Mcp-Session-Id` - gets its own
Environment, reset from the seed with the server's default env_variables on first use and
closed when the session ends. Two sessions never see each other's writes.

- `tools/list`: the agent tools (name, description, JSON input schema from ToolSpec); user-side
  (dual-control) tools are not listed.
- `tools/call`: `Environment.call_tool`; a bad call (unknown tool, bad argument, broken rule) is
  a result with `isError` and the readable message the model would see in-process. A tool that
  crashes is an infrastructure error: a JSON-RPC error, never a result. `_meta["toolgym/caller"]
  = "user"` calls a user-side tool.
- `toolgym/reset {env_variables}`: a fresh copy of the seed for this session. This is how a client
  sets env_variables per session (per episode); `--env-var` on the command line sets the default.
- `toolgym/info`, `toolgym/diff {app}`, `toolgym/database {which, app}`: for trainers and
  verifiers (see `protocol.py` for why these are methods, not tools).

The server speaks the handshake era of MCP (2024-11-05 … 2025-11-25), where a session exists.
The 2026-07-28 protocol is stateless (every request stands alone), which an environment with
state cannot serve: `server/discover` is refused so `auto` clients fall back to `initialize`,
and stateless requests get an error that says so.

Over HTTP every session holds its own copy of the app databases, so sessions are bounded: at most
`max_sessions` live at once (a new one past that is refused with HTTP 503 saying so), and one with
no request in flight for `session_idle_timeout_s` is ended and its databases closed. Requests pass
`toolgym.http_guard` first (Host/Origin, optional API key, body size limit).
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolgym.envs.environment import EnvError, Environment
from toolgym.envs.mcp.protocol import (
    CALLER_META_KEY,
    DATABASE_METHOD,
    DIFF_METHOD,
    INFO_METHOD,
    PROTOCOL,
    RESET_METHOD,
    DatabaseParams,
    DiffParams,
    ResetParams,
    encode_database,
    encode_row,
)
from toolgym.envs.registry import make_env
from toolgym.http_guard import GuardSettings, RequestGuard, allowed_hosts_for
from toolgym.schema import ToolSpec

SESSION_ENV_KEY = "toolgym.env"
DEFAULT_SESSION_IDLE_TIMEOUT_S = 10 * 60  # longer than any model turn between two tool calls
DEFAULT_MAX_SESSIONS = 64  # each holds a copy of the app databases
STATELESS_REFUSAL = (
    "this toolgym environment keeps one state per MCP session, and the 2026-07-28 protocol has no "
    "session; connect with the initialize handshake (e.g. mcp.Client(..., mode='legacy') or 'auto')"
)


def _connection(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The per-client Connection (its `state` and `exit_stack` are per session).

    mcp 2.3 hands low-level handlers a ServerRequestContext whose ServerSession keeps the
    Connection privately (the SDK's Context rework, its TODO(L54), will expose it).
    """
    connection = getattr(ctx.session, "_connection", None)
    if not isinstance(connection, Connection):
        raise RuntimeError("this mcp SDK does not expose the session's Connection; toolgym needs mcp 2.3.x")
    return connection


def mcp_tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(name=spec.name, description=spec.description, input_schema=spec.parameters)


@dataclass
class EnvServer:
    """The handlers behind one `toolgym serve env APP` process: `build()` gives the MCP Server."""

    env_name: str
    env_variables: dict[str, str] = field(default_factory=dict)
    sessions: dict[int, Environment] = field(default_factory=dict)  # live session environments

    def __post_init__(self) -> None:
        # Built once to fail fast on an unknown app and to answer tools/list without any state.
        self.template = make_env(self.env_name)

    # -- sessions -------------------------------------------------------------------------------

    def session_env(self, ctx: ServerRequestContext[Any, Any]) -> Environment:
        """This session's Environment, created (reset with the defaults) on first use."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(code=types.INVALID_REQUEST, message=STATELESS_REFUSAL)
        connection = _connection(ctx)
        env = connection.state.get(SESSION_ENV_KEY)
        if env is None:
            env = make_env(self.env_name)
            env.reset(self.env_variables)
            connection.state[SESSION_ENV_KEY] = env
            self.sessions[id(env)] = env
            connection.exit_stack.callback(self._end_session, env)
        return env

    def _end_session(self, env: Environment) -> None:
        self.sessions.pop(id(env), None)
        env.close()

    # -- handlers -------------------------------------------------------------------------------

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(s) for s in self.template.tool_specs("agent")])

    async def call_tool(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        env = self.session_env(ctx)
        caller = (params.meta or {}).get(CALLER_META_KEY, "agent")
        if caller not in ("agent", "user"):
            raise MCPError(code=types.INVALID_PARAMS, message=f"_meta[{CALLER_META_KEY!r}] must be 'agent' or 'user'; got {caller!r}")
        try:
            result = env.call_tool(params.name, params.arguments if params.arguments is not None else {}, caller)
        except EnvError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"env error: {exc}") from exc
        return types.CallToolResult(content=[types.TextContent(type="text", text=result.content)], is_error=result.is_error)

    async def refuse_discover(self, ctx: ServerRequestContext[Any, Any], params: types.RequestParams) -> dict[str, Any]:
        raise MCPError(code=types.METHOD_NOT_FOUND, message=STATELESS_REFUSAL)

    def info(self, env: Environment | None = None) -> dict[str, Any]:
        env = env if env is not None else self.template
        return {
            "protocol": PROTOCOL,
            "env": env.name,
            "version": env.version,
            "apps": [
                {"name": a.name, "version": a.version, "data_id": a.data_id} for a in env.apps
            ],
            "policy": env.policy,
            "env_variables": dict(env.context.variables) if env is not self.template else dict(self.env_variables),
            "agent_tools": [s.model_dump() for s in env.tool_specs("agent")],
            "user_tools": [s.model_dump() for s in env.tool_specs("user")],
            "live_sessions": len(self.sessions),
        }

    async def handle_info(self, ctx: ServerRequestContext[Any, Any], params: types.RequestParams) -> dict[str, Any]:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self.info()
        return self.info(_connection(ctx).state.get(SESSION_ENV_KEY))

    async def handle_reset(self, ctx: ServerRequestContext[Any, Any], params: ResetParams) -> dict[str, Any]:
        env = self.session_env(ctx)
        env.reset(params.env_variables if params.env_variables is not None else self.env_variables)
        return {"env": env.name, "env_variables": dict(env.context.variables)}

    async def handle_diff(self, ctx: ServerRequestContext[Any, Any], params: DiffParams) -> dict[str, Any]:
        env = self.session_env(ctx)
        try:
            changes = env.diff(params.app)
        except ValueError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc
        return {
            "changes": [
                {"table": c.table, "op": c.op, "rowid": c.rowid, "before": encode_row(c.before), "after": encode_row(c.after)}
                for c in changes
            ]
        }

    async def handle_database(self, ctx: ServerRequestContext[Any, Any], params: DatabaseParams) -> dict[str, Any]:
        env = self.session_env(ctx)
        try:
            data = env.db(params.which, params.app).serialize()
        except ValueError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc
        app = params.app if params.app is not None else env.apps[0].name  # db() refused ambiguity
        return {"app": app, "which": params.which, **encode_database(data)}

    # -- the MCP server -------------------------------------------------------------------------

    def build(self) -> Server[Any]:
        env = self.template
        server: Server[Any] = Server(
            f"toolgym-{env.name}",
            version=env.version,
            title=f"toolgym environment {env.name}",
            instructions=env.policy,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )
        server.add_request_handler("server/discover", types.RequestParams, self.refuse_discover)
        server.add_request_handler(INFO_METHOD, types.RequestParams, self.handle_info)
        server.add_request_handler(RESET_METHOD, ResetParams, self.handle_reset)
        server.add_request_handler(DIFF_METHOD, DiffParams, self.handle_diff)
        server.add_request_handler(DATABASE_METHOD, DatabaseParams, self.handle_database)
        return server


async def serve_stdio(server: Server[Any]) -> None:
    """One session over this process's stdin/stdout, in the handshake era (see the module doc)."""
    async with stdio_server() as (read_stream, write_stream), server.lifespan(server) as lifespan_state:
        await serve_loop(
            server, read_stream, write_stream, lifespan_state=lifespan_state,
            init_options=server.create_initialization_options(),
        )


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind before serving, so `--port 0` can pick a free port and still print the real URL."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)  # clients that connect before uvicorn starts wait in the backlog
    sock.set_inheritable(True)
    return sock


def _jsonrpc_error(status: int, message: str, reason: str = "") -> Response:
    """A refusal MCP clients surface as an MCPError carrying `message` (a JSON-RPC error, no id)."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": types.INVALID_REQUEST, "message": message}}
    return JSONResponse(body, status_code=status)


class ExplainSessionLimit:
    """The SDK refuses a session past `max_sessions` with a bare HTTP 503; this says which limit it is
    and what frees room, so a client (or its operator) knows why and when to retry."""

    def __init__(self, app: ASGIApp, max_sessions: int, session_idle_timeout_s: float | None) -> None:
        self.app = app
        expiry = (
            f"an idle session ends after {session_idle_timeout_s:g} s" if session_idle_timeout_s is not None
            else "sessions do not expire on this server"
        )
        self.message = (
            f"this toolgym env server is at its limit of {max_sessions} live MCP sessions (--max-sessions); "
            f"end a session (close the client) or retry later: {expiry}"
        )
        self.retry_after = str(max(1, round(min(session_idle_timeout_s or 60.0, 60.0))))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or Headers(scope=scope).get("mcp-session-id"):
            await self.app(scope, receive, send)
            return
        replaced = False

        async def explain(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 503:
                replaced = True
                response = _jsonrpc_error(503, self.message)
                response.headers["Retry-After"] = self.retry_after
                await response(scope, receive, send)
            elif not replaced:
                await send(message)

        await self.app(scope, receive, explain)


async def serve_http(
    server: Server[Any],
    sock: socket.socket,
    *,
    session_idle_timeout_s: float | None = DEFAULT_SESSION_IDLE_TIMEOUT_S,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    guard: GuardSettings | None = None,
    log_level: str = "warning",
) -> None:
    """Streamable HTTP at `/mcp` on an already bound socket (uvicorn), one Environment per session.

    `guard` defaults to the bind address's own names, no key and the default body limit.
    """
    import uvicorn

    host = sock.getsockname()[0]
    guard = guard or GuardSettings(allowed_hosts=allowed_hosts_for(host))
    app = server.streamable_http_app(
        host=host, session_idle_timeout=session_idle_timeout_s, max_sessions=max_sessions,
        max_request_body_size=guard.max_body_bytes,
        # Host and Origin are checked by the guard, the same code as the policy server's.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    guarded = RequestGuard(ExplainSessionLimit(app, max_sessions, session_idle_timeout_s), guard, _jsonrpc_error)
    config = uvicorn.Config(guarded, log_level=log_level, lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


def http_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"


def parse_env_variables(items: list[str] | None, *, source: str = "--env-var") -> dict[str, str]:
    """`KEY=VALUE` pairs; a malformed one raises ValueError naming it."""
    variables: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{source} {item!r}: expected KEY=VALUE")
        variables[key.strip()] = value
    return variables


def run_server(
    env_name: str,
    transport: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    env_variables: Mapping[str, str] | None = None,
    session_idle_timeout_s: float | None = DEFAULT_SESSION_IDLE_TIMEOUT_S,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    guard: GuardSettings | None = None,
    log_level: str = "warning",
) -> None:
    """Blocking: serve until stdin closes (stdio) or the process is stopped (http).

    `guard` (http only): see `toolgym.http_guard`; None gives the bind address's names and no key.
    """
    if max_sessions < 1:
        raise ValueError(f"max_sessions must be at least 1; got {max_sessions}")
    env_server = EnvServer(env_name, dict(env_variables or {}))
    server = env_server.build()
    if transport == "stdio":
        asyncio.run(serve_stdio(server))
        return
    if transport != "http":
        raise ValueError(f"unknown transport {transport!r}; use 'stdio' or 'http'")
    sock = bind_socket(host, port)
    # stderr, flushed: scripts (and tests) read the URL from here when --port 0 picked the port.
    print(f"toolgym env {env_server.template.name} serving MCP on {http_url(sock)}", file=sys.stderr, flush=True)
    try:
        asyncio.run(serve_http(
            server, sock, session_idle_timeout_s=session_idle_timeout_s, max_sessions=max_sessions, guard=guard,
            log_level=log_level,
        ))
    finally:
        sock.close()
