"""MCP both ways: serve an environment's tools over MCP, and use a remote MCP server as an environment.

Serve (`server.py`): `toolgym serve env booking --transport stdio|http [--port 0] [--env-var KEY=VALUE]`.
Any MCP client sees the agent tools; each session has its own state. A trainer resets a session
per episode with the custom method `toolgym/reset {"envVariables": {...}}`, and reads state with
`toolgym/diff` and `toolgym/database` (`protocol.py`; in Python: `session.send_request(
toolgym_request(RESET_METHOD, ResetParams(env_variables=...)), RESULT)`).

Use (`remote.py`, `factory.py`): `RemoteMCPEnvironment("http://host:8000/mcp")` or
`RemoteMCPEnvironment(["my-mcp-server", "--flag"])` stands in for an Environment in episodes,
verification and replay; `remote_env_factory(["stdio"])` or `remote_env_factory(["booking=http://…/mcp"])`
is an `env_factory` for `run_rollout`.

A third-party server's episodes are isolated by its `ResetHook` (a reset tool, a state key per
episode, or a fresh state directory per episode), set in code or in an MCP env profile file
(`profile.py`, `--env-mcp ENV=profile:PATH`); docs/third-party-mcp.md walks through tau2's airline.

Needs the `mcp` SDK 2.x (the low-level `Server` with `on_*` handlers, `mcp.Client`).
"""

from toolgym.envs.mcp.factory import parse_remote_spec, remote_env_factory, toolgym_stdio_command
from toolgym.envs.mcp.profile import McpEnvProfile, load_profile
from toolgym.envs.mcp.remote import RemoteMCPEnvironment, RemoteStateError
from toolgym.envs.mcp.reset_hook import ResetHook

__all__ = [
    "McpEnvProfile",
    "RemoteMCPEnvironment",
    "RemoteStateError",
    "ResetHook",
    "load_profile",
    "parse_remote_spec",
    "remote_env_factory",
    "toolgym_stdio_command",
]
