"""Which MCP server backs which environment in a rollout: `--env-mcp` specs become an env_factory.

A spec is `[ENV=]TARGET`; without `ENV=` it serves every environment not named by another spec.
TARGET is one of:
- `stdio`: toolgym's own server, one `toolgym serve env ENV --transport stdio` process per env
- `http://HOST:PORT/mcp` (or https): a Streamable HTTP server, e.g. `toolgym serve env ENV --transport http`
- `stdio:COMMAND ARGS…`: any MCP server started as a stdio subprocess (shell-split)
- `profile:PATH`: an MCP env profile (.toml or .json, profile.py): the server plus how its episodes
  are isolated (reset tool, state key, state directory) and what the agent sees
`{env}` in a URL or command is replaced by the environment name, e.g. `http://10.0.0.5:8000/{env}/mcp`.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolgym.envs.mcp.profile import McpEnvProfile, load_profile
from toolgym.envs.mcp.remote import DEFAULT_TIMEOUT_S, RemoteMCPEnvironment

TOOLGYM_STDIO = "stdio"
PROFILE_PREFIX = "profile:"
_ENV_PREFIX = re.compile(r"^([A-Za-z0-9_+.-]+)=(.+)$", re.DOTALL)


@dataclass(frozen=True)
class RemoteSpec:
    """One `--env-mcp` value: the environment it serves (None: any) and where its server is."""

    env: str | None
    target: str
    profile: McpEnvProfile | None = None  # for a `profile:PATH` target, read when the spec is parsed

    @property
    def profile_path(self) -> Path | None:
        return Path(self.target.removeprefix(PROFILE_PREFIX)) if self.target.startswith(PROFILE_PREFIX) else None

    def server(self, env_name: str) -> str | list[str]:
        """The URL or stdio command for `env_name`."""
        if self.profile is not None:
            return self.profile.environment(env_name).server
        if self.target == TOOLGYM_STDIO:
            return toolgym_stdio_command(env_name)
        if self.target.startswith(("http://", "https://")):
            return self.target.replace("{env}", env_name)
        command = self.target.removeprefix("stdio:")
        return [part.replace("{env}", env_name) for part in shlex.split(command)]


def toolgym_stdio_command(env_name: str) -> list[str]:
    """`toolgym serve env ENV --transport stdio`, with this interpreter (no PATH lookup needed)."""
    return [sys.executable, "-m", "toolgym.cli.main", "serve", "env", env_name, "--transport", "stdio"]


def parse_remote_spec(text: str) -> RemoteSpec:
    """`[ENV=]TARGET`; a spec that is none of the target forms raises ValueError naming it."""
    spec = text.strip()
    env: str | None = None
    match = _ENV_PREFIX.match(spec)
    if match and not spec.startswith(("http://", "https://", "stdio:", PROFILE_PREFIX)):
        env, spec = match.group(1), match.group(2).strip()
    if spec == TOOLGYM_STDIO or spec.startswith(("http://", "https://")):
        return RemoteSpec(env, spec)
    if spec.startswith("stdio:"):
        if not shlex.split(spec.removeprefix("stdio:")):
            raise ValueError(f"--env-mcp {text!r}: 'stdio:' needs a command after it")
        return RemoteSpec(env, spec)
    if spec.startswith(PROFILE_PREFIX):
        path = spec.removeprefix(PROFILE_PREFIX).strip()
        if not path:
            raise ValueError(f"--env-mcp {text!r}: 'profile:' needs the path of a .toml or .json profile after it")
        try:
            return RemoteSpec(env, PROFILE_PREFIX + path, load_profile(path))
        except ValueError as exc:
            raise ValueError(f"--env-mcp {text!r}: {exc}") from exc
    raise ValueError(
        f"--env-mcp {text!r}: expected [ENV=]TARGET with TARGET 'stdio', an http(s):// URL, 'stdio:COMMAND ARGS' "
        "or 'profile:PATH'"
    )


def remote_env_factory(
    specs: Sequence[str],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    headers: Mapping[str, str] | None = None,
) -> Callable[[str], RemoteMCPEnvironment]:
    """An `env_factory` for `run_rollout`: environment name → a RemoteMCPEnvironment (connected lazily).

    A toolgym server must serve exactly the environment the task names (checked on connect);
    any other server is taken to be that environment.
    """
    parsed = [parse_remote_spec(s) for s in specs]
    if not parsed:
        raise ValueError("remote_env_factory needs at least one --env-mcp spec")
    # Our own stdio server must import this very toolgym, installed or not.
    pythonpath = os.environ.get("PYTHONPATH")
    process_env = {"PYTHONPATH": pythonpath} if pythonpath else None

    def factory(env_name: str) -> RemoteMCPEnvironment:
        spec = next((s for s in parsed if s.env == env_name), None) or next((s for s in parsed if s.env is None), None)
        if spec is None:
            named = ", ".join(sorted(s.env for s in parsed if s.env))
            raise KeyError(f"no --env-mcp spec serves environment {env_name!r} (specs name: {named})")
        if spec.profile is not None:
            # A third-party server never receives the headers meant for toolgym's own servers (its key).
            base = spec.profile_path.parent if spec.profile_path is not None else None
            return spec.profile.environment(env_name, base_dir=base)
        return RemoteMCPEnvironment(
            spec.server(env_name), env_name=env_name, headers=headers,
            process_env=process_env if spec.target == TOOLGYM_STDIO else None, timeout_s=timeout_s,
        )

    return factory
