"""Tool-use environments: apps on SQLite with typed tools, seeded data, and task generators."""

from toolgym.envs.app import App, TaskDraft, TaskFamily, ToolContext, World
from toolgym.envs.context import EnvContext, resolve_date
from toolgym.envs.database import RowChange
from toolgym.envs.environment import EnvError, Environment, ToolCallRecord, ToolResult
from toolgym.envs.registry import app_names, get_app, make_env
from toolgym.envs.tool import Tool, ToolError, tool

__all__ = [
    "App",
    "EnvContext",
    "EnvError",
    "Environment",
    "RowChange",
    "TaskDraft",
    "TaskFamily",
    "Tool",
    "ToolCallRecord",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "World",
    "app_names",
    "get_app",
    "make_env",
    "resolve_date",
    "tool",
]
