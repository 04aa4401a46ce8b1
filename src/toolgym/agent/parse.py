"""Tool-call parsers per model family: text of one assistant turn → content, calls, errors, reasoning.

A malformed call never raises: it becomes an error string that tells the model what was wrong, so
one bad generation costs a turn, not a batch (ANCHORS complaint 3).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolgym.schema import ToolCall

# Tokens that may trail a turn's text when it is decoded with special tokens kept.
TRAILING_STOP_TOKENS = ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>")
_SNIPPET_CHARS = 80


@dataclass
class ParseResult:
    """`content` is the text outside well-formed calls (a malformed call stays in it, verbatim)."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    reasoning: str | None = None


class ToolCallParser(Protocol):
    """Turns one assistant turn's text into a ParseResult; must never raise on model output."""

    name: str

    def parse(self, text: str) -> ParseResult: ...


def _snippet(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SNIPPET_CHARS else text[: _SNIPPET_CHARS - 3] + "..."


def _type_name(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def strip_trailing_stop(text: str) -> str:
    """Drop stop tokens (and whitespace) at the end of a decoded turn."""
    changed = True
    while changed:
        changed = False
        stripped = text.rstrip()
        for token in TRAILING_STOP_TOKENS:
            if stripped.endswith(token):
                text = stripped[: -len(token)]
                changed = True
    return text


def split_reasoning(text: str, open_tag: str = "<think>", close_tag: str = "</think>") -> tuple[str | None, str, str | None]:
    """(reasoning, rest, error): a `<think>…</think>` block before the answer becomes reasoning."""
    close_at = text.find(close_tag)
    if close_at >= 0:
        before = text[:close_at]
        open_at = before.find(open_tag)
        reasoning = before[open_at + len(open_tag) :] if open_at >= 0 else before
        return reasoning.strip(), text[close_at + len(close_tag) :], None
    open_at = text.find(open_tag)
    if open_at >= 0:
        reasoning = text[open_at + len(open_tag) :].strip()
        return reasoning, text[:open_at], f"the {open_tag} block was never closed; end it with {close_tag} before the answer or tool call"
    return None, text, None


def decode_arguments(raw: Any, where: str) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments as an object: accept an object, a JSON string of one, or a doubly encoded string."""
    value = raw
    for _ in range(3):  # object, "…object…", "\"…object…\""
        if value is None or value == "":
            return {}, None
        if isinstance(value, dict):
            return value, None
        if not isinstance(value, str):
            break
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            return None, (
                f"{where}: \"arguments\" is a string that is not valid JSON ({exc.msg} at position {exc.pos}); "
                "give arguments as a JSON object"
            )
    if isinstance(value, dict):
        return value, None
    return None, f"{where}: \"arguments\" must be a JSON object, got {_type_name(value)} {_snippet(json.dumps(value))}"


def call_from_object(data: Any, where: str) -> tuple[ToolCall | None, str | None]:
    """A parsed JSON value → ToolCall, accepting `{"name","arguments"}`, `"parameters"` and OpenAI's `function`."""
    if not isinstance(data, dict):
        return None, f'{where}: expected a JSON object like {{"name": ..., "arguments": {{...}}}}, got {_type_name(data)}'
    if isinstance(data.get("function"), dict):
        data = data["function"]
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        got = "no \"name\"" if name is None else f"\"name\" {json.dumps(name)}"
        return None, f"{where}: the call has {got}; give the tool name as a non-empty string"
    raw_arguments = data.get("arguments", data.get("parameters"))
    arguments, error = decode_arguments(raw_arguments, f"{where} ({name})")
    if error is not None or arguments is None:
        return None, error
    return ToolCall(name=name.strip(), arguments=arguments), None


def _strip_code_fence(body: str) -> str:
    match = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, flags=re.DOTALL)
    return match.group(1) if match else body


def parse_call_json(body: str, where: str) -> tuple[ToolCall | None, str | None]:
    """One call body (the JSON between the tags) → ToolCall or an error naming the position."""
    text = _strip_code_fence(body.strip())
    if not text:
        return None, f'{where}: the call is empty; write {{"name": ..., "arguments": {{...}}}} inside the tags'
    try:
        data, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError as exc:
        return None, f"{where}: invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}) in {_snippet(text)}"
    if text[end:].strip():
        return None, f"{where}: unexpected text after the JSON object at position {end}: {_snippet(text[end:])}"
    return call_from_object(data, where)


class HermesParser:
    """Hermes / Qwen format: `<tool_call>{"name": …, "arguments": …}</tool_call>`, any number per turn."""

    name = "hermes"
    open_tag = "<tool_call>"
    close_tag = "</tool_call>"

    def parse(self, text: str) -> ParseResult:
        text = strip_trailing_stop(text)
        reasoning, rest, think_error = split_reasoning(text)
        errors = [think_error] if think_error else []
        calls: list[ToolCall] = []
        content_parts: list[str] = []
        position = 0
        index = 0
        while True:
            start = rest.find(self.open_tag, position)
            if start < 0:
                tail = rest[position:]
                if self.close_tag in tail:
                    errors.append(f"found {self.close_tag} without a matching {self.open_tag}")
                content_parts.append(tail)
                break
            index += 1
            content_parts.append(rest[position:start])
            body_start = start + len(self.open_tag)
            close = rest.find(self.close_tag, body_start)
            next_open = rest.find(self.open_tag, body_start)
            if close < 0 or (0 <= next_open < close):
                # A call without its closing tag: the turn stopped on "</tool_call>" or the model forgot it.
                end = next_open if next_open >= 0 else len(rest)
                block_end = end
            else:
                end = close
                block_end = close + len(self.close_tag)
            call, error = parse_call_json(rest[body_start:end], f"tool call {index}")
            if call is not None:
                calls.append(call)
            else:
                errors.append(error or f"tool call {index}: could not be read")
                content_parts.append(rest[start:block_end])
            position = block_end
        content = "".join(content_parts).strip()
        return ParseResult(content=content, tool_calls=calls, errors=errors, reasoning=reasoning)


PARSERS: dict[str, Callable[[], ToolCallParser]] = {
    "hermes": HermesParser,
    "qwen": HermesParser,
    "qwen3": HermesParser,
}


def register_parser(name: str, factory: Callable[[], ToolCallParser]) -> None:
    """Add a model family's parser (e.g. from a plugin) under `name`."""
    PARSERS[name] = factory


def get_parser(name: str = "hermes") -> ToolCallParser:
    if name not in PARSERS:
        raise KeyError(f"unknown tool-call parser {name!r}; known parsers: {', '.join(sorted(PARSERS))}")
    return PARSERS[name]()
