"""The client side of one MCP connection: a session held open on an event loop of its own thread.

The SDK's sessions are async and their task groups must be entered and left by one task, while
an Environment's API is blocking and is also called from inside the rollout's event loop. So each
session gets a loop on a daemon thread (`LoopThread`); `Session.request` submits a coroutine and
blocks for its answer. `close()` ends the session (and a stdio server process) and joins the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from toolgym.envs.environment import EnvError

logger = logging.getLogger(__name__)

T = TypeVar("T")
CLOSE_TIMEOUT_S = 15.0  # the SDK's stdio shutdown is bounded at ~6.5 s (stdin close, TERM, KILL)
_STDERR_TAIL = 2000


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


class LoopThread:
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


class Session:
    """One MCP client session, held open by a task on the loop thread until `close()`."""

    def __init__(self, target: Client, label: str, stderr: Any | None) -> None:
        self.label = label
        self.stderr = stderr  # stdio: a temporary file holding the server's stderr
        self.loop_thread = LoopThread(label)
        self.client: Client | None = None
        self.broken: str | None = None
        self._stop: asyncio.Event | None = None
        self._held: asyncio.Future[None] | None = None
        self._target = target
        self.after_close: list[Callable[[], None]] = []  # e.g. removing the server's state directory

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
        while self.after_close:
            self.after_close.pop()()


def close_session(holder: dict[str, Session | None]) -> None:
    session = holder.get("session")
    holder["session"] = None
    if session is not None:
        session.close()


def owned_http_transport(url: str, headers: dict[str, str]) -> Any:
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


def describe_error(exc: BaseException) -> str:
    """The innermost useful message of an exception group or a chained error."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
