"""A stdio MCP server's stdout lines that are not JSON-RPC: counted, then logged once per episode.

The SDK logs each such line as an error with a traceback, so a third-party server that prints a
banner or debug output on stdout floods the log. For toolgym's stdio sessions that record is dropped
and the SDK's parse failure, which it also hands to the client's message handler, is counted here;
`flush` logs one warning with the count and the first line. A dead connection, a timeout or an error
reply is no such line: those still fail the request that met them.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
from pydantic import ValidationError

logger = logging.getLogger(__name__)

SDK_LOGGER = "mcp.client.stdio"
SDK_PARSE_FAILURE = "Failed to parse JSONRPC message from server"  # what the SDK logs per unparsable line
_SHOWN_CHARS = 200
# Set while a StdoutNoise watches a transport: the SDK's reader task inherits it, so its records are ours.
_WATCHING: contextvars.ContextVar[StdoutNoise | None] = contextvars.ContextVar("toolgym_stdout_noise", default=None)


class _DropCountedLines(logging.Filter):
    """Drops the SDK's per-line parse failure inside a watched transport, where StdoutNoise counts it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg == SDK_PARSE_FAILURE and _WATCHING.get() is not None)


_FILTER = _DropCountedLines()
logging.getLogger(SDK_LOGGER).addFilter(_FILTER)  # the same object each time: added once


def unparsed_line(exc: BaseException) -> str:
    """The stdout line a parse failure was about (pydantic keeps it as the error's input), shortened."""
    text = str(exc)
    if isinstance(exc, ValidationError) and exc.errors():
        value = exc.errors()[0].get("input")
        text = value if isinstance(value, str) else json.dumps(value, default=str)
    shown = repr(text)
    return shown if len(shown) <= _SHOWN_CHARS else shown[: _SHOWN_CHARS - 3] + "..."


class StdoutNoise:
    """The lines a stdio server printed on stdout that were not JSON-RPC messages, since the last `take`."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._lock = threading.Lock()  # counted on the MCP thread, taken on the caller's
        self._count = 0
        self._first: str | None = None

    @contextlib.asynccontextmanager
    async def watch(self, transport: Any) -> AsyncIterator[Any]:
        """`transport` (an SDK stdio client) with its per-line parse failures counted here, not logged."""
        token = _WATCHING.set(self)
        try:
            async with transport as streams:
                yield streams
        finally:
            with contextlib.suppress(ValueError):  # left in another context: that context dies with it
                _WATCHING.reset(token)

    async def handle(self, message: Any) -> None:
        """The client's message handler: the SDK passes it each stdout line it could not parse (a ValueError)."""
        if isinstance(message, ValueError):
            line = unparsed_line(message)
            with self._lock:
                self._count += 1
                if self._first is None:
                    self._first = line
            logger.debug("MCP server %s: stdout line is not JSON-RPC: %s", self.label, line)
        elif isinstance(message, Exception):
            logger.warning("MCP server %s: transport error: %s", self.label, message)
        await anyio.lowlevel.checkpoint()  # what the SDK's own default handler does

    def take(self) -> tuple[int, str | None]:
        """(lines counted, the first of them) since the last take; the count starts again at 0."""
        with self._lock:
            counted = (self._count, self._first)
            self._count, self._first = 0, None
        return counted

    def summary(self) -> str:
        """`N line(s) … the first: '…'` for what was counted since the last take, or "" when none."""
        count, first = self.take()
        if not count:
            return ""
        return f"{count} line(s) on stdout that are not JSON-RPC messages (ignored); the first: {first}"

    def flush(self) -> None:
        """One warning for everything counted since the last take (an episode's worth)."""
        summary = self.summary()
        if summary:
            logger.warning("MCP server %s printed %s", self.label, summary)
