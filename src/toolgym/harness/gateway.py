"""The loopback server of a harness run: every live episode's policy endpoint and MCP endpoint, by token.

One uvicorn server on 127.0.0.1 (a free port), in the run's own event loop, so the policy's batcher sees the
requests of every episode in flight. Episode `T` is reached at `/episodes/T/v1` (OpenAI-compatible; the API
key must be `T` too) and `/episodes/T/mcp` (MCP Streamable HTTP). Requests pass `toolgym.http_guard` first
(loopback Host names only, no cross-site Origin, a body size limit). A token that is not live is a 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolgym.harness.env_endpoint import TOKEN_PARAM, env_server
from toolgym.harness.policy_endpoint import PolicyEndpoint
from toolgym.harness.session import EpisodeSession
from toolgym.http_guard import GuardSettings, RequestGuard, allowed_hosts_for, bearer_token
from toolgym.policy.base import PolicyError
from toolgym.policy.server_request import BadRequest
from toolgym.schema.jsonl import BadJson, loads

HOST = "127.0.0.1"
MCP_SESSION_IDLE_S = 300.0  # MCP sessions hold no episode state here: only the client's connection
MAX_MCP_SESSIONS = 4096


def openai_error(status: int, message: str, kind: str, *, param: str | None = None,
                 code: str | None = None) -> JSONResponse:
    """The error object OpenAI clients parse."""
    return JSONResponse(status_code=status,
                        content={"error": {"message": message, "type": kind, "param": param, "code": code}})


def _guard_error(status: int, message: str, reason: str) -> Response:
    return openai_error(status, message, "invalid_request_error", code=reason)


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the run owns SIGINT and SIGTERM (rows are written whole)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass(frozen=True)
class EpisodeUrls:
    """Where one episode's harness finds its model and its tools."""

    openai_base_url: str
    api_key: str
    mcp_url: str


class Gateway:
    """Live sessions by token, and the server that answers for them (`async with Gateway(endpoint)`)."""

    def __init__(self, endpoint: PolicyEndpoint) -> None:
        self.endpoint = endpoint
        self.sessions: dict[str, EpisodeSession] = {}
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    def lookup(self, token: str) -> EpisodeSession | None:
        return self.sessions.get(token)

    def open(self, session: EpisodeSession) -> EpisodeUrls:
        """Make a session reachable; its URLs carry its token."""
        self.sessions[session.token] = session
        base = f"http://{HOST}:{self.port}/episodes/{session.token}"
        return EpisodeUrls(openai_base_url=f"{base}/v1", api_key=session.token, mcp_url=f"{base}/mcp")

    def close(self, session: EpisodeSession) -> None:
        """Make a session unreachable: later requests for it are 404s."""
        session.closed = True
        self.sessions.pop(session.token, None)

    # -- HTTP ---------------------------------------------------------------------------------------

    def _session(self, request: Request, *, keyed: bool) -> EpisodeSession | Response:
        token = request.path_params.get(TOKEN_PARAM, "")
        session = self.sessions.get(token)
        if session is None:
            return openai_error(404, "no live toolgym episode at this URL (it has ended)", "invalid_request_error",
                                code="episode_not_found")
        if keyed and not hmac.compare_digest((bearer_token(request.headers) or "").encode(), token.encode()):
            return openai_error(401, "the API key must be this episode's key (OPENAI_API_KEY)",
                                "invalid_request_error", code="invalid_api_key")
        return session

    async def _chat(self, request: Request) -> Response:
        found = self._session(request, keyed=True)
        if isinstance(found, Response):
            return found
        try:
            body = loads(await request.body())
        except BadJson as exc:
            return openai_error(400, f"request body is not JSON: {exc.message}", "invalid_request_error",
                                code="invalid_json")
        if not isinstance(body, dict):
            return openai_error(400, "request body must be a JSON object", "invalid_request_error", code="invalid_json")
        try:
            answer = await self.endpoint.chat(found, body)
        except BadRequest as exc:
            return openai_error(exc.status, str(exc), "invalid_request_error", param=exc.param, code=exc.code)
        except PolicyError as exc:
            return openai_error(500, str(exc), "server_error", code="policy_error")
        except Exception as exc:  # a bug here: the episode is toolgym's error, and the harness gets no traceback
            found.internal_error = found.internal_error or (
                f"rollout error: the harness policy endpoint failed: {type(exc).__name__}: {exc}")
            return openai_error(500, "internal server error", "server_error", code="internal_error")
        return answer if isinstance(answer, Response) else JSONResponse(answer)

    async def _models(self, request: Request) -> Response:
        found = self._session(request, keyed=True)
        if isinstance(found, Response):
            return found
        return JSONResponse({"object": "list", "data": [self.endpoint.model_card()]})

    def app(self) -> Any:
        """The ASGI app: the MCP server at each episode's `/mcp`, the policy routes beside it, behind the guard."""
        routes = [
            Route(f"/episodes/{{{TOKEN_PARAM}}}/v1/chat/completions", self._chat, methods=["POST"]),
            Route(f"/episodes/{{{TOKEN_PARAM}}}/v1/models", self._models, methods=["GET"]),
        ]
        mcp_app = env_server(self.lookup).streamable_http_app(
            streamable_http_path=f"/episodes/{{{TOKEN_PARAM}}}/mcp", host=HOST,
            session_idle_timeout=MCP_SESSION_IDLE_S, max_sessions=MAX_MCP_SESSIONS, custom_starlette_routes=routes,
            # Host and Origin are checked by the guard, as on toolgym's other servers.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        return RequestGuard(mcp_app, GuardSettings(allowed_hosts=allowed_hosts_for(HOST)), _guard_error)

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, 0))
        sock.listen(2048)
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(self.app(), log_level="warning", lifespan="on")
        server = _Server(config)
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name="toolgym-harness-gateway")
        while not server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
                raise RuntimeError("the harness gateway stopped before it started")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(self._task, 10.0)
        if not self._task.done():
            self._task.cancel()
        self._server = self._task = None

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
