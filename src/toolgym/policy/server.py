"""An OpenAI-compatible server for a local checkpoint (+ LoRA), backed by the batching HFPolicy.

`POST /v1/chat/completions` renders messages + tools with the checkpoint's own Renderer and
parses the output into `tool_calls` with its tool-call parser; `POST /v1/completions` takes
token-id prompts and returns token ids + log-probs the way vLLM does (`token_ids`,
`logprobs.tokens` as `token_id:N` when `return_tokens_as_token_ids`), so OpenAIPolicy's token
mode runs against it unchanged. Concurrent requests share one HFPolicy, so they are batched.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from toolgym.agent.parse import ToolCallParser, get_parser
from toolgym.agent.render import Renderer, load_prompt_style
from toolgym.policy.base import Generation, GenerationRequest, PolicyError, SamplingParams
from toolgym.policy.hf import HFPolicy
from toolgym.schema import Message, ToolSpec

DEFAULT_MAX_TOKENS = 512
_MESSAGE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name", "reasoning_content")


class BadRequest(ValueError):
    """A request the server will not run; answered with HTTP 400 and this message."""


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


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind, "code": status}})


def _sampling(body: dict[str, Any], stop_strings: list[str]) -> SamplingParams:
    """OpenAI request fields → SamplingParams (vLLM's `top_k` extra honoured; -1 means off)."""
    if body.get("n", 1) != 1:
        raise BadRequest("only n=1 is supported")
    if body.get("stream"):
        raise BadRequest("streaming is not supported")
    stop = body.get("stop") or []
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise BadRequest("'stop' must be a string or a list of strings")
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_TOKENS
    try:
        return SamplingParams(
            temperature=float(body.get("temperature", 1.0) if body.get("temperature") is not None else 1.0),
            top_p=float(body.get("top_p", 1.0) if body.get("top_p") is not None else 1.0),
            top_k=max(int(body.get("top_k") or 0), 0),
            max_new_tokens=int(max_tokens),
            stop=[*stop, *(s for s in stop_strings if s not in stop)],
            seed=int(body["seed"]) if body.get("seed") is not None else None,
        )
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"bad sampling field: {exc}") from exc


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
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise BadRequest("'messages' must be a non-empty list")
    messages = []
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, dict):
            raise BadRequest(f"messages[{index}] must be an object")
        try:
            messages.append(Message.from_openai({k: raw.get(k) for k in _MESSAGE_FIELDS if k in raw}))
        except (KeyError, ValueError) as exc:
            raise BadRequest(f"messages[{index}]: {exc}") from exc
    tools = []
    for index, raw in enumerate(body.get("tools") or []):
        try:
            tools.append(ToolSpec.from_openai(raw))
        except (KeyError, TypeError, ValueError) as exc:
            raise BadRequest(f"tools[{index}]: {exc}") from exc
    return messages, tools


def create_app(served: ServedModel) -> FastAPI:
    """The FastAPI app; run it with uvicorn (see `serve`)."""
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

    @app.exception_handler(BadRequest)
    async def _bad_request(request: Request, exc: BadRequest) -> JSONResponse:
        return _error(400, str(exc), "invalid_request_error")

    @app.exception_handler(PolicyError)
    async def _policy_error(request: Request, exc: PolicyError) -> JSONResponse:
        return _error(500, str(exc), "policy_error")

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
        sampling = _sampling(body, renderer.stop_strings)
        try:
            prompt_ids = renderer_for(messages, tools).prompt_ids(messages, tools or None)
        except Exception as exc:
            raise BadRequest(f"cannot render the messages with the model's chat template: {exc}") from exc
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
            raise BadRequest("echo is not supported")
        prompt_ids = _prompt_ids(body.get("prompt"), policy)
        sampling = _sampling(body, [])
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
        if body.get("logprobs") is not None:
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


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError as exc:
        raise BadRequest(f"request body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    return body


def _prompt_ids(prompt: Any, policy: HFPolicy) -> list[int]:
    """A prompt as ids: `[ids]` (one tokenized prompt), `ids`, or text (tokenized here)."""
    if isinstance(prompt, str):
        return list(policy.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], list):
        prompt = prompt[0]
    elif isinstance(prompt, list) and prompt and isinstance(prompt[0], list | str):
        raise BadRequest("only one prompt per request is supported")
    if not isinstance(prompt, list) or not prompt or not all(isinstance(i, int) for i in prompt):
        raise BadRequest("'prompt' must be text, a list of token ids, or a list holding one list of token ids")
    return prompt


def serve(served: ServedModel, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning") -> None:
    """Run the server in the foreground until interrupted."""
    import uvicorn

    uvicorn.run(create_app(served), host=host, port=port, log_level=log_level)
