"""The request guard in front of toolgym's HTTP servers (`serve policy`, `serve env --transport http`).

One ASGI middleware, so both servers refuse the same things the same way before any handler runs:
- a Host header that is not one of the server's names: a page in a browser that rebinds its own DNS
  name to 127.0.0.1 still sends that name, so a loopback server answers only loopback names;
- an Origin from another site: a page can send a "simple" cross-site POST without a preflight;
- a missing or wrong `Authorization: Bearer KEY` when the server has a key;
- a body over the size limit, judged by Content-Length and by counting the bytes as they arrive,
  so an oversized body is never held in memory.

Each server says how its refusals look (`ErrorFactory`): OpenAI error objects, JSON-RPC errors.
This module depends on starlette only, so any layer of toolgym may use it.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:  # the settings half is imported by the CLI at start-up: starlette only where a server runs
    from starlette.datastructures import Headers
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
API_KEY_ENV = "TOOLGYM_API_KEY"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})

# (HTTP status, message, short machine-readable reason) -> the response a server sends for a refusal.
ErrorFactory = Callable[[int, str, str], "Response"]


@dataclass(frozen=True)
class GuardSettings:
    """What the guard lets through; `allowed_hosts` None accepts any Host (a server on a public interface)."""

    allowed_hosts: frozenset[str] | None
    api_key: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    open_paths: frozenset[str] = frozenset()  # answered without the key (a load balancer's health check)

    def __post_init__(self) -> None:
        if self.max_body_bytes <= 0:
            raise ValueError(f"the body size limit must be a positive number of bytes; got {self.max_body_bytes}")
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("the API key must not be empty")


def is_loopback(host: str) -> bool:
    """Whether a bind address only listens on this machine (so only local names can reach it)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def allowed_hosts_for(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str] | None:
    """The Host names a server bound to `bind_host` answers.

    Loopback: the loopback names (and the bind address), plus `extra`. Any other interface: only
    `extra` when given, else any name - the server cannot know the names it is reached by, and a
    key (`--api-key`) is then what keeps strangers out.
    """
    names = {_hostname(h) for h in extra if h.strip()}
    if is_loopback(bind_host):
        return frozenset(LOOPBACK_NAMES | {_hostname(bind_host)} | names)
    return frozenset(names) if names else None


def resolve_api_key(flag: str | None) -> str | None:
    """The key a server requires: the flag, else $TOOLGYM_API_KEY, else none (an open server).

    An empty flag is refused rather than read as "no key": `--api-key "$UNSET"` must not open the server.
    """
    if flag is not None:
        if not flag.strip():
            raise ValueError("--api-key is empty; give a key, or leave the flag out to serve without one")
        return flag.strip()
    key = os.environ.get(API_KEY_ENV, "").strip()
    return key or None


def _hostname(value: str) -> str:
    """`name`, `name:port`, `[v6]:port` or `v6` -> the bare lower-case name."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def bearer_token(headers: Headers) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class RequestGuard:
    """ASGI middleware enforcing GuardSettings on every HTTP request (other scopes pass through)."""

    def __init__(self, app: ASGIApp, settings: GuardSettings, error: ErrorFactory) -> None:
        self.app = app
        self.settings = settings
        self.error = error
        self._key = settings.api_key.encode() if settings.api_key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.datastructures import Headers

        headers = Headers(scope=scope)
        refusal = self.refuse_headers(headers, scope.get("path", ""))
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self._limit_body(scope, receive, send, headers)

    def refuse_headers(self, headers: Headers, path: str) -> Response | None:
        """The refusal for a request's headers alone (host, origin, key, declared size), or None."""
        host = headers.get("host")
        allowed = self.settings.allowed_hosts
        if allowed is not None and (not host or _hostname(host) not in allowed):
            return self.error(421, f"this server does not answer to the Host {host!r}", "invalid_host")
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, host):
            return self.error(403, f"requests from the origin {origin!r} are not allowed", "invalid_origin")
        if self._key is not None and path not in self.settings.open_paths:
            token = bearer_token(headers)
            if token is None:
                return self._unauthorized("this server needs an API key: send 'Authorization: Bearer KEY'")
            if not hmac.compare_digest(token.encode(), self._key):
                return self._unauthorized("the API key sent is not this server's key")
        declared = headers.get("content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                return self.error(400, f"Content-Length {declared!r} is not a number", "invalid_content_length")
            if size > self.settings.max_body_bytes:
                return self._too_large(size)
        return None

    def _origin_allowed(self, origin: str, host: str | None) -> bool:
        """A browser's own page (same origin), or a page on one of the server's allowed names."""
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False  # "null" (sandboxed frames, file:// pages) and anything stranger
        if self.settings.allowed_hosts is not None:
            return parts.hostname.lower() in self.settings.allowed_hosts
        return host is not None and parts.netloc.lower() == host.strip().lower()

    def _unauthorized(self, message: str) -> Response:
        response = self.error(401, message, "invalid_api_key")
        response.headers["WWW-Authenticate"] = "Bearer"
        return response

    def _too_large(self, size: int | None) -> Response:
        limit = self.settings.max_body_bytes
        seen = f"a body of {size} bytes" if size is not None else "a body of more than that"
        return self.error(413, f"the request body limit is {limit} bytes; got {seen}", "request_too_large")

    async def _limit_body(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        """Read the body up to the limit (refusing once past it), then hand it to the app unchanged."""
        limit = self.settings.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        trailing: Message | None = None
        complete = False
        while not complete:
            message = await receive()
            if message["type"] != "http.request":
                trailing = message  # the client went away; the app sees that as it would have
                break
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await self._too_large(None)(scope, receive, send)
                return
            if body:
                chunks.append(body)
            complete = not message.get("more_body", False)
        queued: deque[Message] = deque([{"type": "http.request", "body": b"".join(chunks), "more_body": False}])
        if not complete:
            queued.clear()
            if trailing is not None:
                queued.append(trailing)

        async def replay() -> Message:
            return queued.popleft() if queued else await receive()

        await self.app(scope, replay, send)
