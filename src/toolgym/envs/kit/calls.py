"""Gold tool calls, and reading the seed through an app's own tools so that a task's expected answer
follows exactly the semantics the agent's calls will have on replay."""

from __future__ import annotations

from typing import Any

from toolgym.envs.app import App, ToolContext, World
from toolgym.envs.context import EnvContext
from toolgym.envs.tool import Tool
from toolgym.schema import ToolCall


def call(tool_name: str, /, **arguments: Any) -> ToolCall:
    """A gold call; arguments left as None are dropped (the tool's default applies)."""
    return ToolCall(name=tool_name, arguments={k: v for k, v in arguments.items() if v is not None})


class SeedReader:
    """Runs an app's tools on the read-only seed with a task's env_variables (a tool that writes fails)."""

    def __init__(self, app: App, world: World, env_variables: dict[str, str]) -> None:
        self.ctx = ToolContext(db=world.db, env=EnvContext(env_variables), app=app)

    def __call__(self, fn: Tool, **arguments: Any) -> Any:
        return fn.fn(self.ctx, **fn.bind_arguments(arguments))
