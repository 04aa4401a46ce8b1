"""`toolgym serve policy | env` read their settings from `--config FILE` and `--set KEY=VALUE`: real servers on
127.0.0.1 show the file's and the override's values; a bad key is refused naming the file, key and line,
and the API key is a flag only, never a setting."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import httpx
from mcp import Client
from typer.testing import CliRunner

from test_mcp_support import http_server, serve_env_argv
from test_rollout_support import policy_server, tiny_model_dir
from toolgym.cli.main import app
from toolgym.config.serve import ServeEnvConfig, ServePolicyConfig
from toolgym.envs.mcp.protocol import INFO_METHOD, RESULT, toolgym_request
from toolgym.envs.mcp.server import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT_S

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_serve_policy_takes_the_file_then_the_override(tmp_path: Path) -> None:
    config = _write(tmp_path / "serve.yaml", "model_name: from-file\nallowed_hosts: [models.lan]\nmax_batch_size: 4\n")
    with policy_server(tiny_model_dir(), "--config", str(config), "--set", "model_name=from-set") as server:
        models = httpx.get(f"{server.url}/models", timeout=10).json()
        assert [m["id"] for m in models["data"]] == ["from-set"]
        named = httpx.get(f"{server.url}/models", headers={"Host": "models.lan:8000"}, timeout=10)
        assert named.status_code == 200  # the file's allowed_hosts reached the guard
        stranger = httpx.get(f"{server.url}/models", headers={"Host": "evil.example"}, timeout=10)
        assert stranger.status_code == 421


def test_serve_env_takes_the_file_then_the_override(tmp_path: Path) -> None:
    config = _write(tmp_path / "env.yaml", "allowed_hosts: [tools.lan]\nenv_variables: [LOGGED_IN_USER=from-file]\n")

    async def info(url: str) -> dict:  # type: ignore[type-arg]
        async with Client(url) as client:
            return await client.session.send_request(toolgym_request(INFO_METHOD), RESULT)  # type: ignore[return-value]

    with http_server("booking", "--config", str(config), "--set", "env_variables=[LOGGED_IN_USER=from-set]") as url:
        assert asyncio.run(info(url))["env_variables"] == {"LOGGED_IN_USER": "from-set"}
        named = httpx.post(url, json={}, headers={**MCP_HEADERS, "Host": "tools.lan"}, timeout=10)
        stranger = httpx.post(url, json={}, headers={**MCP_HEADERS, "Host": "evil.example"}, timeout=10)
        assert named.status_code != 421 and stranger.status_code == 421


def test_unknown_keys_and_secrets_in_a_file_are_refused_by_file_key_and_line(tmp_path: Path) -> None:
    runner = CliRunner()
    config = _write(tmp_path / "serve.yaml", "host: 127.0.0.1\napi_key: hunter2\n")
    for argv in (["serve", "policy", str(tiny_model_dir())], ["serve", "env", "booking"]):
        result = runner.invoke(app, [*argv, "--config", str(config)])
        assert result.exit_code == 2, result.output
        assert f"{config}: field api_key: unknown setting" in result.output and "(line 2)" in result.output
        assert "hunter2" not in result.output
    result = runner.invoke(app, ["serve", "policy", str(tiny_model_dir()), "--set", "max_batch_size=0"])
    assert result.exit_code == 2 and "field max_batch_size: Input should be greater than or equal to 1" in result.output


def test_flag_worded_refusals_read_the_same_from_a_flag_or_a_file(tmp_path: Path) -> None:
    config = _write(tmp_path / "env.yaml", "transport: carrier-pigeon\n")
    refused = subprocess.run(serve_env_argv("booking", "--config", str(config)), capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and "--transport 'carrier-pigeon': use stdio or http" in refused.stderr
    style = CliRunner().invoke(app, ["serve", "policy", str(tiny_model_dir()), "--set", "prompt_style=tiny"])
    assert style.exit_code == 2 and "--prompt-style 'tiny': use one of full, compact" in style.output


def test_the_env_servers_cli_defaults_are_the_servers_own() -> None:
    settings = ServeEnvConfig()
    assert settings.max_sessions == DEFAULT_MAX_SESSIONS
    assert settings.session_idle_timeout == DEFAULT_SESSION_IDLE_TIMEOUT_S
    assert "api_key" not in ServePolicyConfig.model_fields and "api_key" not in ServeEnvConfig.model_fields
