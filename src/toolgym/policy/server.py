"""An OpenAI-compatible server for a local checkpoint (+ LoRA), backed by the batching HFPolicy.

`POST /v1/chat/completions` renders messages + tools with the checkpoint's own Renderer and
parses the output into `tool_calls` with its tool-call parser; `POST /v1/completions` takes
token-id prompts and returns token ids + log-probs the way vLLM does (`token_ids`,
`logprobs.tokens` as `token_id:N` when `return_tokens_as_token_ids`), so OpenAIPolicy's token
mode runs against it unchanged. Concurrent requests share one HFPolicy, so they are batched.

Every request first passes `toolgym.http_guard` (Host/Origin, optional API key, body size limit);
then anything wrong with it is the client's error: HTTP 400 with OpenAI's error object naming the
field (`param`), never a 500. A 500 means the server failed, and its body carries no traceback.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.responses import Response

from toolgym.agent.parse import ToolCallParser, get_parser
from toolgym.agent.render import Renderer, load_prompt_style
from toolgym.http_guard import DEFAULT_MAX_BODY_BYTES, GuardSettings, RequestGuard, allowed_hosts_for
from toolgym.policy.base import Generation, GenerationRequest, PolicyError, SamplingParams
from toolgym.policy.hf import HFPolicy
from toolgym.schema import Message, ToolSpec

DEFAULT_MAX_TOKENS = 512
MAX_TEMPERATURE = 2.0  # OpenAI's range; beyond it sampling is close to uniform noise
MAX_STOP_STRINGS = 32
MAX_LOGPROBS = 20
MAX_JSON_DEPTH = 64  # tool schemas nest a few levels; far deeper is an attack on the parser
SEED_RANGE = (-(2**63), 2**64 - 1)
_MESSAGE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name", "reasoning_content")
_SHOWN_CHARS = 80


class BadRequest(ValueError):
    """A request the server will not run: HTTP 400 naming the offending field, as OpenAI does."""

    def __init__(self, message: str, param: str | None = None, code: str = "invalid_value") -> None:
        super().__init__(message)
        self.param = param
        self.code = code


@dataclass
class ServedModel:
    """What one server exposes: the policy, how its prompts are rendered and its output parsed."""

    policy: HFPolicy
    renderer: Renderer
    parser: ToolCallParser
    model_name: str


def load_served_model(
    checkpoint: str,
    *,
    lora: str | None = None,
    model_name: str | None = None,
    parser: str = "hermes",
    **policy_kwargs: Any,
) -> ServedModel:
    policy = HFPolicy(checkpoint, lora=lora, **policy_kwargs)
    renderer = Renderer(policy.tokenizer, prompt_style=load_prompt_style(checkpoint))
    return ServedModel(policy, renderer, get_parser(parser), model_name or checkpoint)


def openai_error(status: int, message: str, kind: str, *, param: str | None = None,
                 code: str | None = None) -> JSONResponse:
    """The error object OpenAI clients parse (`openai.BadRequestError.message` etc. read it)."""
    return JSONResponse(
        status_code=status, content={"error": {"message": message, "type": kind, "param": param, "code": code}},
    )


def _guard_error(status: int, message: str, reason: str) -> Response:
    return openai_error(status, message, "invalid_request_error", code=reason)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _reason(exc: BaseException) -> str:
    """A client-facing line for why converting the client's data failed."""
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}" if exc.args else "missing field"
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 500 else text[:497] + "..."


def _number(body: dict[str, Any], name: str, default: float, low: float, high: float, *,
            low_open: bool = False) -> float:
    """A finite number in [low, high] (or (low, high]); JSON null means the default."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadRequest(f"'{name}' must be a number; got {_shown(value)}", name)
    if value > high or value < low or (low_open and value == low):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
        raise BadRequest(f"'{name}' must be in {interval}; got {_shown(value)}", name)
    return float(value)


def _integer(body: dict[str, Any], name: str, low: int, high: int, *, why: str = "") -> int | None:
    """An integer in [low, high] (an integral float such as 5.0 counts), or None when absent or null."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"'{name}' must be an integer; got {_shown(value)}", name)
    if not low <= value <= high:
        raise BadRequest(f"'{name}' must be between {low} and {high}{why}; got {_shown(value)}", name)
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


def _sampling(body: dict[str, Any], stop_strings: list[str], policy: HFPolicy) -> SamplingParams:
    """OpenAI request fields -> SamplingParams, each checked (vLLM's `top_k` extra honoured; -1 means off).

    `max_tokens` may be up to the whole context: the policy trims it to what the prompt leaves, so a
    client need not count its own prompt's tokens.
    """
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise BadRequest(f"only n=1 is supported; got n={_shown(n)}", "n")
    if body.get("stream"):
        raise BadRequest("streaming is not supported", "stream")
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
        stop=[*stop, *(s for s in stop_strings if s not in stop)],
        seed=_integer(body, "seed", *SEED_RANGE),
    )


def check_prompt(prompt_ids: list[int], policy: HFPolicy, param: str) -> None:
    """Refuse, as the client's error, a prompt the model cannot run: empty, too long, or unknown ids."""
    if not prompt_ids:
        raise BadRequest("the prompt is empty: there is nothing to continue from", param)
    context = policy.max_context
    if context and len(prompt_ids) >= context:
        over = len(prompt_ids) - (context - 1)
        raise BadRequest(
            f"the prompt is {len(prompt_ids)} tokens, {over} too many: the model's context is {context} tokens "
            "and at least one must be left for the completion", param, "context_length_exceeded",
        )
    vocab = policy.vocab_size
    for position, token in enumerate(prompt_ids):
        if not 0 <= token < vocab:
            raise BadRequest(
                f"prompt token id {token} (position {position}) is outside the vocabulary (ids 0 to {vocab - 1})",
                param,
            )


def _usage(prompt_ids: list[int], generation: Generation) -> dict[str, int]:
    completion = len(generation.completion_ids)
    return {"prompt_tokens": len(prompt_ids), "completion_tokens": completion, "total_tokens": len(prompt_ids) + completion}


def _strip_stop(text: str, stops: list[str]) -> str:
    """OpenAI semantics: the matched stop string is not part of the returned text."""
    for stop in stops:
        at = text.find(stop)
        if at >= 0:
            text = text[:at]
    return text


def _chat_messages(body: dict[str, Any]) -> tuple[list[Message], list[ToolSpec]]:
    """The request's messages and tools; anything malformed is the client's error, naming where."""
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise BadRequest("'messages' must be a non-empty list", "messages")
    messages = []
    for index, raw in enumerate(raw_messages):
        param = f"messages[{index}]"
        if not isinstance(raw, dict):
            raise BadRequest(f"{param} must be an object", param)
        try:
            messages.append(Message.from_openai({k: raw.get(k) for k in _MESSAGE_FIELDS if k in raw}))
        except Exception as exc:
            raise BadRequest(f"{param}: {_reason(exc)}", param) from exc
    raw_tools = body.get("tools")
    if raw_tools is None:
        return messages, []
    if not isinstance(raw_tools, list):
        raise BadRequest("'tools' must be a list of function tools", "tools")
    tools = []
    for index, raw in enumerate(raw_tools):
        param = f"tools[{index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("function", raw), dict):
            raise BadRequest(f"{param} must be an object with a 'function' object", param)
        if raw.get("type", "function") != "function":
            raise BadRequest(f"{param}: only function tools are supported; got type {_shown(raw.get('type'))}", param)
        try:
            spec = ToolSpec.from_openai(raw)
            spec.signature()  # what the compact renderer reads: a malformed schema fails here, not mid-render
        except Exception as exc:
            raise BadRequest(f"{param}: {_reason(exc)}", param) from exc
        tools.append(spec)
    return messages, tools


def create_app(served: ServedModel, guard: GuardSettings | None = None) -> FastAPI:
    """The FastAPI app behind `guard` (default: loopback names only, no key); run it with uvicorn (`serve`)."""
    policy, renderer, parser = served.policy, served.renderer, served.parser
    template_tools = (
        renderer if renderer.prompt_style == "full"
        else Renderer(policy.tokenizer, prompt_style="full", enable_thinking=renderer.enable_thinking)
    )

    def renderer_for(messages: list[Message], tools: list[ToolSpec]) -> Renderer:
        """The checkpoint's own style, unless that would hide the tools: a compact-style model reads
        its tools from the system prompt, so a client that did not write them there (any client but
        toolgym's compact renderer) gets them rendered by the template instead."""
        if not tools or renderer.prompt_style == "full":
            return renderer
        system = messages[0].content or "" if messages[0].role == "system" else ""
        return renderer if all(t.signature() in system for t in tools) else template_tools

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await policy.close()

    app = FastAPI(title="toolgym policy server", lifespan=lifespan)
    app.add_middleware(
        RequestGuard, settings=guard or GuardSettings(allowed_hosts=allowed_hosts_for("127.0.0.1")), error=_guard_error,
    )

    @app.exception_handler(BadRequest)
    async def _bad_request(request: Request, exc: BadRequest) -> JSONResponse:
        return openai_error(400, str(exc), "invalid_request_error", param=exc.param, code=exc.code)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        kind = "invalid_request_error" if exc.status_code < 500 else "server_error"
        return openai_error(exc.status_code, str(exc.detail), kind)

    @app.exception_handler(PolicyError)
    async def _policy_error(request: Request, exc: PolicyError) -> JSONResponse:
        return openai_error(500, str(exc), "server_error", code="policy_error")

    @app.exception_handler(Exception)
    async def _fault(request: Request, exc: Exception) -> JSONResponse:
        # The traceback goes to the server's log (uvicorn prints it), never to the client.
        return openai_error(500, "internal server error", "server_error", code="internal_error")

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "generate_calls": policy.generate_calls}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": served.model_name, "object": "model", "created": 0, "owned_by": "toolgym",
                      "root": policy.checkpoint}],
        }

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> dict[str, Any]:
        body = await _json(request)
        messages, tools = _chat_messages(body)
        sampling = _sampling(body, renderer.stop_strings, policy)
        try:
            prompt_ids = renderer_for(messages, tools).prompt_ids(messages, tools or None)
        except Exception as exc:
            raise BadRequest(
                f"cannot render the messages with the model's chat template: {_reason(exc)}", "messages",
            ) from exc
        check_prompt(prompt_ids, policy, "messages")
        generation = await policy.generate(GenerationRequest(sampling=sampling, prompt_ids=prompt_ids))
        text = _strip_stop(renderer.decode(generation.completion_ids), sampling.stop)
        parsed = parser.parse(text)
        message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
        if parsed.tool_calls:
            message["tool_calls"] = [c.to_openai(f"call_{uuid.uuid4().hex[:12]}") for c in parsed.tool_calls]
        if parsed.reasoning:
            message["reasoning_content"] = parsed.reasoning
        finish = generation.finish_reason
        if finish == "stop" and parsed.tool_calls:
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served.model_name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": _usage(prompt_ids, generation),
        }

    @app.post("/v1/completions")
    async def completions(request: Request) -> dict[str, Any]:
        body = await _json(request)
        if body.get("echo"):
            raise BadRequest("echo is not supported", "echo")
        logprobs = body.get("logprobs")
        if logprobs is not None and not isinstance(logprobs, bool):
            _integer(body, "logprobs", 0, MAX_LOGPROBS)
        prompt_ids = _prompt_ids(body.get("prompt"), policy)
        check_prompt(prompt_ids, policy, "prompt")
        sampling = _sampling(body, [], policy)
        generation = await policy.generate(GenerationRequest(sampling=sampling, prompt_ids=prompt_ids))
        skip_special = bool(body.get("skip_special_tokens", True))
        text_ids = [i for i in generation.completion_ids if not (skip_special and i in policy.eos_token_ids)]
        text = policy.tokenizer.decode(text_ids, skip_special_tokens=skip_special)
        if not body.get("include_stop_str_in_output", False):
            text = _strip_stop(text, sampling.stop)
        choice: dict[str, Any] = {
            "index": 0,
            "text": text,
            "finish_reason": generation.finish_reason,
            "logprobs": None,
            "token_ids": generation.completion_ids,
            "prompt_token_ids": prompt_ids,
        }
        if logprobs is not None and logprobs is not False:
            as_ids = bool(body.get("return_tokens_as_token_ids", False))
            tokens = [
                f"token_id:{i}" if as_ids else policy.tokenizer.decode([i], skip_special_tokens=False)
                for i in generation.completion_ids
            ]
            choice["logprobs"] = {
                "tokens": tokens,
                "token_logprobs": generation.logprobs,
                "top_logprobs": [{t: lp} for t, lp in zip(tokens, generation.logprobs, strict=True)],
                "text_offset": [],
            }
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": served.model_name,
            "choices": [choice],
            "usage": _usage(prompt_ids, generation),
        }

    return app


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _nests_deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` holds containers more than `limit` levels deep (no recursion: depth is the attack)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


async def _json(request: Request) -> dict[str, Any]:
    """The body as a JSON object; the guard has already capped its size."""
    too_deep = BadRequest(f"the request body nests deeper than {MAX_JSON_DEPTH} levels", None, "invalid_json")
    raw = await request.body()
    try:
        body = json.loads(raw, parse_constant=_reject_constant)
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:
        raise BadRequest(f"request body is not JSON: {_reason(exc)}", None, "invalid_json") from exc
    if isinstance(body, dict | list) and _nests_deeper_than(body, MAX_JSON_DEPTH):
        raise too_deep
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object", None, "invalid_json")
    return body


def _prompt_ids(prompt: Any, policy: HFPolicy) -> list[int]:
    """A prompt as ids: `[ids]` (one tokenized prompt), `ids`, or text (tokenized here)."""
    if isinstance(prompt, str):
        return list(policy.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], list):
        prompt = prompt[0]
    elif isinstance(prompt, list) and prompt and isinstance(prompt[0], list | str):
        raise BadRequest("only one prompt per request is supported", "prompt")
    if not isinstance(prompt, list) or not all(type(i) is int for i in prompt):
        raise BadRequest(
            "'prompt' must be text, a list of token ids, or a list holding one list of token ids", "prompt",
        )
    return prompt


def serve(
    served: ServedModel,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    *,
    api_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    allowed_hosts: Iterable[str] = (),
) -> None:
    """Run the server in the foreground until interrupted; `/health` is the one path open without the key."""
    import uvicorn

    guard = GuardSettings(
        allowed_hosts=allowed_hosts_for(host, allowed_hosts), api_key=api_key, max_body_bytes=max_body_bytes,
        open_paths=frozenset({"/health"}),
    )
    uvicorn.run(create_app(served, guard), host=host, port=port, log_level=log_level)
