"""Chat completions for `toolgym serve policy`: prompts in the model's own style, tool_choice kept, calls checked.

- Prompt style: a compact-style model (toolgym.json `prompt_style`, the default model's) reads its
  tools as one-line signatures in the system prompt, so a client that did not write them there gets
  them written there (its own system text first), never the template's full JSON schemas, which are
  several times longer and which the model was not trained on.
- tool_choice is constrained, not hoped for: `none` stops generation where a call would open, so no
  call is ever returned; a named function starts the assistant turn with that call's opening, up to
  its arguments, and `required` up to the name; the rest of the call is generated under a grammar
  (`toolgym.policy.call_grammar`): the name one of the allowed tools, the arguments valid for that
  tool's JSON schema, then the close tag. Both give exactly one call; `parallel_tool_calls: false`
  stops after the first.
- Every call is checked against the request: a call to a tool that was not offered (or that
  tool_choice does not allow), or, for a `strict` tool, with arguments that do not match its
  schema's top level, is not returned as a call. Its text stays in `content` where the model wrote
  it, and the choice's `tool_call_errors` (a field OpenAI does not have) says why. When tool_choice
  demanded a call and none is valid (under the grammar, only a turn cut by `max_tokens` or by the
  request's own stop strings), the reply is still HTTP 200, with `finish_reason` "length" or "stop",
  no `tool_calls`, and `tool_call_errors` saying so: a model's failure is not the client's error
  (400), and a server fault (500) would be retried by clients, for nothing at temperature 0.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolgym.chat.parse import ToolCallParser, split_reasoning, strip_trailing_stop
from toolgym.chat.render import PromptStyle, system_prompt
from toolgym.policy.base import Generation
from toolgym.policy.call_grammar import call_grammar
from toolgym.policy.grammar import literal
from toolgym.policy.oracle import hermes_text
from toolgym.policy.server_request import BadRequest, ChatRequest, ToolChoice
from toolgym.policy.server_scoring import TopLogprobs
from toolgym.schema import Message, ToolCall, ToolSpec

_JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")


def prompt_messages(messages: list[Message], tools: Sequence[ToolSpec], prompt_style: PromptStyle) -> list[Message]:
    """The messages the model reads: a compact-style model gets its tools' signatures in the system prompt.

    A system prompt that already lists every signature (toolgym's own compact renderer wrote it) is
    left as it is; any other gets the compact tool section after its own text.
    """
    if prompt_style != "compact" or not tools:
        return messages
    has_system = messages[0].role == "system"
    system = (messages[0].content or "") if has_system else ""
    if has_system and all(t.signature() in system for t in tools):
        return messages
    head = Message(role="system", content=system_prompt(system, {}, tools, "compact"))
    return [head, *messages[1:]] if has_system else [head, *messages]


def named_prefill(open_tag: str, name: str) -> str:
    """The opening of a call to `name`, up to the arguments' colon: the model writes " {...}" itself,
    tokenized the way it learned it."""
    return f'{open_tag}\n{{"name": {json.dumps(name)}, "arguments":'


@dataclass(frozen=True)
class Constraint:
    """How the generation is held to tool_choice: text the assistant turn starts with, extra stops, and
    the grammar (Lark, llguidance's dialect) the rest of the turn follows (None: free text)."""

    prefill: str = ""
    stops: tuple[str, ...] = ()
    grammar: str | None = None


def constraint(choice: ToolChoice, parallel_tool_calls: bool, parser: ToolCallParser,
               tools: Sequence[ToolSpec], terminal: Callable[[str], str] = literal) -> Constraint:
    """The prefill, stop strings and grammar that make the model's turn obey `choice` (see the module docstring).

    `terminal` writes a tag as a grammar terminal (`GrammarTokenizer.terminal`: the tag's own token
    where the tokenizer has one)."""
    open_tag, close_tag = getattr(parser, "open_tag", None), getattr(parser, "close_tag", None)
    if not isinstance(open_tag, str) or not isinstance(close_tag, str):
        if choice.mode == "auto" and parallel_tool_calls:
            return Constraint()
        raise BadRequest(f"tool_choice and parallel_tool_calls need a tag-based tool-call parser; "
                         f"this server's is {getattr(parser, 'name', '?')!r}", "tool_choice")
    if choice.mode == "none":
        return Constraint(stops=(open_tag,))
    if choice.forced is not None:
        forced = [t for t in tools if t.name == choice.forced]
        return Constraint(named_prefill(open_tag, choice.forced), (close_tag,),
                          call_grammar(forced, terminal(close_tag), named=True))
    if choice.mode == "required":
        allowed = [t for t in tools if choice.allowed is None or t.name in choice.allowed]
        return Constraint(f'{open_tag}\n{{"name": "', (close_tag,),
                          call_grammar(allowed, terminal(close_tag), named=False))
    return Constraint(stops=() if parallel_tool_calls else (close_tag,))


def _type_matches(value: Any, kind: Any) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = {"string": str, "boolean": bool, "array": list, "object": dict, "null": type(None)}.get(kind)
    return expected is None or isinstance(value, expected)


def strict_problem(arguments: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """Why `arguments` break a strict tool's schema at its top level (required, unknown keys, types, enums)."""
    properties = schema.get("properties") or {}
    missing = [name for name in schema.get("required") or [] if name not in arguments]
    if missing:
        return f"missing required argument(s) {', '.join(map(repr, missing))}"
    unknown = [name for name in arguments if name not in properties]
    if unknown:
        return f"unknown argument(s) {', '.join(map(repr, unknown))}"
    for name, value in arguments.items():
        sub = properties.get(name)
        if not isinstance(sub, dict):
            continue
        kinds = sub.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if isinstance(kinds, list) and kinds and not any(_type_matches(value, k) for k in kinds if k in _JSON_TYPES):
            return f"argument {name!r} must be of type {'|'.join(map(str, kinds))}"
        if isinstance(sub.get("enum"), list) and value not in sub["enum"]:
            return f"argument {name!r} must be one of {sub['enum']!r}"
    return None


@dataclass
class Reply:
    """One choice's assistant turn after parsing and checking."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    errors: list[str] = field(default_factory=list)  # why text that looked like a call is not a call
    finish_reason: str = "stop"


def _blocks(text: str, open_tag: str, close_tag: str) -> list[tuple[bool, str]]:
    """`text` cut into (is_call_block, piece) in order, blocks delimited exactly as HermesParser cuts them."""
    pieces: list[tuple[bool, str]] = []
    position = 0
    while (start := text.find(open_tag, position)) >= 0:
        pieces.append((False, text[position:start]))
        body_start = start + len(open_tag)
        close, next_open = text.find(close_tag, body_start), text.find(open_tag, body_start)
        if close < 0 or 0 <= next_open < close:
            end = next_open if next_open >= 0 else len(text)
        else:
            end = close + len(close_tag)
        pieces.append((True, text[start:end]))
        position = end
    pieces.append((False, text[position:]))
    return pieces


def _content_without(text: str, parser: ToolCallParser, returned: list[bool]) -> str | None:
    """The turn's text with only the returned calls taken out, everything else where the model wrote it
    (None for a parser whose calls are not tag-delimited blocks)."""
    open_tag, close_tag = getattr(parser, "open_tag", None), getattr(parser, "close_tag", None)
    if not isinstance(open_tag, str) or not isinstance(close_tag, str):
        return None
    _, rest, _ = split_reasoning(strip_trailing_stop(text))
    kept: list[str] = []
    calls = iter(returned)
    for is_block, piece in _blocks(rest, open_tag, close_tag):
        # A block that parses to a call is the next of the parser's calls, in order.
        if is_block and parser.parse(piece).tool_calls and next(calls, False):
            continue
        kept.append(piece)
    return "".join(kept).strip()


def build_reply(text: str, finish_reason: str, parser: ToolCallParser, request: ChatRequest) -> Reply:
    """Parse one turn's text and keep only the calls the request allows (the rest stay in the content)."""
    parsed = parser.parse(text)
    offered = {t.name: t for t in request.tools}
    allowed = request.tool_choice.allowed
    calls: list[ToolCall] = []
    returned: list[bool] = []
    errors = list(parsed.errors)
    for index, call in enumerate(parsed.tool_calls, start=1):
        where = f"tool call {index} ({call.name})"
        problem = None
        if call.name not in offered:
            problem = f"{where}: no tool named {call.name!r} was offered"
        elif allowed is not None and call.name not in allowed:
            problem = f"{where}: tool_choice allows only {', '.join(sorted(allowed))}"
        elif call.name in request.strict_tools and (
            issue := strict_problem(call.arguments, offered[call.name].parameters)
        ):
            problem = f"{where}: the arguments do not match the strict schema: {issue}"
        if problem is None and calls and not request.parallel_tool_calls:
            problem = f"{where}: parallel_tool_calls is false and a call was already made"
        if problem is None:
            calls.append(call)
        else:
            errors.append(problem)
        returned.append(problem is None)
    content = parsed.content if all(returned) else _content_without(text, parser, returned)
    if content is None:  # another parser's format: the refused calls are appended as text
        content = "\n".join([parsed.content, *(hermes_text(c) for c, ok in zip(parsed.tool_calls, returned,
                                                                             strict=True) if not ok)]).strip()
    if request.tool_choice.mode == "required" and not calls:
        wanted = request.tool_choice.forced or "one of the offered tools"
        cut = " before it was complete (max_tokens)" if finish_reason == "length" else ""
        errors.append(f"tool_choice required a call to {wanted}, and the model's turn ended{cut} without a valid one")
    finish = "tool_calls" if calls and finish_reason == "stop" else finish_reason
    return Reply(content or (None if calls else ""), calls, parsed.reasoning, errors, finish)


def call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def message_dict(reply: Reply, ids: list[str]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [call.to_openai(i) for call, i in zip(reply.tool_calls, ids, strict=True)]
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    return message


def reply_token_count(generation: Generation, stop_token_ids: Sequence[int]) -> int:
    """Sampled tokens that belong to the reply: all but a final token that only closes the turn."""
    ids = generation.completion_ids
    return len(ids) - 1 if ids and ids[-1] in stop_token_ids else len(ids)


def _token(tokenizer: Any, token_id: int, logprob: float) -> dict[str, Any]:
    text = tokenizer.decode([token_id], skip_special_tokens=False)
    return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}


def chat_logprobs(
    tokenizer: Any, generation: Generation, count: int, top: TopLogprobs | None,
) -> dict[str, Any]:
    """OpenAI's `choice.logprobs`: each reply token with its log-prob and its `top_logprobs` alternatives."""
    content = []
    for position in range(count):
        token_id, logprob = generation.completion_ids[position], generation.logprobs[position]
        entry = _token(tokenizer, token_id, logprob)
        alternatives = top[position] if top is not None else []
        # The sampled token keeps the value the sampler reported, whichever pass computed its alternatives.
        entry["top_logprobs"] = [_token(tokenizer, i, logprob if i == token_id else lp) for i, lp in alternatives]
        content.append(entry)
    return {"content": content, "refusal": None}


@dataclass
class ChatChoice:
    """One finished choice, ready for either the JSON response or the event stream."""

    reply: Reply
    call_ids: list[str]
    logprobs: dict[str, Any] | None

    def to_json(self, index: int) -> dict[str, Any]:
        out: dict[str, Any] = {"index": index, "message": message_dict(self.reply, self.call_ids),
                               "finish_reason": self.reply.finish_reason, "logprobs": self.logprobs}
        if self.reply.errors:
            out["tool_call_errors"] = self.reply.errors
        return out

    def chunks(self, index: int) -> Iterator[dict[str, Any]]:
        """The choice as stream deltas: role, reasoning, content, each call (name, then arguments), finish."""
        reply = self.reply

        def delta(body: dict[str, Any], **extra: Any) -> dict[str, Any]:
            return {"index": index, "delta": body, "logprobs": None, "finish_reason": None, **extra}

        yield delta({"role": "assistant", "content": ""})
        if reply.reasoning:
            yield delta({"reasoning_content": reply.reasoning})
        logprobs_sent = False
        if reply.content:
            yield {**delta({"content": reply.content}), "logprobs": self.logprobs}
            logprobs_sent = True
        for position, (call, ident) in enumerate(zip(reply.tool_calls, self.call_ids, strict=True)):
            full = call.to_openai(ident)
            yield delta({"tool_calls": [{"index": position, "id": ident, "type": "function",
                                         "function": {"name": call.name, "arguments": ""}}]})
            yield delta({"tool_calls": [{"index": position, "function": {"arguments": full["function"]["arguments"]}}]})
        last = {**delta({}), "finish_reason": reply.finish_reason,
                "logprobs": None if logprobs_sent else self.logprobs}
        if reply.errors:
            last["tool_call_errors"] = reply.errors
        yield last
