"""`toolgym serve policy CHECKPOINT` (OpenAI-compatible) and `toolgym serve env APP` (MCP): the servers.

Their settings are `toolgym.config.serve` (`--config FILE`, the shortcut flags below, `--set KEY=VALUE`;
docs/config-reference.md lists every setting). Both take the same guard options (`toolgym.http_guard`):
`--allowed-host` for the Host names they answer, `--max-body-bytes`, and `--api-key` (or $TOOLGYM_API_KEY)
to require `Authorization: Bearer KEY`: a flag only, so the secret never sits in a config file.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from toolgym.cli.errors import settings_command, usage_error
from toolgym.config.serve import ServeEnvConfig, ServePolicyConfig
from toolgym.http_guard import API_KEY_ENV, GuardSettings, allowed_hosts_for, is_loopback, resolve_api_key

app = typer.Typer(no_args_is_help=True)
console = Console(stderr=True)

API_KEY_HELP = (
    f"Require 'Authorization: Bearer KEY' on every request (default: ${API_KEY_ENV}; the variable keeps the "
    "key out of the process list)."
)
# Flag names older than the config tree: --allowed-host (allowed_hosts) and --env-var (env_variables).
POLICY_SHORTCUTS = ["lora", "host", "port", "model_name", "device", "dtype", "max_batch_size", "batch_wait_ms",
                    "parser", "prompt_style", ("allowed_hosts", "--allowed-host"), "max_body_bytes", "log_level"]
ENV_SHORTCUTS = ["transport", "host", "port", ("env_variables", "--env-var"), "session_idle_timeout",
                 "max_sessions", ("allowed_hosts", "--allowed-host"), "max_body_bytes", "log_level"]


def _warn_if_open(host: str, api_key: str | None) -> None:
    """A server reachable from other machines with no key serves anyone who finds the port."""
    if not is_loopback(host) and api_key is None:
        console.print(
            f"[yellow]warning:[/yellow] listening on {host} with no API key: anyone who can reach this port "
            f"can use the server (set --api-key or ${API_KEY_ENV})",
            soft_wrap=True,
        )


@app.command("policy")
@settings_command(ServePolicyConfig, POLICY_SHORTCUTS, console=console)
def policy(
    settings: ServePolicyConfig,
    checkpoint: Path = typer.Argument(..., help="Model folder (config.json, weights, tokenizer)."),
    api_key: str | None = typer.Option(None, "--api-key", help=API_KEY_HELP),
) -> None:
    """Serve /v1/models, /v1/chat/completions and /v1/completions (token ids + logprobs), batched.

    Standard OpenAI clients work unchanged; docs/serving.md lists what each request parameter does.
    """
    from toolgym.policy.server import load_served_model, serve
    try:
        key = resolve_api_key(api_key)
        served = load_served_model(
            str(checkpoint), lora=settings.lora, model_name=settings.model_name, parser=settings.parser,
            prompt_style=settings.prompt_style, device=settings.device, dtype=settings.dtype,
            max_batch_size=settings.max_batch_size, batch_wait_ms=settings.batch_wait_ms,
        )
    except (FileNotFoundError, ValueError, KeyError) as exc:
        raise usage_error(exc, console) from exc
    host, port = settings.host, settings.port
    console.print(f"serving {served.model_name} ({served.policy.checkpoint}, {served.renderer.prompt_style} prompts) "
                  f"on http://{host}:{port}/v1"
                  + (" (API key required)" if key else ""))
    _warn_if_open(host, key)
    serve(served, host=host, port=port, log_level=settings.log_level, api_key=key,
          max_body_bytes=settings.max_body_bytes, allowed_hosts=settings.allowed_hosts)


@app.command("env")
@settings_command(ServeEnvConfig, ENV_SHORTCUTS, console=console)
def env(
    settings: ServeEnvConfig,
    app_name: str = typer.Argument(..., metavar="APP", help="An app, or apps joined by '+' (e.g. mail+drive)."),
    api_key: str | None = typer.Option(None, "--api-key", help=f"http: {API_KEY_HELP}"),
) -> None:
    """Serve an environment's agent tools over MCP, one isolated state per session (see toolgym.envs.mcp.server)."""
    from toolgym.envs.mcp.server import parse_env_variables, run_server

    try:
        variables = parse_env_variables(settings.env_variables)
        key = resolve_api_key(api_key)
        guard = GuardSettings(
            allowed_hosts=allowed_hosts_for(settings.host, settings.allowed_hosts), api_key=key,
            max_body_bytes=settings.max_body_bytes,
        )
        if settings.transport == "http":
            _warn_if_open(settings.host, key)
        run_server(
            app_name, settings.transport, host=settings.host, port=settings.port, env_variables=variables,
            session_idle_timeout_s=settings.session_idle_timeout, max_sessions=settings.max_sessions, guard=guard,
            log_level=settings.log_level,
        )
    except (KeyError, ValueError, OSError) as exc:
        raise usage_error(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc, console) from exc
