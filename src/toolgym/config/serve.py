"""The servers' settings: `toolgym serve policy` (OpenAI-compatible) and `toolgym serve env` (MCP).

The API key is deliberately not a setting: a secret never belongs in a config file or a run's manifest, so
both commands keep `--api-key` (or $TOOLGYM_API_KEY) as a flag of their own.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from toolgym.chat.render import PROMPT_STYLES, PromptStyle
from toolgym.config.base import REPEATABLE, Section, one_of
from toolgym.http_guard import DEFAULT_MAX_BODY_BYTES

Transport = Literal["stdio", "http"]


class ServerGuard(Section):
    """Which requests a server answers (beside the API key, which is a flag only)."""

    allowed_hosts: list[str] = Field(default_factory=list, json_schema_extra={REPEATABLE: True})
    """Host names clients reach the server by. A loopback server always answers the loopback names; a server
    on another interface answers any name unless some are given."""
    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, ge=1024)
    """Largest request body, in bytes; a larger one is refused with HTTP 413 before it is read."""


class ServePolicyConfig(ServerGuard):
    """`toolgym serve policy CHECKPOINT`: serve a model folder (+ a LoRA adapter) as an OpenAI-compatible API,
    batched. The API key is the `--api-key` flag (or $TOOLGYM_API_KEY), never a setting."""

    lora: str | None = None
    """peft LoRA adapter folder loaded on the base."""
    host: str = "127.0.0.1"
    """Interface to listen on."""
    port: int = Field(8000, ge=0, le=65535)
    """Port to listen on."""
    model_name: str | None = None
    """Name clients send as `model` (default: CHECKPOINT)."""
    device: str = "cpu"
    """Torch device of the model."""
    dtype: str = "auto"
    """auto | float32 | bfloat16 | float16."""
    max_batch_size: int = Field(32, ge=1)
    """Requests generated together in one batch at most."""
    batch_wait_ms: float = Field(10.0, ge=0)
    """Milliseconds a batch waits for more requests before it runs."""
    parser: str = "hermes"
    """Tool-call parser for chat completions."""
    prompt_style: PromptStyle | None = None
    """How chat prompts show the tools: full | compact (default: the model folder's toolgym.json, else full)."""
    log_level: str = "warning"
    """uvicorn log level."""

    _known_style = one_of("prompt_style", PROMPT_STYLES, "--prompt-style {value!r}: use one of {choices}", allow_none=True)


class ServeEnvConfig(ServerGuard):
    """`toolgym serve env APP`: serve an app's agent tools over MCP, one isolated state per session. Every
    setting but transport and env_variables applies to --transport http only; the API key is the `--api-key`
    flag (or $TOOLGYM_API_KEY), never a setting."""

    transport: Transport = "stdio"
    """stdio (one session) | http (Streamable HTTP at /mcp)."""
    host: str = "127.0.0.1"
    """http: interface to listen on."""
    port: int = Field(8000, ge=0, le=65535)
    """http: port; 0 picks a free one (the URL goes to stderr)."""
    env_variables: list[str] = Field(default_factory=list, json_schema_extra={REPEATABLE: True})
    """KEY=VALUE env_variables every session starts with; a client replaces them per session with the
    toolgym/reset method."""
    session_idle_timeout: float = Field(600.0, ge=1)
    """http: seconds with no request in flight before a session (and its database copies) is dropped."""
    max_sessions: int = Field(64, ge=1)
    """http: live sessions at most (each holds a copy of the app databases)."""
    log_level: str = "warning"
    """http: uvicorn log level."""

    _known_transport = one_of("transport", get_args(Transport), "--transport {value!r}: use stdio or http")
