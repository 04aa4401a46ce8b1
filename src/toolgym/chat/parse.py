"""Tool-call parsers per model family: text of one assistant turn → content, calls, errors, reasoning.

A malformed call never raises: it becomes an error string that tells the model what was wrong, so
one bad generation costs a turn, not a batch. That holds for any string: a call's JSON may nest
at most `MAX_JSON_DEPTH` levels and its integers have at most `MAX_INT_DIGITS` digits (so neither
Python's recursion limit nor its int-conversion limit is ever reached); NaN, ±Infinity and numbers
that overflow a float (1e400), unpaired surrogates, and keys other than "name" and "arguments"
(or the aliases below) make the call a format error rather than a call with odd arguments.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolgym.schema import ToolCall

# Tokens that may trail a turn's text when it is decoded with special tokens kept.
TRAILING_STOP_TOKENS = ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>")
_SNIPPET_CHARS = 80
MAX_JSON_DEPTH = 32  # far more than a call needs, far below Python's recursion limit
MAX_INT_DIGITS = 100  # far below Python's 4,300-digit int-conversion limit
# Keys of a call object: "parameters" is an alias of "arguments" some models use; "id" and "type"
# are metadata. OpenAI's shape wraps the call as {"type": "function", "function": {...}, "id": ...}.
CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type"})
WRAPPER_KEYS = frozenset({"type", "function", "id"})
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_STRUCTURE = re.compile(r'[\[\]{}"\\]')


class _Rejected(ValueError):
    """JSON that parses but must not become a call (NaN, an overflowing number, a 5000-digit integer)."""


def _reject_constant(name: str) -> Any:
    raise _Rejected(f"{name} is not a JSON number (numbers must be finite)")


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _Rejected(f"an integer of {len(digits.lstrip('-')):,} digits is too long (at most {MAX_INT_DIGITS})")
    return int(digits)


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Rejected(f"the number {_snippet(text)} is too large (numbers must be finite)")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_parse_int, parse_float=_parse_float)


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


def _too_deep(text: str) -> bool:
    """Whether JSON text nests arrays/objects deeper than MAX_JSON_DEPTH (strings skipped), in one pass."""
    depth, in_string, skip_to = 0, False, -1
    for match in _JSON_STRUCTURE.finditer(text):
        at = match.start()
        if at < skip_to:
            continue
        char = match.group()
        if in_string:
            if char == "\\":
                skip_to = at + 2  # the escaped character is not structure
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _unsafe_text(value: Any) -> str | None:
    """The first unpaired surrogate anywhere in a parsed JSON value (keys included), escaped, or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if match := _SURROGATE.search(item):
                return ascii(match.group())[1:-1]
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return None


def _decode(text: str) -> tuple[Any, int, str | None]:
    """(value, end, problem): the first JSON value of `text` under the module's limits; never raises."""
    if _too_deep(text):
        return None, 0, f"the JSON nests deeper than {MAX_JSON_DEPTH} levels"
    try:
        value, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError as exc:
        return None, 0, f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    except _Rejected as exc:
        return None, 0, str(exc)
    except (ValueError, RecursionError) as exc:  # defensive: the limits above keep these away
        return None, 0, f"the JSON could not be read ({type(exc).__name__})"
    if surrogate := _unsafe_text(value):
        return None, 0, f"the text holds an unpaired surrogate ({surrogate}); write valid Unicode"
    return value, end, None


def strip_trailing_stop(text: str) -> str:
    """Drop stop tokens (and whitespace before them) at the end of a decoded turn; linear in the text."""
    end = len(text)
    while True:
        stripped = end
        while stripped and text[stripped - 1].isspace():
            stripped -= 1
        token = next((t for t in TRAILING_STOP_TOKENS if text.endswith(t, 0, stripped)), None)
        if token is None:
            return text[:end]
        end = stripped - len(token)


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
        text = value.strip()
        value, end, problem = _decode(text)
        if problem is None and text[end:]:
            problem = f"extra text at position {end}"
        if problem is not None:
            return None, f"{where}: \"arguments\" is a string that is not valid JSON: {problem}; give arguments as a JSON object"
    if isinstance(value, dict):
        return value, None
    return None, f"{where}: \"arguments\" must be a JSON object, got {_type_name(value)} {_snippet(json.dumps(value))}"


def _keys(keys: Any) -> str:
    return ", ".join(_snippet(json.dumps(k)) for k in sorted(keys))


def call_from_object(data: Any, where: str) -> tuple[ToolCall | None, str | None]:
    """A parsed JSON value → ToolCall, accepting `{"name","arguments"}`, `"parameters"` and OpenAI's `function`."""
    if not isinstance(data, dict):
        return None, f'{where}: expected a JSON object like {{"name": ..., "arguments": {{...}}}}, got {_type_name(data)}'
    allowed = CALL_KEYS
    if isinstance(data.get("function"), dict):
        if unknown := sorted(set(data) - WRAPPER_KEYS):
            return None, f'{where}: unknown key(s) {_keys(unknown)} around "function"; it may hold only {_keys(WRAPPER_KEYS)}'
        data, allowed = data["function"], CALL_KEYS - {"id", "type"}
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        got = "no \"name\"" if name is None else f"\"name\" {_snippet(json.dumps(name))}"
        return None, f"{where}: the call has {got}; give the tool name as a non-empty string"
    if unknown := sorted(set(data) - allowed):
        return None, (
            f'{where} ({_snippet(name)}): unknown key(s) {_keys(unknown)} in the call; a call has "name" and "arguments", '
            'and the tool\'s arguments go under "arguments"'
        )
    if "arguments" in data and "parameters" in data:
        return None, f'{where} ({_snippet(name)}): the call has both "arguments" and "parameters"; give the arguments once, as "arguments"'
    raw_arguments = data.get("arguments", data.get("parameters"))
    arguments, error = decode_arguments(raw_arguments, f"{where} ({_snippet(name)})")
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
    data, end, problem = _decode(text)
    if problem is not None:
        return None, f"{where}: {problem}" + (f" in {_snippet(text)}" if problem.startswith("invalid JSON") else "")
    if text[end:].strip():
        return None, f"{where}: unexpected text after the JSON object at position {end}: {_snippet(text[end:])}"
    return call_from_object(data, where)


def _value_problem(value: Any) -> str | None:
    """What breaks this module's JSON rules anywhere in an already-decoded value, or None."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, float) and not math.isfinite(item):
            return f"{item} is not a JSON number (numbers must be finite)"
        if isinstance(item, int) and item.bit_length() * 0.30103 > MAX_INT_DIGITS:
            return f"an integer of about {int(item.bit_length() * 0.30103) + 1} digits is too long (at most {MAX_INT_DIGITS})"
        if isinstance(item, str) and (match := _SURROGATE.search(item)):
            return f"the text holds an unpaired surrogate ({ascii(match.group())[1:-1]}); write valid Unicode"
        if isinstance(item, list | dict):
            if depth >= MAX_JSON_DEPTH:
                return f"the JSON nests deeper than {MAX_JSON_DEPTH} levels"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return None


def screen_calls(calls: list[ToolCall]) -> tuple[list[ToolCall], list[str]]:
    """(calls, errors): calls another parser produced (a server's, in chat mode) held to this module's
    rules, so an unsafe one is a format error here too instead of a call; never raises."""
    kept: list[ToolCall] = []
    errors: list[str] = []
    for index, call in enumerate(calls, start=1):
        problem = _value_problem(call.name) or _value_problem(call.arguments)
        if problem is None:
            kept.append(call)
        else:
            errors.append(f"tool call {index} ({_snippet(ascii(call.name)[1:-1])}): {problem}")
    return kept, errors


class HermesParser:
    """Hermes / Qwen format: `<tool_call>{"name": …, "arguments": …}</tool_call>`, any number per turn."""

    name = "hermes"
    open_tag = "<tool_call>"
    close_tag = "</tool_call>"

    def parse(self, text: str) -> ParseResult:
        try:
            return self._parse(text)
        except Exception as exc:  # the contract is "never raises": a parser bug costs the turn, not the batch
            return ParseResult(
                content=text if isinstance(text, str) else "",
                errors=[f"the turn could not be read ({type(exc).__name__}); write plain text or "
                        f"{self.open_tag}{{\"name\": ..., \"arguments\": {{...}}}}{self.close_tag}"],
            )

    def _parse(self, text: str) -> ParseResult:
        text = strip_trailing_stop(text)
        reasoning, rest, think_error = split_reasoning(text)
        errors = [think_error] if think_error else []
        calls: list[ToolCall] = []
        content_parts: list[str] = []
        position = 0
        index = 0
        next_close = -2  # the first close tag at or after the current call; -1: none left (kept, so no rescans)
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
            if next_close != -1 and next_close < body_start:
                next_close = rest.find(self.close_tag, body_start)
            close = next_close
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
