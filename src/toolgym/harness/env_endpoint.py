"""The per-episode MCP endpoint: `…/episodes/{token}/mcp` serves the agent tools of that episode's environment.

State is bound to the URL's token, not to an MCP session: a client that opens a session per call (or speaks the
stateless 2026 protocol) still reaches the same episode state, and no client reaches another episode's. Only
`tools/list` and `tools/call` are served: resetting or reading the state is toolgym's, not the agent's. A bad
call (unknown tool, bad arguments) is a tool result with `isError`, as in-process; the environment itself
breaking is a JSON-RPC error, and the episode becomes an infrastructure error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from toolgym.envs.mcp.server import mcp_tool
from toolgym.harness.session import EpisodeSession

TOKEN_PARAM = "token"
SessionLookup = Callable[[str], EpisodeSession | None]


def _session(ctx: ServerRequestContext[Any, Any], lookup: SessionLookup) -> EpisodeSession:
    request = ctx.request
    params = getattr(request, "path_params", None) or {}
    token = params.get(TOKEN_PARAM)
    session = lookup(token) if isinstance(token, str) else None
    if session is None:
        raise MCPError(code=types.INVALID_REQUEST, message="no live toolgym episode at this URL (it has ended)")
    return session


def env_server(lookup: SessionLookup) -> Server[Any]:
    """The MCP server behind every episode's URL; `lookup` finds the live session of a token."""

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        session = _session(ctx, lookup)
        return types.ListToolsResult(tools=[mcp_tool(s) for s in session.env.tool_specs("agent")])

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        session = _session(ctx, lookup)
        try:
            text, is_error = session.call_tool(params.name, params.arguments if params.arguments is not None else {})
        except Exception as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"env error: {type(exc).__name__}: {exc}") from exc
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)

    return Server("toolgym-harness-env", title="toolgym episode environment", on_list_tools=list_tools,
                  on_call_tool=call_tool)
