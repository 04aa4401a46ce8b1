"""`toolgym serve env` through the official MCP client, over stdio and Streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import subprocess
import time
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from test_guard_support import chunked, raw_post
from test_mcp_support import http_server, serve_env_argv, stdio_params, write_task
from toolgym.envs import EnvError, make_env
from toolgym.envs.mcp.protocol import (
    DATABASE_METHOD,
    DIFF_METHOD,
    INFO_METHOD,
    PROTOCOL,
    RESET_METHOD,
    RESULT,
    DatabaseParams,
    ResetParams,
    decode_database,
    toolgym_request,
)
from toolgym.envs.mcp.remote import RemoteMCPEnvironment
from toolgym.envs.mcp.server import parse_env_variables
from toolgym.http_guard import API_KEY_ENV, DEFAULT_MAX_BODY_BYTES

BAD_TYPE = {"origin": 3, "destination": "Boston", "date": "2026-07-01"}


async def _request(client: Client, method: str, params: Any = None) -> dict[str, Any]:
    return await client.session.send_request(toolgym_request(method, params), RESULT)


async def _text(client: Client, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    result = await client.call_tool(name, arguments)
    return "".join(block.text for block in result.content), result.is_error  # type: ignore[union-attr]


async def _lists_and_calls(client: Client) -> None:
    """What every transport must do: the exact agent tool list, in-process results, readable errors."""
    local = make_env("booking")
    local.reset({})
    listed = (await client.list_tools()).tools
    specs = local.tool_specs("agent")
    assert [t.name for t in listed] == [s.name for s in specs]
    for tool, spec in zip(listed, specs, strict=True):
        assert tool.description == spec.description and tool.input_schema == spec.parameters
    assert not any(t.name.startswith("toolgym") for t in listed)

    text, is_error = await _text(client, "list_cities", {})
    assert not is_error and text == local.call_tool("list_cities", {}).content

    text, is_error = await _text(client, "search_flights", BAD_TYPE)
    assert is_error and text == "Error: argument 'origin' must be a string; got integer 3"
    assert text == local.call_tool("search_flights", BAD_TYPE).content

    text, is_error = await _text(client, "search_flights", {"origin": "Austin"})
    assert is_error and "missing required argument(s) 'destination', 'date'" in text

    text, is_error = await _text(client, "drop_all_tables", {})
    assert is_error and "unknown tool 'drop_all_tables'" in text and "search_flights" in text
    local.close()


def test_stdio_lists_tools_and_calls_them() -> None:
    async def main() -> None:
        async with Client(stdio_params("booking")) as client:
            assert client.protocol_version == "2025-11-25"  # the handshake era, which has sessions
            assert client.server_info is not None and client.server_info.name == "toolgym-booking"
            assert client.instructions == make_env("booking").policy
            await _lists_and_calls(client)

    asyncio.run(main())


def test_http_lists_tools_and_calls_them() -> None:
    async def main(url: str) -> None:
        async with Client(url) as client:
            assert client.protocol_version == "2025-11-25"
            await _lists_and_calls(client)

    with http_server("booking") as url:
        assert url.startswith("http://127.0.0.1:")
        asyncio.run(main(url))


def test_http_sessions_do_not_see_each_others_writes_and_end_with_their_session() -> None:
    task = write_task("booking", "book_flight")
    reset = ResetParams(env_variables=task.env_variables)
    local = make_env("booking")
    local.reset(task.env_variables)
    fresh_bookings = local.call_tool("list_my_bookings", {}).content

    async def main(url: str) -> None:
        async with Client(url) as writer, Client(url) as reader:
            await _request(writer, RESET_METHOD, reset)
            await _request(reader, RESET_METHOD, reset)
            for call in task.reference_solution:
                _, is_error = await _text(writer, call.name, call.arguments)
                assert not is_error
            writer_view, _ = await _text(writer, "list_my_bookings", {})
            reader_view, _ = await _text(reader, "list_my_bookings", {})
            assert reader_view == fresh_bookings
            assert writer_view != fresh_bookings
            writer_changes = (await _request(writer, DIFF_METHOD))["changes"]
            assert writer_changes and any(c["op"] == "insert" for c in writer_changes)
            assert (await _request(reader, DIFF_METHOD))["changes"] == []
            assert (await _request(reader, INFO_METHOD))["live_sessions"] == 2

            # The databases a verifier reads: the writer's current copy has the new booking.
            current = decode_database(await _request(writer, DATABASE_METHOD, DatabaseParams(which="current")))
            seed = decode_database(await _request(reader, DATABASE_METHOD, DatabaseParams(which="seed")))
            assert current != seed and seed == local.db("seed").serialize()

            # reset: back to the seed, same session
            await _request(writer, RESET_METHOD, reset)
            assert (await _request(writer, DIFF_METHOD))["changes"] == []
            assert (await _text(writer, "list_my_bookings", {}))[0] == fresh_bookings
        async with Client(url) as observer:
            info = await _request(observer, INFO_METHOD)
            assert info["protocol"] == PROTOCOL and info["env"] == "booking"
            assert info["live_sessions"] == 0, "ended sessions must free their environments"

    with http_server("booking") as url:
        asyncio.run(main(url))
    local.close()


def test_env_vars_default_per_server_and_reset_replaces_them_per_session() -> None:
    task = write_task("booking", "book_flight")
    user = task.env_variables["LOGGED_IN_USER"]

    async def main() -> None:
        async with Client(stdio_params("booking", "--env-var", f"LOGGED_IN_USER={user}")) as client:
            info = await _request(client, INFO_METHOD)
            assert info["env_variables"] == {"LOGGED_IN_USER": user}
            text, is_error = await _text(client, "list_my_bookings", {})
            assert not is_error, text
            reply = await _request(client, RESET_METHOD, ResetParams(env_variables={"CURRENT_DATE": "2026-05-01"}))
            assert reply["env_variables"] == {"CURRENT_DATE": "2026-05-01"}
            text, is_error = await _text(client, "list_my_bookings", {})
            assert is_error and "LOGGED_IN_USER" in text
            await _request(client, RESET_METHOD, ResetParams())  # no env_variables: the server's defaults
            assert (await _request(client, INFO_METHOD))["env_variables"] == {"LOGGED_IN_USER": user}

    asyncio.run(main())


def test_stateless_clients_and_bad_methods_get_clear_errors() -> None:
    async def main(url: str) -> None:
        async with Client(url, mode="2026-07-28") as stateless:
            with pytest.raises(MCPError, match="one state per MCP session"):
                await stateless.call_tool("list_cities", {})
        async with Client(url) as client:
            with pytest.raises(MCPError, match="several apps; name one"):
                await _request(client, DATABASE_METHOD, DatabaseParams(which="seed"))
            payload = await _request(client, DATABASE_METHOD, DatabaseParams(which="seed", app="forum"))
            assert payload["app"] == "forum" and decode_database(payload) == make_env("forum").db("seed", "forum").serialize()
            with pytest.raises(MCPError, match="has no app 'mail'"):
                await _request(client, DATABASE_METHOD, DatabaseParams(which="seed", app="mail"))

    with http_server("booking+forum") as url:
        asyncio.run(main(url))


def test_cli_refuses_unknown_apps_and_malformed_env_vars() -> None:
    unknown = subprocess.run(serve_env_argv("bookng"), capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "unknown app 'bookng'" in unknown.stderr and "booking" in unknown.stderr
    assert unknown.stdout == ""
    malformed = subprocess.run(serve_env_argv("booking", "--env-var", "LOGGED_IN_USER"), capture_output=True,
                               text=True, timeout=120)
    assert malformed.returncode == 2 and "--env-var 'LOGGED_IN_USER': expected KEY=VALUE" in malformed.stderr
    assert parse_env_variables(["A=1", "B=x=y"]) == {"A": "1", "B": "x=y"}


# -- what a browser page or a stranger may not do --------------------------------------------------

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
KEY = "toolgym-env-test-key"


def _abandoned_session(url: str, headers: dict[str, str] | None = None) -> str:
    """A client that opens a session, calls a tool (so the session holds its databases) and goes away
    without ending it: only the idle timeout frees it."""
    base = {**MCP_HEADERS, **(headers or {})}
    opened = httpx.post(url, json=INITIALIZE, headers=base, timeout=30)
    assert opened.status_code == 200, opened.text
    session = {**base, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session, timeout=30)
    called = httpx.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                   "params": {"name": "list_cities", "arguments": {}}}, headers=session, timeout=30)
    assert called.status_code == 200 and '"isError":false' in called.text, called.text
    return opened.headers["mcp-session-id"]


async def _live_sessions(url: str) -> int:
    async with Client(url) as client:
        return int((await _request(client, INFO_METHOD))["live_sessions"])


def _live_sessions_or_none(url: str) -> int | None:
    """Sessions holding databases, as a fresh client sees them; None while the server refuses it."""
    try:
        return asyncio.run(_live_sessions(url))
    except ExceptionGroup as refused:
        assert refused.subgroup(lambda e: isinstance(e, MCPError) and "at its limit" in str(e)), refused
        return None


def _jsonrpc_refusal(status: int, reply: httpx.Response) -> str:
    """The message of a refusal sent as a JSON-RPC error (what MCP clients surface as MCPError)."""
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    return str(body["error"]["message"])


def test_http_refuses_foreign_hosts_origins_and_oversized_bodies() -> None:
    with http_server("booking") as url:
        port = url.split(":")[2].split("/")[0]
        rebound = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Host": f"attacker.example:{port}"})
        assert "Host" in _jsonrpc_refusal(421, rebound)
        cross_site = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://attacker.example"})
        assert "origin" in _jsonrpc_refusal(403, cross_site)
        same_site = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": f"http://localhost:{port}"})
        assert same_site.status_code == 200
        declared = raw_post(url, {**MCP_HEADERS, "Content-Length": str(10 * 1024 * 1024)})
        assert declared.status == 413 and "body limit" in declared.json()["error"]["message"]
        streamed = raw_post(url, {**MCP_HEADERS, "Transfer-Encoding": "chunked"}, chunked(DEFAULT_MAX_BODY_BYTES + 1))
        assert streamed.status == 413

        async def still_serves() -> None:
            async with Client(url) as client:
                assert (await _text(client, "list_cities", {}))[1] is False

        asyncio.run(still_serves())


def _check_env_key(url: str) -> None:
    async def without_key() -> None:
        async with Client(url):
            pass

    with pytest.raises(ExceptionGroup) as refused:
        asyncio.run(without_key())
    assert refused.group_contains(MCPError, match="needs an API key", depth=None)
    assert "not this server's key" in _jsonrpc_refusal(
        401, httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer wrong"}))
    wrong = RemoteMCPEnvironment(url, env_name="booking", headers={"Authorization": "Bearer nope"})
    with wrong, pytest.raises(EnvError, match="not this server's key"):
        wrong.reset({})
    with RemoteMCPEnvironment(url, env_name="booking", headers={"Authorization": f"Bearer {KEY}"}) as env:
        env.reset({})
        assert not env.call_tool("list_cities", {}).is_error


def test_http_api_key_from_the_flag_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with http_server("booking", "--api-key", KEY) as url:
        _check_env_key(url)
    monkeypatch.setenv(API_KEY_ENV, KEY)
    with http_server("booking") as url:
        _check_env_key(url)


def test_http_caps_live_sessions_and_frees_idle_ones() -> None:
    with http_server("booking", "--max-sessions", "2", "--session-idle-timeout", "4") as url:
        _abandoned_session(url)
        _abandoned_session(url)
        full = httpx.post(url, json=INITIALIZE, headers=MCP_HEADERS, timeout=30)
        message = _jsonrpc_refusal(503, full)
        assert full.headers["retry-after"] == "4"
        assert "at its limit of 2 live MCP sessions (--max-sessions)" in message
        assert "an idle session ends after 4 s" in message
        refused = RemoteMCPEnvironment(url, env_name="booking")
        with refused, pytest.raises(EnvError, match="at its limit of 2 live MCP sessions"):
            refused.reset({})

        # The abandoned sessions expire, their databases are closed, and new sessions are let in again.
        deadline = time.monotonic() + 30
        while (live := _live_sessions_or_none(url)) != 0:
            assert time.monotonic() < deadline, f"idle sessions were never freed (live: {live})"
            time.sleep(0.5)

        async def connected_clients_are_not_idle() -> None:
            async with Client(url) as first, Client(url) as second:
                await _text(first, "list_cities", {})
                await _text(second, "list_cities", {})
                await asyncio.sleep(5)  # past the idle timeout, but each holds its GET stream open
                assert (await _request(first, INFO_METHOD))["live_sessions"] == 2
                assert (await _text(second, "list_cities", {}))[1] is False

        asyncio.run(connected_clients_are_not_idle())
