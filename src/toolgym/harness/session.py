"""One episode's session: its task, its environment, its recording, and what went wrong at either endpoint.

A session lives from the moment its harness starts until it exits; its secret token is the path (and API key)
of both its endpoints, so the state a harness reaches is bound to the episode, whatever MCP or HTTP sessions
its clients open. Once closed, both endpoints answer 404 for it: a straggler cannot touch a scored state.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from toolgym.envs import Environment
from toolgym.harness.recording import Recording
from toolgym.schema import StopReason, Task

MAX_RECORDED_RESULT_CHARS = 2000  # a tool result in the row's tool log; the model's context holds it whole


@dataclass
class ToolUse:
    """One tool call that reached the environment, as the environment answered it."""

    name: str
    arguments: dict[str, Any]
    is_error: bool
    result: str
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments, "is_error": self.is_error,
                "result": self.result[:MAX_RECORDED_RESULT_CHARS], "seconds": round(self.seconds, 4)}


@dataclass
class EpisodeSession:
    """The live state of one harness episode, shared by its policy and MCP endpoints."""

    task: Task
    sample_index: int
    env: Environment
    recording: Recording
    max_turns: int
    seed: int | None = None  # the episode's base seed: request i samples with seed + i unless it sends one
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    requests: int = 0
    truncated: StopReason | None = None  # a limit the endpoint enforced: max_turns or context
    policy_error: str | None = None  # the first failure of the policy (the episode is an infrastructure error)
    env_error: str | None = None  # the first failure of the environment itself
    internal_error: str | None = None  # a fault of toolgym's own endpoints (a bug), never the harness's
    tool_uses: list[ToolUse] = field(default_factory=list)
    generation_s: float = 0.0
    env_s: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    closed: bool = False

    def request_seed(self, request: int) -> int | None:
        return None if self.seed is None else self.seed + request

    def tool_counts(self) -> dict[str, int]:
        return dict(Counter(use.name for use in self.tool_uses))

    def tool_errors(self) -> int:
        return sum(use.is_error for use in self.tool_uses)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Run one agent tool call on the episode's environment; EnvError (the environment breaking) is
        recorded as the episode's infrastructure error and raised for the endpoint to report."""
        began = time.perf_counter()
        try:
            result = self.env.call_tool(name, arguments, "agent")
        except Exception as exc:
            self.env_error = self.env_error or f"env error: tool {name!r}: {type(exc).__name__}: {exc}"
            raise
        finally:
            self.env_s += time.perf_counter() - began
        self.tool_uses.append(ToolUse(name, dict(arguments), result.is_error, result.content,
                                      time.perf_counter() - began))
        return result.content, result.is_error
