"""The grammar of a forced tool call: its arguments held to the tool's JSON schema, its name to the offered tools.

`tool_choice` starts the assistant turn with the call's opening (`toolgym.policy.server_chat.constraint`),
and this grammar covers the rest of the turn: for a named function, the arguments and the close tag;
for `required`, the name too, as an alternation over the allowed tools, each followed by its own
arguments, so the model picks the tool token by token under the mask.

The arguments are written in the style the model learned (`json.dumps`: `", "` and `": "`, no other
whitespace), and a schema is tightened only where it leaves the model room to run away: an object
that does not say otherwise gets only its declared properties (OpenAI's strict mode does the same), a
free string at most MAX_STRING_CHARS characters, and an integer without bounds stays within JSON's
exactly representable range. What stays free is generated under the client's own bounds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolgym.policy.grammar import literal
from toolgym.schema import ToolSpec

# A string the schema does not bound: longer than this, a small model is repeating itself, not writing an argument.
MAX_STRING_CHARS = 128
MAX_SAFE_INTEGER = 2**53 - 1  # JSON numbers are exact up to here (RFC 8259, I-JSON)
# llguidance's JSON options: the separators `json.dumps` writes, no free whitespace, and schema
# keywords it does not implement ignored rather than refused (the strict check still applies after).
JSON_STYLE = {"item_separator": ", ", "key_separator": ": ", "whitespace_flexible": False, "lenient": True}
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
# Only where a subschema says what a value may be: tightening one under `not` or `if` would loosen the whole.
_SUBSCHEMAS = ("items", "additionalProperties")


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    return {k for k in kind if isinstance(k, str)} if isinstance(kind, list) else set()


def bounded(schema: Any) -> Any:
    """A copy of `schema` with the bounds the grammar adds where the schema gives none (see the module docstring)."""
    if isinstance(schema, list):
        return [bounded(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: bounded(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS or key in _SUBSCHEMAS:
            out[key] = bounded(value)
        else:
            out[key] = value
    kinds = _types(out)
    if ("object" in kinds or "properties" in out) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    free = not any(k in out for k in ("enum", "const", "pattern", "format"))
    if "string" in kinds and free and "maxLength" not in out:
        out["maxLength"] = MAX_STRING_CHARS
    if "integer" in kinds and free:
        if "minimum" not in out and "exclusiveMinimum" not in out:
            out["minimum"] = -MAX_SAFE_INTEGER
        if "maximum" not in out and "exclusiveMaximum" not in out:
            out["maximum"] = MAX_SAFE_INTEGER
    return out


def arguments_rule(parameters: dict[str, Any]) -> str:
    """A Lark `%json` body for one tool's arguments object."""
    schema = bounded(parameters or {"type": "object", "properties": {}})
    return "%json " + json.dumps({**schema, "x-guidance": JSON_STYLE})


def call_grammar(tools: Sequence[ToolSpec], close: str, *, named: bool) -> str:
    """Lark grammar for the rest of a call whose opening is already written.

    `named`: the opening ends after `"arguments":` and `tools` is the one tool; otherwise it ends after
    `"name": "` and the model chooses among `tools`. `close` is the Lark terminal of the close tag."""
    if named:
        (tool,) = tools
        return f'start: " " args "}}\\n" {close}\nargs: {arguments_rule(tool.parameters)}\n'
    lines = ["start: " + " | ".join(f"call_{index}" for index in range(len(tools)))]
    for index, tool in enumerate(tools):
        name = literal(json.dumps(tool.name)[1:] + ', "arguments": ')
        lines.append(f'call_{index}: {name} args_{index} "}}\\n" {close}')
        lines.append(f"args_{index}: {arguments_rule(tool.parameters)}")
    return "\n".join(lines) + "\n"
