"""An OpenAI-compatible client that follows the running event loop.

httpx's pooled connections belong to the loop that opened them: a client reused from another loop
(each `asyncio.run`, each test) fails on its first request. Policies and user simulators alike hold one
of these and ask it for the client of the loop they are running in.
"""

from __future__ import annotations

import asyncio

import openai


class LoopBoundClient:
    """One `openai.AsyncOpenAI` per event loop, built from the same options; the last one is reused."""

    def __init__(self, *, base_url: str, api_key: str, timeout: float, max_retries: int) -> None:
        self.options = {"base_url": base_url, "api_key": api_key, "timeout": timeout, "max_retries": max_retries}
        self._client: openai.AsyncOpenAI | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> openai.AsyncOpenAI:
        """The client of the running loop (built on the first call from a new loop)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = openai.AsyncOpenAI(**self.options)
            self._loop = loop
        return self._client

    async def close(self) -> None:
        """Close the client if it is the running loop's (another loop's cannot be closed here); forget it either way."""
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.close()
        self._client, self._loop = None, None
