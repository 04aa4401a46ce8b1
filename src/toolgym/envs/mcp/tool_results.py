"""A `tools/call` result as the text a model reads."""

from __future__ import annotations

import json

import mcp_types as types


def result_text(result: types.CallToolResult, result_field: str | None = None) -> str:
    """Text blocks joined; other blocks named; structured content as JSON when there is no text.

    `result_field` picks one field of the structured content instead (a server that wraps each
    result in bookkeeping, e.g. `parsed_content`); a result without that field reads as usual.
    """
    structured = result.structured_content
    if result_field is not None and isinstance(structured, dict) and result_field in structured:
        value = structured[result_field]
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{block.type} content]")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)
