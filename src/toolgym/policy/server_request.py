"""Reading OpenAI request bodies for `toolgym serve policy`: each field is used, or refused naming it.

A field the server cannot honour (JSON mode, penalties, a logit bias, audio, an unknown field) is an
HTTP 400 naming it, never dropped: a client that asked for it must learn that it did not get it.
Fields that change nothing about what is generated (`user`, `metadata`, cache hints) are accepted.
The full table of parameters and what the server does with each is in docs/serving.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from toolgym.policy.base import SamplingParams
from toolgym.policy.hf import HFPolicy
from toolgym.schema import Message, ToolSpec
from toolgym.schema.jsonl import BadJson, check_value

DEFAULT_MAX_TOKENS = 512
MAX_TEMPERATURE = 2.0  # OpenAI's range; beyond it sampling is close to uniform noise
MAX_STOP_STRINGS = 32
MAX_LOGPROBS = 20  # OpenAI's limit for both `top_logprobs` (chat) and `logprobs` (completions)
MAX_N = 16  # choices per prompt: each is a full generation in the shared batch
MAX_CHOICES = 128  # prompts x n in one /v1/completions request
SEED_RANGE = (-(2**63), 2**64 - 1)
_MESSAGE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name", "reasoning_content")
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
_SHOWN_CHARS = 80

# Fields that ask for nothing that changes the generated text: accepted, and they have no effect.
NO_EFFECT_FIELDS = frozenset({
    "user", "metadata", "service_tier", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention",
    "safety_identifier", "prediction",
})
_SAMPLING_FIELDS = frozenset({
    "model", "n", "stream", "stream_options", "temperature", "top_p", "top_k", "max_tokens", "stop", "seed",
    "frequency_penalty", "presence_penalty", "logit_bias", "logprobs",
})
CHAT_FIELDS = _SAMPLING_FIELDS | NO_EFFECT_FIELDS | {
    "messages", "tools", "tool_choice", "parallel_tool_calls", "max_completion_tokens", "top_logprobs",
    "response_format", "store", "modalities", "audio", "reasoning_effort", "verbosity", "web_search_options",
    "functions", "function_call", "moderation",
}
# vLLM's completion extras that OpenAIPolicy's token mode sends are honoured.
COMPLETION_FIELDS = _SAMPLING_FIELDS | NO_EFFECT_FIELDS | {
    "prompt", "echo", "best_of", "suffix", "return_tokens_as_token_ids", "return_token_ids", "skip_special_tokens",
    "include_stop_str_in_output",
}


class BadRequest(ValueError):
    """A request the server will not run: HTTP 400 naming the offending field, as OpenAI does."""

    status = 400

    def __init__(self, message: str, param: str | None = None, code: str = "invalid_value") -> None:
        super().__init__(message)
        self.param = param
        self.code = code


class ModelNotFound(BadRequest):
    """A `model` this server does not serve: HTTP 404 `model_not_found`, as OpenAI answers."""

    status = 404

    def __init__(self, model: str) -> None:
        super().__init__(f"The model {shown(model)} does not exist on this server", "model", "model_not_found")


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def reason(exc: BaseException) -> str:
    """A client-facing line for why converting the client's data failed."""
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}" if exc.args else "missing field"
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 500 else text[:497] + "..."


def check_model(body: dict[str, Any], served_name: str) -> None:
    """`model` must name the served model; absent or null means it (vLLM's rule), anything else is a 404."""
    model = body.get("model")
    if model is not None and model != served_name:
        if not isinstance(model, str):
            raise BadRequest(f"'model' must be a string; got {shown(model)}", "model")
        raise ModelNotFound(model)


def check_text(body: dict[str, Any]) -> None:
    """Refuse a lone surrogate (`"\\ud800"`: valid JSON, not text) in any string or key, naming its field:
    neither the tokenizer nor a UTF-8 reply can carry one, so it would otherwise end in a 500."""
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
        return
    except UnicodeEncodeError:
        pass
    try:
        check_value(body)
    except BadJson as exc:
        raise BadRequest(f"{exc.field}: {exc.message}" if exc.field else exc.message, exc.field) from None


def check_fields(body: dict[str, Any], known: frozenset[str]) -> None:
    """An unknown field with a value is refused: the server would otherwise ignore what it asks for."""
    for name, value in body.items():
        if name not in known and value is not None:
            raise BadRequest(f"unrecognized request argument {shown(name)}: this server does not support it",
                             name, "unrecognized_argument")


def _refuse_unless(body: dict[str, Any], name: str, accepted: Callable[[Any], bool], why: str) -> None:
    value = body.get(name)
    if value is not None and not accepted(value):
        raise BadRequest(f"{shown(name)} {shown(value)} is not supported: {why}", name, "unsupported_value")


def _number(body: dict[str, Any], name: str, default: float, low: float, high: float, *,
            low_open: bool = False) -> float:
    """A finite number in [low, high] (or (low, high]); JSON null means the default."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadRequest(f"'{name}' must be a number; got {shown(value)}", name)
    if value > high or value < low or (low_open and value == low):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
        raise BadRequest(f"'{name}' must be in {interval}; got {shown(value)}", name)
    return float(value)


def _integer(body: dict[str, Any], name: str, low: int, high: int, *, why: str = "") -> int | None:
    """An integer in [low, high] (an integral float such as 5.0 counts), or None when absent or null."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"'{name}' must be an integer; got {shown(value)}", name)
    if not low <= value <= high:
        raise BadRequest(f"'{name}' must be between {low} and {high}{why}; got {shown(value)}", name)
    return value


def _boolean(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BadRequest(f"'{name}' must be a boolean; got {shown(value)}", name)
    return value


def _stop(body: dict[str, Any]) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise BadRequest("'stop' must be a non-empty string or a list of non-empty strings", "stop")
    if len(stops) > MAX_STOP_STRINGS:
        raise BadRequest(f"'stop' holds {len(stops)} strings; at most {MAX_STOP_STRINGS} are allowed", "stop")
    return stops


def _refuse_unsupported_sampling(body: dict[str, Any]) -> None:
    """Sampling controls this server's sampler does not have: refused unless they ask for the default."""
    for name in ("frequency_penalty", "presence_penalty"):
        _refuse_unless(body, name, lambda v: not isinstance(v, bool) and v == 0,
                       "this server's sampler has no penalties; leave it at 0")
    _refuse_unless(body, "logit_bias", lambda v: v == {}, "this server's sampler cannot bias tokens")


def sampling_params(body: dict[str, Any], model_stops: list[str], policy: HFPolicy) -> SamplingParams:
    """OpenAI request fields -> SamplingParams, each checked (vLLM's `top_k` extra honoured; -1 means off).

    `max_tokens` may be up to the whole context: the policy trims it to what the prompt leaves, so a
    client need not count its own prompt's tokens.
    """
    _refuse_unsupported_sampling(body)
    stop = _stop(body)
    context = policy.max_context
    token_cap = context if context else 2**31 - 1
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_tokens = _integer(body, name, 1, token_cap, why=" (the model's context)" if context else "")
    top_k = _integer(body, "top_k", -1, 2**31 - 1) or 0
    return SamplingParams(
        temperature=_number(body, "temperature", 1.0, 0.0, MAX_TEMPERATURE),
        top_p=_number(body, "top_p", 1.0, 0.0, 1.0, low_open=True),
        top_k=min(max(top_k, 0), policy.vocab_size),
        max_new_tokens=max_tokens if max_tokens is not None else min(DEFAULT_MAX_TOKENS, token_cap),
        stop=[*stop, *(s for s in model_stops if s not in stop)],
        seed=_integer(body, "seed", *SEED_RANGE),
    )


def per_choice(sampling: SamplingParams, n: int) -> list[SamplingParams]:
    """One SamplingParams per choice: a seeded request gives choice i the seed + i, so n choices differ."""
    if sampling.seed is None:
        return [sampling] * n
    return [replace(sampling, seed=sampling.seed + i) for i in range(n)]


def _stream(body: dict[str, Any]) -> tuple[bool, bool]:
    """(stream, include_usage)."""
    stream = _boolean(body, "stream", False)
    options = body.get("stream_options")
    if options is None:
        return stream, False
    if not stream:
        raise BadRequest("'stream_options' is only allowed when 'stream' is true", "stream_options")
    if not isinstance(options, dict) or set(options) - {"include_usage", "include_obfuscation"}:
        raise BadRequest("'stream_options' must be an object with 'include_usage'", "stream_options")
    include = options.get("include_usage")
    if include is not None and not isinstance(include, bool):
        raise BadRequest(f"'stream_options.include_usage' must be a boolean; got {shown(include)}", "stream_options")
    return stream, bool(include)


# -- chat -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolChoice:
    """What the reply may (or must) call: `none` never calls; `required` must call one of `allowed`."""

    mode: Literal["none", "auto", "required"] = "auto"
    allowed: frozenset[str] | None = None  # None: any offered tool
    forced: str | None = None  # the one function the reply must call (named tool_choice)


@dataclass
class ChatRequest:
    """A checked `/v1/chat/completions` body."""

    messages: list[Message]
    tools: list[ToolSpec]
    strict_tools: frozenset[str]
    tool_choice: ToolChoice
    parallel_tool_calls: bool
    sampling: SamplingParams
    n: int = 1
    stream: bool = False
    include_usage: bool = False
    logprobs: bool = False
    top_logprobs: int = 0


def _content(value: Any, param: str) -> str | None:
    """Message content: a string, or a list of text parts (joined with newlines, as vLLM joins them)."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise BadRequest(f"{param}: 'content' must be a string or a list of text parts; got {shown(value)}", param)
    texts = []
    for index, part in enumerate(value):
        where = f"{param}.content[{index}]"
        if not isinstance(part, dict):
            raise BadRequest(f"{where} must be an object like {{\"type\": \"text\", \"text\": ...}}", param)
        kind = part.get("type")
        if kind != "text":
            raise BadRequest(
                f"{where}: content parts of type {shown(kind)} are not supported: this model reads text only",
                param, "unsupported_content",
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise BadRequest(f"{where}: a text part needs 'text' as a string; got {shown(text)}", param)
        texts.append(text)
    return "\n".join(texts)


def _message(raw: Any, param: str) -> Message:
    if not isinstance(raw, dict):
        raise BadRequest(f"{param} must be an object", param)
    role = raw.get("role")
    if role is None:
        raise BadRequest(f"{param}: missing field 'role'", param)
    if role not in _ROLES:
        raise BadRequest(
            f"{param}: role {shown(role)} is not supported; use system, developer, user, assistant or tool", param,
        )
    fields = {k: raw.get(k) for k in _MESSAGE_FIELDS if k in raw}
    fields["role"] = _ROLES[role]  # a developer message is a system message to this model
    fields["content"] = _content(raw.get("content"), param)
    try:
        message = Message.from_openai(fields)
    except Exception as exc:
        raise BadRequest(f"{param}: {reason(exc)}", param) from exc
    for index, call in enumerate(message.tool_calls or []):
        try:  # arguments arrive as JSON text, whose escapes can decode to a lone surrogate
            check_value(call.arguments)
        except BadJson as exc:
            where = f"{param}.tool_calls[{index}].function.arguments"
            inner = f"field '{exc.field}': " if exc.field else ""
            raise BadRequest(f"{where}: {inner}{exc.message}", where) from None
    return message


def _tools(body: dict[str, Any]) -> tuple[list[ToolSpec], frozenset[str]]:
    """The offered function tools, and the names of those marked `strict` (their arguments are checked)."""
    raw_tools = body.get("tools")
    if raw_tools is None:
        return [], frozenset()
    if not isinstance(raw_tools, list):
        raise BadRequest("'tools' must be a list of function tools", "tools")
    tools: list[ToolSpec] = []
    strict: set[str] = set()
    for index, raw in enumerate(raw_tools):
        param = f"tools[{index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("function", raw), dict):
            raise BadRequest(f"{param} must be an object with a 'function' object", param)
        if raw.get("type", "function") != "function":
            raise BadRequest(f"{param}: only function tools are supported; got type {shown(raw.get('type'))}", param)
        try:
            spec = ToolSpec.from_openai(raw)
            spec.signature()  # what the compact renderer reads: a malformed schema fails here, not mid-render
        except Exception as exc:
            raise BadRequest(f"{param}: {reason(exc)}", param) from exc
        if any(t.name == spec.name for t in tools):
            raise BadRequest(f"{param}: a tool named {shown(spec.name)} is already offered; names must be unique",
                             param)
        if raw.get("function", raw).get("strict") is True:
            strict.add(spec.name)
        tools.append(spec)
    return tools, frozenset(strict)


def _named(value: Any) -> str | None:
    """The function name of `{"type": "function", "function": {"name": ...}}` (or the flat `{"name": ...}`)."""
    if not isinstance(value, dict) or value.get("type", "function") != "function":
        return None
    inner = value.get("function", value)
    name = inner.get("name") if isinstance(inner, dict) else None
    return name if isinstance(name, str) and name else None


def _tool_choice(body: dict[str, Any], tools: list[ToolSpec]) -> ToolChoice:
    value = body.get("tool_choice")
    offered = {t.name for t in tools}
    if value is None or value == "auto":
        return ToolChoice("auto")
    if value == "none":
        return ToolChoice("none")
    if value == "required":
        if not tools:
            raise BadRequest("tool_choice 'required' needs 'tools' to call", "tool_choice")
        return ToolChoice("required")
    if isinstance(value, dict) and value.get("type") == "allowed_tools":
        spec = value.get("allowed_tools")
        mode = spec.get("mode") if isinstance(spec, dict) else None
        listed = spec.get("tools") if isinstance(spec, dict) else None
        named = [_named(t) for t in listed] if isinstance(listed, list) else []
        names = [n for n in named if n is not None]
        if mode not in ("auto", "required") or not names or len(names) != len(named):
            raise BadRequest("tool_choice 'allowed_tools' needs {\"mode\": \"auto\"|\"required\", \"tools\": "
                             "[{\"type\": \"function\", \"function\": {\"name\": ...}}, ...]}", "tool_choice")
        unknown = sorted({n for n in names if n not in offered})
        if unknown:
            raise BadRequest(f"tool_choice names {', '.join(map(shown, unknown))}, which 'tools' does not offer",
                             "tool_choice")
        allowed = frozenset(names)
        if mode == "required" and len(allowed) == 1:
            return ToolChoice("required", allowed, next(iter(allowed)))
        return ToolChoice(mode, allowed)
    name = _named(value)
    if name is None:
        raise BadRequest(
            f"'tool_choice' must be 'none', 'auto', 'required' or {{\"type\": \"function\", \"function\": "
            f"{{\"name\": ...}}}}; got {shown(value)}", "tool_choice",
        )
    if name not in offered:
        raise BadRequest(f"tool_choice names {shown(name)}, which 'tools' does not offer", "tool_choice")
    return ToolChoice("required", frozenset({name}), name)


def _refuse_unsupported_chat(body: dict[str, Any]) -> None:
    def text_format(value: Any) -> bool:
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            raise BadRequest("'response_format' must be an object with a 'type'", "response_format")
        return value["type"] == "text"

    _refuse_unless(body, "response_format", text_format,
                   "this server cannot constrain output to JSON; ask for JSON in the messages and parse the reply")
    _refuse_unless(body, "store", lambda v: v is False, "this server keeps no completions")
    _refuse_unless(body, "modalities", lambda v: v == ["text"], "this model reads and writes text only")
    for name, why in (
        ("audio", "this model writes text only"),
        ("web_search_options", "this server has no web search"),
        ("reasoning_effort", "this model has no reasoning-effort setting"),
        ("verbosity", "this model has no verbosity setting"),
        ("moderation", "this server runs no moderation"),
        ("functions", "the deprecated 'functions' is not supported; send 'tools'"),
        ("function_call", "the deprecated 'function_call' is not supported; send 'tool_choice'"),
    ):
        _refuse_unless(body, name, lambda v: False, why)


def read_chat(body: dict[str, Any], model_stops: list[str], policy: HFPolicy) -> ChatRequest:
    """The whole chat body checked: anything wrong or unsupported is a BadRequest naming the field."""
    check_text(body)
    check_fields(body, CHAT_FIELDS)
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise BadRequest("'messages' must be a non-empty list", "messages")
    messages = [_message(raw, f"messages[{index}]") for index, raw in enumerate(raw_messages)]
    tools, strict = _tools(body)
    _refuse_unsupported_chat(body)
    sampling = sampling_params(body, model_stops, policy)
    stream, include_usage = _stream(body)
    logprobs = _boolean(body, "logprobs", False)
    top = _integer(body, "top_logprobs", 0, MAX_LOGPROBS)
    if top is not None and not logprobs:
        raise BadRequest("'top_logprobs' needs 'logprobs' set to true", "top_logprobs")
    return ChatRequest(
        messages=messages, tools=tools, strict_tools=strict, tool_choice=_tool_choice(body, tools),
        parallel_tool_calls=_boolean(body, "parallel_tool_calls", True), sampling=sampling,
        n=_integer(body, "n", 1, MAX_N) or 1, stream=stream, include_usage=include_usage, logprobs=logprobs,
        top_logprobs=top or 0,
    )


# -- completions -----------------------------------------------------------------------------------


@dataclass
class CompletionRequest:
    """A checked `/v1/completions` body: one or more prompts as token ids, each sampled `n` times."""

    prompts: list[list[int]]
    sampling: SamplingParams
    n: int = 1
    stream: bool = False
    include_usage: bool = False
    logprobs: int | None = None  # None: no log-probs; N: the sampled token's and the N most likely
    as_token_ids: bool = False
    skip_special_tokens: bool = True
    include_stop: bool = False


def _one_prompt(prompt: Any, policy: HFPolicy) -> list[int] | None:
    if isinstance(prompt, str):
        return list(policy.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    if isinstance(prompt, list) and all(type(i) is int for i in prompt):
        return prompt
    return None


def prompt_list(prompt: Any, policy: HFPolicy) -> list[list[int]]:
    """`prompt` as token-id lists: text, ids, or a list of either (a batch: one choice set per prompt)."""
    single = _one_prompt(prompt, policy)
    if single is not None:
        return [single]
    if isinstance(prompt, list) and prompt:
        prompts = [_one_prompt(p, policy) if isinstance(p, str | list) else None for p in prompt]
        if all(p is not None for p in prompts):
            return [p for p in prompts if p is not None]
    raise BadRequest(
        "'prompt' must be text, a list of token ids, or a list of texts or of token-id lists", "prompt",
    )


def read_completion(body: dict[str, Any], policy: HFPolicy) -> CompletionRequest:
    """The whole completions body checked, as `read_chat` checks a chat body."""
    check_text(body)
    check_fields(body, COMPLETION_FIELDS)
    if body.get("echo"):
        raise BadRequest("'echo' is not supported: the reply never repeats the prompt", "echo", "unsupported_value")
    _refuse_unless(body, "suffix", lambda v: v == "", "this model has no fill-in-the-middle mode")
    logprobs = body.get("logprobs")
    top = None if logprobs is None or logprobs is False else (
        1 if logprobs is True else _integer(body, "logprobs", 0, MAX_LOGPROBS))
    n = _integer(body, "n", 1, MAX_N) or 1
    _refuse_unless(body, "best_of", lambda v: v == n, "choices are not ranked here; leave 'best_of' unset")
    prompts = prompt_list(body.get("prompt"), policy)
    if len(prompts) * n > MAX_CHOICES:
        raise BadRequest(f"{len(prompts)} prompts x n={n} is {len(prompts) * n} choices; at most {MAX_CHOICES} "
                         "are allowed in one request", "prompt")
    sampling = sampling_params(body, [], policy)
    stream, include_usage = _stream(body)
    return CompletionRequest(
        prompts=prompts, sampling=sampling, n=n, stream=stream, include_usage=include_usage, logprobs=top,
        as_token_ids=_boolean(body, "return_tokens_as_token_ids", False),
        skip_special_tokens=_boolean(body, "skip_special_tokens", True),
        include_stop=_boolean(body, "include_stop_str_in_output", False),
    )
