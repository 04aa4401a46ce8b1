"""`toolgym serve policy CHECKPOINT` (OpenAI-compatible) and `toolgym serve env APP` (MCP): the servers.

Both take the same guard options (`toolgym.http_guard`): `--api-key` (or $TOOLGYM_API_KEY) to require
`Authorization: Bearer KEY`, `--allowed-host` for the Host names they answer, `--max-body-bytes`.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from toolgym.http_guard import (
    API_KEY_ENV,
    DEFAULT_MAX_BODY_BYTES,
    GuardSettings,
    allowed_hosts_for,
    is_loopback,
    resolve_api_key,
)

app = typer.Typer(no_args_is_help=True)
console = Console(stderr=True)

API_KEY_HELP = (
    f"Require 'Authorization: Bearer KEY' on every request (default: ${API_KEY_ENV}; the variable keeps the "
    "key out of the process list)."
)
ALLOWED_HOST_HELP = (
    "A Host name clients reach the server by (repeatable). A loopback server always answers the loopback "
    "names; a server on another interface answers any name unless some are given."
)
MAX_BODY_HELP = "Largest request body, in bytes; a larger one is refused with HTTP 413 before it is read."


def _warn_if_open(host: str, api_key: str | None) -> None:
    """A server reachable from other machines with no key serves anyone who finds the port."""
    if not is_loopback(host) and api_key is None:
        console.print(
            f"[yellow]warning:[/yellow] listening on {host} with no API key: anyone who can reach this port "
            f"can use the server (set --api-key or ${API_KEY_ENV})",
            soft_wrap=True,
        )


@app.command("policy")
def policy(
    checkpoint: Path = typer.Argument(..., help="Model folder (config.json, weights, tokenizer)."),
    lora: Path | None = typer.Option(None, "--lora", help="peft LoRA adapter folder loaded on the base."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
    model_name: str | None = typer.Option(None, "--model-name", help="Name clients send as `model` (default: CHECKPOINT)."),
    device: str = typer.Option("cpu", "--device"),
    dtype: str = typer.Option("auto", "--dtype", help="auto | float32 | bfloat16 | float16"),
    max_batch_size: int = typer.Option(32, "--max-batch-size", min=1),
    batch_wait_ms: float = typer.Option(10.0, "--batch-wait-ms", min=0.0),
    parser: str = typer.Option("hermes", "--parser", help="Tool-call parser for chat completions."),
    prompt_style: str | None = typer.Option(
        None, "--prompt-style",
        help="How chat prompts show the tools: full | compact (default: the model folder's toolgym.json, else full).",
    ),
    api_key: str | None = typer.Option(None, "--api-key", help=API_KEY_HELP),
    allowed_host: list[str] | None = typer.Option(None, "--allowed-host", help=ALLOWED_HOST_HELP),
    max_body_bytes: int = typer.Option(DEFAULT_MAX_BODY_BYTES, "--max-body-bytes", min=1024, help=MAX_BODY_HELP),
    log_level: str = typer.Option("warning", "--log-level"),
) -> None:
    """Serve /v1/models, /v1/chat/completions and /v1/completions (token ids + logprobs), batched.

    Standard OpenAI clients work unchanged; docs/serving.md lists what each request parameter does.
    """
    from toolgym.chat.render import PROMPT_STYLES
    from toolgym.policy.server import load_served_model, serve

    try:
        if prompt_style is not None and prompt_style not in PROMPT_STYLES:
            raise ValueError(f"--prompt-style {prompt_style!r}: use one of {', '.join(PROMPT_STYLES)}")
        key = resolve_api_key(api_key)
        served = load_served_model(
            str(checkpoint), lora=str(lora) if lora else None, model_name=model_name, parser=parser,
            prompt_style=prompt_style, device=device, dtype=dtype,  # type: ignore[arg-type]
            max_batch_size=max_batch_size, batch_wait_ms=batch_wait_ms,
        )
    except (FileNotFoundError, ValueError, KeyError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"serving {served.model_name} ({served.policy.checkpoint}, {served.renderer.prompt_style} prompts) "
                  f"on http://{host}:{port}/v1"
                  + (" (API key required)" if key else ""))
    _warn_if_open(host, key)
    serve(served, host=host, port=port, log_level=log_level, api_key=key, max_body_bytes=max_body_bytes,
          allowed_hosts=allowed_host or ())


@app.command("env")
def env(
    app_name: str = typer.Argument(..., metavar="APP", help="An app, or apps joined by '+' (e.g. mail+drive)."),
    transport: str = typer.Option("stdio", "--transport", help="stdio (one session) | http (Streamable HTTP at /mcp)."),
    host: str = typer.Option("127.0.0.1", "--host", help="http: interface to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="http: port; 0 picks a free one (the URL goes to stderr)."),
    env_var: list[str] | None = typer.Option(
        None, "--env-var", help="KEY=VALUE env_variable every session starts with (repeatable); "
        "a client replaces them per session with the toolgym/reset method."
    ),
    session_idle_timeout: float = typer.Option(
        600.0, "--session-idle-timeout", min=1.0,
        help="http: seconds with no request in flight before a session (and its database copies) is dropped.",
    ),
    max_sessions: int = typer.Option(
        64, "--max-sessions", min=1, help="http: live sessions at most (each holds a copy of the app databases).",
    ),
    api_key: str | None = typer.Option(None, "--api-key", help=f"http: {API_KEY_HELP}"),
    allowed_host: list[str] | None = typer.Option(None, "--allowed-host", help=f"http: {ALLOWED_HOST_HELP}"),
    max_body_bytes: int = typer.Option(DEFAULT_MAX_BODY_BYTES, "--max-body-bytes", min=1024, help=f"http: {MAX_BODY_HELP}"),
    log_level: str = typer.Option("warning", "--log-level", help="http: uvicorn log level."),
) -> None:
    """Serve an environment's agent tools over MCP, one isolated state per session (see toolgym.envs.mcp.server)."""
    from toolgym.envs.mcp.server import parse_env_variables, run_server

    if transport not in ("stdio", "http"):
        console.print(f"[red]error:[/red] --transport {transport!r}: use stdio or http")
        raise typer.Exit(2)
    try:
        variables = parse_env_variables(env_var)
        key = resolve_api_key(api_key)
        guard = GuardSettings(
            allowed_hosts=allowed_hosts_for(host, allowed_host or ()), api_key=key, max_body_bytes=max_body_bytes,
        )
        if transport == "http":
            _warn_if_open(host, key)
        run_server(
            app_name, transport, host=host, port=port, env_variables=variables,
            session_idle_timeout_s=session_idle_timeout, max_sessions=max_sessions, guard=guard, log_level=log_level,
        )
    except (KeyError, ValueError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        console.print(f"[red]error:[/red] {message}", soft_wrap=True)
        raise typer.Exit(2) from exc
