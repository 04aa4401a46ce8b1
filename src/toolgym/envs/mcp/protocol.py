"""What a toolgym MCP env server and its clients agree on, beyond the MCP spec itself.

Agent tools are plain MCP tools (`tools/list`, `tools/call`). What a trainer needs and an agent
must never reach - resetting the session with a task's env_variables, the seed → current diff,
the databases for verifiers - are custom JSON-RPC methods under `toolgym/`, not tools: an MCP
host only ever offers tools to a model, so these cannot show up in (or be guessed from) the
agent's tool list, and no tool name is reserved.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from typing import Any, Literal

import mcp_types as types
from mcp_types import RequestParams
from pydantic import TypeAdapter

PROTOCOL = "toolgym.mcp/1"

INFO_METHOD = "toolgym/info"  # what is served: env, version, apps, policy, agent and user tool specs
RESET_METHOD = "toolgym/reset"  # a fresh copy of the seed for this session, with env_variables
DIFF_METHOD = "toolgym/diff"  # the session's seed → current row changes
DATABASE_METHOD = "toolgym/database"  # one app's seed or current database, serialized

# `tools/call` `_meta` key: who calls ("agent" or "user", for dual-control user-side tools).
CALLER_META_KEY = "toolgym/caller"
DATABASE_ENCODING = "sqlite+zlib+base64"


class ToolgymRequest(types.Request[dict[str, Any] | None, str]):
    """A `toolgym/*` request for `ClientSession.send_request` (the SDK sends any Request model)."""

    method: str
    params: dict[str, Any] | None = None


RESULT = TypeAdapter(dict[str, Any])


def toolgym_request(method: str, params: RequestParams | None = None) -> ToolgymRequest:
    """The request for `method`, params on the wire in MCP's camelCase (`envVariables`)."""
    payload = params.model_dump(by_alias=True, exclude_none=True) if params is not None else None
    return ToolgymRequest(method=method, params=payload)


class ResetParams(RequestParams):
    """`env_variables` replace the server's defaults for this session; None keeps the defaults."""

    env_variables: dict[str, str] | None = None


class DiffParams(RequestParams):
    app: str | None = None


class DatabaseParams(RequestParams):
    which: Literal["seed", "current"] = "current"
    app: str | None = None


def encode_database(data: bytes) -> dict[str, Any]:
    """SQLite pages compress ~5x: the seed of the largest app fits one message comfortably."""
    return {
        "encoding": DATABASE_ENCODING,
        "sha256": hashlib.sha256(data).hexdigest(),
        "data": base64.b64encode(zlib.compress(data, 6)).decode("ascii"),
    }


def decode_database(payload: dict[str, Any]) -> bytes:
    """The serialized database back from `encode_database`; a damaged payload raises ValueError."""
    if payload.get("encoding") != DATABASE_ENCODING:
        raise ValueError(f"unknown database encoding {payload.get('encoding')!r}; expected {DATABASE_ENCODING!r}")
    try:
        data = zlib.decompress(base64.b64decode(payload["data"]))
    except (KeyError, ValueError, zlib.error) as exc:
        raise ValueError(f"database payload is damaged: {type(exc).__name__}: {exc}") from exc
    if hashlib.sha256(data).hexdigest() != payload.get("sha256"):
        raise ValueError("database payload does not match its sha256")
    return data


_BYTES_KEY = "$bytes"


def encode_value(value: Any) -> Any:
    """A column value as JSON: BLOBs travel tagged as base64 so a diff never loses them."""
    if isinstance(value, bytes | bytearray | memoryview):
        return {_BYTES_KEY: base64.b64encode(bytes(value)).decode("ascii")}
    return value


def decode_value(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {_BYTES_KEY}:
        return base64.b64decode(value[_BYTES_KEY])
    return value


def encode_row(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {k: encode_value(v) for k, v in row.items()}


def decode_row(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {k: decode_value(v) for k, v in row.items()}
