"""The per-episode OpenAI-compatible endpoint: `…/episodes/{token}/v1/chat/completions`, any toolgym policy, recorded.

Requests are read as `toolgym serve policy` reads them (`policy.server_request`: a field that cannot be
honoured is a 400 naming it) and replies are built the same way (`policy.server_chat`: parsed `tool_calls`,
`tool_call_errors`, streaming). What differs is the policy behind it and the recording: a token-mode policy
(hf:, vllm:, openai:…#token) gets prompt ids that continue the episode's held ids (`recording.py`) and returns
the sampled ids and log-probs; a chat-mode policy (oracle, openai: teachers) answers the messages, the oracle
with the task's reference calls. Sampling fields a request leaves unset take the run's settings.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from starlette.responses import Response

from toolgym.chat.parse import ToolCallParser, get_parser, screen_calls
from toolgym.chat.render import PromptStyle, Renderer
from toolgym.harness.recording import Prompt
from toolgym.harness.session import EpisodeSession
from toolgym.policy.base import Generation, GenerationRequest, Policy, PolicyError, SamplingParams
from toolgym.policy.grammar import literal
from toolgym.policy.server import check_prompt, event_stream, strip_stop
from toolgym.policy.server_chat import (
    ChatChoice,
    Reply,
    build_reply,
    call_id,
    chat_logprobs,
    constraint,
    prompt_messages,
    reply_token_count,
)
from toolgym.policy.server_request import BadRequest, ChatRequest, ModelNotFound, read_chat, reason, shown
from toolgym.schema import Message, ToolCall

MODEL_NAME = "toolgym"  # what OPENAI_MODEL holds; the served policy's identity is in /v1/models and the rows
CONTEXT_CODE = "context_length_exceeded"


class WrongModel(ModelNotFound):
    """A `model` other than the one served: 404 `model_not_found`, naming the variable that holds the right one."""

    def __init__(self, model: object) -> None:
        BadRequest.__init__(self, f"this endpoint serves the model {MODEL_NAME!r} (as OPENAI_MODEL says); got "
                                  f"{shown(model)}", "model", "model_not_found")


@dataclass(frozen=True)
class ModelLimits:
    """What request checks need of the model: its context (0: unknown) and vocabulary."""

    max_context: int
    vocab_size: int


def _limits(policy: Policy) -> ModelLimits:
    tokenizer = policy.tokenizer
    context = int(getattr(policy, "max_context", 0) or 0)
    if not context and tokenizer is not None:
        length = getattr(tokenizer, "model_max_length", 0)
        context = length if isinstance(length, int) and 0 < length < 10**8 else 0
    vocab = int(getattr(policy, "vocab_size", 0) or (len(tokenizer) if tokenizer is not None else 2**31 - 1))
    return ModelLimits(context, vocab)


class PolicyEndpoint:
    """Answers one episode's chat requests with `policy` and records each in the episode's session."""

    def __init__(self, policy: Policy, *, prompt_style: PromptStyle, defaults: SamplingParams,
                 parser: ToolCallParser | None = None) -> None:
        self.policy = policy
        self.token_mode = policy.tokenizer is not None
        self.renderer = Renderer(policy.tokenizer, prompt_style=prompt_style) if self.token_mode else None
        self.prompt_style: PromptStyle = prompt_style
        self.defaults = defaults
        self.parser = parser or get_parser("hermes")
        self.limits = _limits(policy)
        self.turn_end_ids = sorted({*(self.renderer.stop_token_ids if self.renderer else []),
                                    *getattr(policy, "eos_token_ids", ())})

    def model_card(self) -> dict[str, Any]:
        return {"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": "toolgym", "root": self.policy.name,
                "checkpoint": self.policy.checkpoint, "max_model_len": self.limits.max_context or None,
                "prompt_style": self.prompt_style}

    def _with_defaults(self, body: dict[str, Any], seed: int | None) -> dict[str, Any]:
        """The body with the run's sampling settings where the request left a field unset."""
        filled = dict(body)
        defaults = self.defaults
        for name, value in (("temperature", defaults.temperature), ("top_p", defaults.top_p)):
            if filled.get(name) is None:
                filled[name] = value
        if filled.get("top_k") is None and defaults.top_k > 0:
            filled["top_k"] = defaults.top_k
        if filled.get("max_tokens") is None and filled.get("max_completion_tokens") is None:
            cap = self.limits.max_context
            filled["max_tokens"] = min(defaults.max_new_tokens, cap) if cap else defaults.max_new_tokens
        if filled.get("seed") is None and seed is not None:
            filled["seed"] = seed
        return filled

    def _read(self, session: EpisodeSession, body: dict[str, Any]) -> ChatRequest:
        model = body.get("model")
        if model is not None and model != MODEL_NAME:
            raise WrongModel(model)
        if body.get("n") not in (None, 1):
            raise BadRequest("'n' must be 1 here: each request is one turn of the episode", "n", "unsupported_value")
        if session.requests >= session.max_turns:
            session.truncated = session.truncated or "max_turns"
            raise BadRequest(f"this episode has made its {session.max_turns} model requests (max_turns)", None,
                             "max_turns_exceeded")
        stops = self.renderer.stop_strings if self.renderer is not None else []
        chat = read_chat(self._with_defaults(body, session.request_seed(session.requests)), stops,
                         self.limits)  # type: ignore[arg-type]
        if chat.top_logprobs:
            raise BadRequest("'top_logprobs' is not served here: each token's own log-prob is (logprobs: true)",
                             "top_logprobs", "unsupported_value")
        if chat.logprobs and not self.token_mode:
            raise BadRequest(f"'logprobs': the policy {self.policy.name} answers in chat mode and has no token "
                             "log-probs", "logprobs", "unsupported_value")
        return chat

    def _prepare(self, session: EpisodeSession, chat: ChatRequest, prefill: str) -> tuple[Prompt, list[int] | None]:
        messages = prompt_messages(chat.messages, chat.tools, self.prompt_style)
        try:
            prompt = session.recording.prepare(messages, chat.tools)
        except Exception as exc:
            raise BadRequest(f"cannot render the messages with the model's chat template: {reason(exc)}",
                             "messages") from exc
        if prompt.ids is None:
            return prompt, None
        assert self.renderer is not None
        ids = [*prompt.ids, *(self.renderer.encode(prefill) if prefill else [])]
        try:
            check_prompt(ids, self.limits, "messages")  # type: ignore[arg-type]
        except BadRequest as exc:
            if exc.code == CONTEXT_CODE:
                session.truncated = session.truncated or "context"
            raise
        return prompt, ids

    async def _generate(self, session: EpisodeSession, request: GenerationRequest) -> Generation:
        began = time.perf_counter()
        try:
            generation = await self.policy.generate(request)
        except Exception as exc:
            session.policy_error = session.policy_error or f"policy error: {type(exc).__name__}: {exc}"
            raise PolicyError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            session.generation_s += time.perf_counter() - began
        if self.token_mode and (not generation.completion_ids
                                or len(generation.logprobs) != len(generation.completion_ids)):
            session.policy_error = session.policy_error or (
                f"policy error: token-mode policy returned {len(generation.completion_ids)} ids and "
                f"{len(generation.logprobs)} log-probs")
            raise PolicyError(session.policy_error)
        return generation

    async def _token_reply(self, session: EpisodeSession, chat: ChatRequest) -> tuple[Prompt, Generation, Reply,
                                                                                         SamplingParams]:
        assert self.renderer is not None
        grammar_tokenizer = getattr(self.policy, "grammar_tokenizer", None)
        terminal = grammar_tokenizer.terminal if grammar_tokenizer is not None else literal
        rule = constraint(chat.tool_choice, chat.parallel_tool_calls, self.parser, chat.tools, terminal)
        if rule.grammar is not None:
            if grammar_tokenizer is None:
                raise BadRequest(f"tool_choice {chat.tool_choice.mode!r} needs a policy that can hold its output to "
                                 f"a grammar (the hf engine); {self.policy.name} cannot", "tool_choice")
            if problem := grammar_tokenizer.problem(rule.grammar):
                raise BadRequest(f"cannot hold the call to the tools' parameter schemas: {problem}", "tools")
        prompt, prompt_ids = self._prepare(session, chat, rule.prefill)
        sampling = replace(chat.sampling, stop=[*chat.sampling.stop, *(s for s in rule.stops
                                                                       if s not in chat.sampling.stop)])
        generation = await self._generate(session, GenerationRequest(
            sampling=sampling, prompt_ids=prompt_ids, grammar=rule.grammar, task=session.task,
            turn=session.requests, sample_index=session.sample_index))
        prompt.ids = prompt_ids
        text = rule.prefill + strip_stop(self.renderer.decode(generation.completion_ids), sampling.stop)
        return prompt, generation, build_reply(text, generation.finish_reason, self.parser, chat), sampling

    async def _chat_reply(self, session: EpisodeSession, chat: ChatRequest) -> tuple[Prompt, Generation, Reply,
                                                                                        SamplingParams]:
        if chat.tool_choice.mode != "auto" or chat.tool_choice.allowed is not None or not chat.parallel_tool_calls:
            raise BadRequest(f"the policy {self.policy.name} answers in chat mode and cannot be held to a tool "
                             "choice; leave tool_choice and parallel_tool_calls unset", "tool_choice")
        prompt, _ = self._prepare(session, chat, "")
        generation = await self._generate(session, GenerationRequest(
            sampling=chat.sampling, messages=[m.to_openai() for m in prompt.messages],
            tools=[t.to_openai() for t in chat.tools] or None, task=session.task, turn=session.requests,
            sample_index=session.sample_index))
        message = generation.message or Message(role="assistant", content=generation.text)
        screened, errors = screen_calls(list(message.tool_calls or []))
        offered = {t.name for t in chat.tools}
        calls: list[ToolCall] = []
        for index, call in enumerate(screened, start=1):
            if call.name in offered:
                calls.append(call)
            else:
                errors.append(f"tool call {index} ({call.name}): no tool named {call.name!r} was offered")
        finish = "tool_calls" if calls and generation.finish_reason == "stop" else generation.finish_reason
        reply = Reply(message.content or (None if calls else ""), calls, message.reasoning_content, errors, finish)
        return prompt, generation, reply, chat.sampling

    async def chat(self, session: EpisodeSession, body: dict[str, Any]) -> dict[str, Any] | Response:
        """Answer one request of the episode and record it; BadRequest for the client's errors, PolicyError
        when the policy fails (both also recorded in the session when they end the episode)."""
        chat = self._read(session, body)
        began = time.perf_counter()
        answer = self._token_reply if self.token_mode else self._chat_reply
        prompt, generation, reply, sampling = await answer(session, chat)
        session.requests += 1
        ids = [call.id or call_id() for call in reply.tool_calls]
        calls = [call.model_copy(update={"id": i}) for call, i in zip(reply.tool_calls, ids, strict=True)]
        message = Message(role="assistant", content=reply.content, tool_calls=calls or None,
                          reasoning_content=reply.reasoning)
        session.recording.add(
            prompt, message, completion_ids=generation.completion_ids if self.token_mode else None,
            logprobs=generation.logprobs if self.token_mode else None, finish_reason=generation.finish_reason,
            tool_call_errors=reply.errors, sampling=sampling.to_dict(), seconds=time.perf_counter() - began,
            weights=self.policy.weights)
        logprobs = None
        if chat.logprobs:
            count = reply_token_count(generation, self.turn_end_ids)
            logprobs = chat_logprobs(self.policy.tokenizer, generation, count, None)
        choice = ChatChoice(reply, ids, logprobs)
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": MODEL_NAME}
        prompt_tokens = len(prompt.ids or [])
        completion_tokens = len(generation.completion_ids)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        if not chat.stream:
            return {**head, "object": "chat.completion", "choices": [choice.to_json(0)], "usage": usage}

        def chunks() -> Iterator[dict[str, Any]]:
            extra = {"usage": None} if chat.include_usage else {}
            for part in choice.chunks(0):
                yield {**head, "object": "chat.completion.chunk", "choices": [part], **extra}
            if chat.include_usage:
                yield {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}

        return event_stream(chunks())
