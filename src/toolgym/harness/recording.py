"""One episode at the inference boundary: every model call, the exact tokens it saw and sampled, the transcript.

Token mode owns tokenization. A request whose messages extend a state the episode already holds (an earlier
prompt, or an earlier prompt with the reply sampled for it) continues that state's exact ids with the chat
template's rendering of the new messages only, as the episode loop does: sampled ids are never re-encoded. A
request that extends no held state (the harness rewrote or compacted its history, or changed the tools) is
rendered whole: a prefix break. Its ids do not extend the earlier ones, so `build_samples` starts a new
training sample there; nothing is retokenised into the old sample, and every sampled token is trained once.

The transcript is the conversation a results row carries: every reply once, in the order sampled, each after
the messages its request added. A request that rewrote history adds its messages past the longest part it
shares with the transcript (a second system prompt is left out); each call records where its own messages lie
(`transcript_prefix`) or, on a rewrite, the messages themselves, so every request can be rebuilt exactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolgym.chat.render import Renderer
from toolgym.schema import Message, TokenTurn, ToolSpec

MessageKey = tuple[str, str, tuple[tuple[str, str], ...]]


def message_key(message: Message) -> MessageKey:
    """What must agree for a message the harness sent back to be the one held: role, text, calls (name and
    arguments). Call ids, names on tool results and reasoning may differ; the held tokens are kept regardless."""
    calls = tuple((c.name, json.dumps(c.arguments, sort_keys=True, ensure_ascii=False, default=str))
                  for c in message.tool_calls or [])
    return message.role, message.content or "", calls


def _tools_key(tools: Sequence[ToolSpec]) -> str:
    return json.dumps([t.to_openai() for t in tools], sort_keys=True, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class Held:
    """A state the episode holds: the messages so far and, in token mode, the exact ids the model saw for them.

    `exact`: a prompt without its reply, which only an identical request (a retry) may reuse."""

    keys: tuple[MessageKey, ...]
    ids: tuple[int, ...] | None
    tool_set: int
    exact: bool


@dataclass
class Prompt:
    """A request made ready to sample: its messages as the model reads them and, in token mode, their ids."""

    messages: list[Message]
    keys: tuple[MessageKey, ...]
    tool_set: int
    ids: list[int] | None
    prefix_break: bool


@dataclass
class ModelCall:
    """One recorded call; its token ids, when there are any, are `token_turns[token_turn]` of the recording."""

    request: int
    tool_set: int
    reply_at: int  # the reply's index in the transcript
    transcript_prefix: int | None  # the request's messages are transcript[:transcript_prefix] ...
    messages: list[dict[str, Any]] | None  # ... or, when it rewrote history, these
    prefix_break: bool
    token_turn: int | None
    finish_reason: str
    tool_call_errors: list[str]
    sampling: dict[str, Any]
    seconds: float
    weights: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "request": self.request, "tool_set": self.tool_set, "reply_at": self.reply_at,
            "transcript_prefix": self.transcript_prefix, "messages": self.messages,
            "prefix_break": self.prefix_break, "token_turn": self.token_turn, "finish_reason": self.finish_reason,
            "tool_call_errors": self.tool_call_errors, "sampling": self.sampling, "seconds": round(self.seconds, 4),
            "weights": self.weights,
        }


@dataclass
class Recording:
    """Everything one episode's policy endpoint saw and answered (token mode when `renderer` is set)."""

    renderer: Renderer | None
    tool_sets: list[list[ToolSpec]] = field(default_factory=list)
    transcript: list[Message] = field(default_factory=list)
    calls: list[ModelCall] = field(default_factory=list)
    token_turns: list[TokenTurn] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    _tool_keys: list[str] = field(default_factory=list)

    @property
    def prefix_breaks(self) -> int:
        return sum(call.prefix_break for call in self.calls)

    def tool_set(self, tools: Sequence[ToolSpec]) -> int:
        key = _tools_key(tools)
        if key not in self._tool_keys:
            self._tool_keys.append(key)
            self.tool_sets.append(list(tools))
        return self._tool_keys.index(key)

    def _base(self, keys: tuple[MessageKey, ...], tool_set: int) -> Held | None:
        """The longest held state this request extends (or repeats, for a held prompt)."""
        best: Held | None = None
        for held in self.held:
            if held.tool_set != tool_set:
                continue
            size = len(held.keys)
            fits = keys == held.keys if held.exact else len(keys) > size and keys[:size] == held.keys
            if fits and (best is None or size > len(best.keys)):
                best = held
        return best

    def prepare(self, messages: list[Message], tools: Sequence[ToolSpec]) -> Prompt:
        """The request's prompt: continued from a held state, or rendered whole (a prefix break after the first).

        Raises what the chat template raises when it cannot render the messages at all."""
        keys = tuple(message_key(m) for m in messages)
        tool_set = self.tool_set(tools)
        base = self._base(keys, tool_set)
        ids: list[int] | None = None
        if self.renderer is not None:
            ids = self._continued(base, messages, tools) if base is not None else None
            if ids is None:
                base = None
                ids = self.renderer.prompt_ids(messages, tools)
        return Prompt(messages, keys, tool_set, ids, prefix_break=base is None and bool(self.held))

    def _continued(self, base: Held, messages: list[Message], tools: Sequence[ToolSpec]) -> list[int] | None:
        assert self.renderer is not None and base.ids is not None
        if base.exact:
            return list(base.ids)
        try:
            return [*base.ids, *self.renderer.observation_ids(messages[len(base.keys):], tools)]
        except Exception:  # the template cannot render these as a delta (RenderError, a template's own error)
            return None

    def add(self, prompt: Prompt, reply: Message, *, completion_ids: Sequence[int] | None = None,
            logprobs: Sequence[float] | None = None, finish_reason: str = "stop",
            tool_call_errors: Sequence[str] = (), sampling: dict[str, Any] | None = None, seconds: float = 0.0,
            weights: str | None = None) -> ModelCall:
        """Record one answered request: its place in the transcript, its token turn, the states it leaves."""
        transcript_keys = [message_key(m) for m in self.transcript]
        size = len(prompt.keys)
        shared = 0
        while shared < min(size, len(transcript_keys)) and prompt.keys[shared] == transcript_keys[shared]:
            shared += 1
        self._adopt_call_ids(prompt.messages[:shared])
        added = prompt.messages[shared:]
        if shared < len(transcript_keys):  # a rewrite: one system prompt per conversation
            added = [m for m in added if m.role != "system"]
        self.transcript.extend(added)
        in_transcript = [message_key(m) for m in self.transcript[:size]] == list(prompt.keys)
        self.transcript.append(reply)
        token_turn = None
        if prompt.ids is not None and completion_ids is not None:
            turn = TokenTurn(prompt_ids=list(prompt.ids), completion_ids=list(completion_ids),
                             logprobs=list(logprobs or []), finish_reason=finish_reason)
            token_turn = len(self.token_turns)
            self.token_turns.append(turn)
        self.held.append(Held(prompt.keys, tuple(prompt.ids) if prompt.ids is not None else None, prompt.tool_set,
                              exact=True))
        self.held.append(Held((*prompt.keys, message_key(reply)), self._after_reply(prompt.ids, completion_ids),
                              prompt.tool_set, exact=False))
        call = ModelCall(
            request=len(self.calls), tool_set=prompt.tool_set, reply_at=len(self.transcript) - 1,
            transcript_prefix=size if in_transcript else None,
            messages=None if in_transcript else [m.to_openai() for m in prompt.messages],
            prefix_break=prompt.prefix_break, token_turn=token_turn, finish_reason=finish_reason,
            tool_call_errors=list(tool_call_errors), sampling=dict(sampling or {}), seconds=seconds, weights=weights,
        )
        self.calls.append(call)
        return call

    def _adopt_call_ids(self, messages: Sequence[Message]) -> None:
        """The call ids the harness gave our replies when it sent them back: its tool results answer those."""
        for index, sent in enumerate(messages):
            held = self.transcript[index]
            if held.role != "assistant" or not held.tool_calls or not sent.tool_calls:
                continue
            ids = [c.id for c in sent.tool_calls]
            if ids != [c.id for c in held.tool_calls] and all(ids):
                calls = [c.model_copy(update={"id": i}) for c, i in zip(held.tool_calls, ids, strict=True)]
                self.transcript[index] = held.model_copy(update={"tool_calls": calls})

    def _after_reply(self, prompt_ids: Sequence[int] | None, completion_ids: Sequence[int] | None,
                     ) -> tuple[int, ...] | None:
        """The ids of a prompt and its reply, the turn closed as the template closes it."""
        if self.renderer is None or prompt_ids is None or completion_ids is None:
            return None
        closing = [] if self.renderer.ends_turn(completion_ids) else self.renderer.turn_close_ids
        return (*prompt_ids, *completion_ids, *closing)

    def request_messages(self, call: ModelCall) -> list[dict[str, Any]]:
        """The messages of one recorded request, as the model read them."""
        if call.messages is not None:
            return call.messages
        assert call.transcript_prefix is not None
        return [m.to_openai() for m in self.transcript[: call.transcript_prefix]]

    def to_json(self) -> dict[str, Any]:
        """The recording as a results row keeps it (token ids live in the episode's token_turns)."""
        return {
            "tool_sets": [[t.to_openai() for t in tools] for tools in self.tool_sets],
            "calls": [c.to_json() for c in self.calls],
            "prefix_breaks": self.prefix_breaks,
        }
