"""An OpenAI-compatible server for a local checkpoint (+ LoRA), backed by the batching HFPolicy.

`POST /v1/chat/completions` renders messages + tools in the checkpoint's own prompt style (toolgym.json
`prompt_style`: a compact-style model gets one-line tool signatures, so a plain client's conversation
fits its context) and returns parsed `tool_calls`, with `n`, streaming, `tool_choice` held by
constrained generation and chat `logprobs`/`top_logprobs` (see `toolgym.policy.server_chat`).
`POST /v1/completions` takes text or token-id prompts, one or a batch, and returns token ids +
log-probs the way vLLM does (`token_ids`, `logprobs.tokens` as `token_id:N` when
`return_tokens_as_token_ids`, top-N alternatives for `logprobs=N`), so OpenAIPolicy's token mode runs
against it unchanged. Concurrent requests (and the `n` choices of one) share one HFPolicy: one batch.

Every request first passes `toolgym.http_guard` (Host/Origin, optional API key, body size limit);
then anything wrong with it is the client's error: HTTP 400 with OpenAI's error object naming the
field (`param`), and a `model` the server does not serve is a 404 `model_not_found`. A field the
server cannot honour is refused, never ignored (`toolgym.policy.server_request`; the parameter
table is docs/serving.md). A 500 means the server failed, and its body carries no traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException
from starlette.responses import Response

from toolgym.chat.parse import ToolCallParser, get_parser
from toolgym.chat.render import PromptStyle, Renderer, load_prompt_style
from toolgym.http_guard import DEFAULT_MAX_BODY_BYTES, GuardSettings, RequestGuard, allowed_hosts_for
from toolgym.policy.base import Generation, GenerationRequest, PolicyError, SamplingParams
from toolgym.policy.engines import build_policy
from toolgym.policy.hf import HFPolicy
from toolgym.policy.server_chat import (
    ChatChoice,
    build_reply,
    call_id,
    chat_logprobs,
    constraint,
    prompt_messages,
    reply_token_count,
)
from toolgym.policy.server_request import (
    BadRequest,
    CompletionRequest,
    ModelNotFound,
    check_model,
    per_choice,
    read_chat,
    read_completion,
    reason,
)
from toolgym.policy.server_scoring import TopLogprobs, top_logprobs
from toolgym.policy.spec import HFSpec

__all__ = ["BadRequest", "ModelNotFound", "ServedModel", "check_prompt", "create_app", "load_served_model", "serve"]

MAX_JSON_DEPTH = 64  # tool schemas nest a few levels; far deeper is an attack on the parser


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
    prompt_style: PromptStyle | None = None,
    **policy_kwargs: Any,
) -> ServedModel:
    """The checkpoint's policy and renderer; its prompt style is its toolgym.json's unless one is given."""
    style = prompt_style or load_prompt_style(checkpoint)
    policy = build_policy(HFSpec(model=checkpoint, lora=lora), **policy_kwargs)  # the engine registry's hf
    renderer = Renderer(policy.tokenizer, prompt_style=style)
    return ServedModel(policy, renderer, get_parser(parser), model_name or checkpoint)


def openai_error(status: int, message: str, kind: str, *, param: str | None = None,
                 code: str | None = None) -> JSONResponse:
    """The error object OpenAI clients parse (`openai.BadRequestError.message` etc. read it)."""
    return JSONResponse(
        status_code=status, content={"error": {"message": message, "type": kind, "param": param, "code": code}},
    )


def _guard_error(status: int, message: str, reason: str) -> Response:
    return openai_error(status, message, "invalid_request_error", code=reason)


def check_prompt(prompt_ids: list[int], policy: HFPolicy, param: str, where: str = "") -> None:
    """Refuse, as the client's error, a prompt the model cannot run: empty, too long, or unknown ids.

    `where` names the prompt in a batch ("prompt 2: ")."""
    if not prompt_ids:
        raise BadRequest(f"{where}the prompt is empty: there is nothing to continue from", param)
    context = policy.max_context
    if context and len(prompt_ids) >= context:
        over = len(prompt_ids) - (context - 1)
        raise BadRequest(
            f"{where}the prompt is {len(prompt_ids)} tokens, {over} too many: the model's context is {context} "
            "tokens and at least one must be left for the completion", param, "context_length_exceeded",
        )
    vocab = policy.vocab_size
    for position, token in enumerate(prompt_ids):
        if not 0 <= token < vocab:
            raise BadRequest(
                f"{where}prompt token id {token} (position {position}) is outside the vocabulary "
                f"(ids 0 to {vocab - 1})", param,
            )


def _usage(prompt_tokens: int, generations: Sequence[Generation]) -> dict[str, int]:
    completion = sum(len(g.completion_ids) for g in generations)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion, "total_tokens": prompt_tokens + completion}


def strip_stop(text: str, stops: list[str]) -> str:
    """OpenAI semantics: the matched stop string is not part of the returned text."""
    for stop in stops:
        at = text.find(stop)
        if at >= 0:
            text = text[:at]
    return text


def event_stream(chunks: Iterator[dict[str, Any]]) -> StreamingResponse:
    """Server-sent events, one chunk per `data:` line, ending with `data: [DONE]` as OpenAI's do."""

    def events() -> Iterator[str]:
        for chunk in chunks:
            yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def _text_offsets(tokens: list[str]) -> list[int]:
    offsets, at = [], 0
    for token in tokens:
        offsets.append(at)
        at += len(token)
    return offsets


def create_app(served: ServedModel, guard: GuardSettings | None = None) -> FastAPI:
    """The FastAPI app behind `guard` (default: loopback names only, no key); run it with uvicorn (`serve`)."""
    policy, renderer, parser = served.policy, served.renderer, served.parser
    turn_end_ids = sorted({*renderer.stop_token_ids, *policy.eos_token_ids})

    async def generate(prompt_ids: list[int], samplings: list[SamplingParams]) -> list[Generation]:
        """Every choice of one prompt, sent together so they decode in one batch."""
        return list(await asyncio.gather(*(
            policy.generate(GenerationRequest(sampling=s, prompt_ids=list(prompt_ids))) for s in samplings
        )))

    async def alternatives(prompt_ids: list[int], generation: Generation, sampling: SamplingParams,
                           top_n: int, grammar: str | None) -> TopLogprobs | None:
        """Top-`top_n` per token: a scoring pass, except where the sampled token is the whole answer."""
        if top_n <= 0:
            return None
        if top_n == 1 and sampling.temperature <= 0:  # greedy: the most likely token is the one sampled
            return [[(i, lp)] for i, lp in zip(generation.completion_ids, generation.logprobs, strict=True)]
        return await top_logprobs(policy, prompt_ids, generation.completion_ids, sampling, top_n, grammar)

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
        return openai_error(exc.status, str(exc), "invalid_request_error", param=exc.param, code=exc.code)

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

    def model_card() -> dict[str, Any]:
        return {"id": served.model_name, "object": "model", "created": 0, "owned_by": "toolgym",
                "root": policy.checkpoint, "max_model_len": policy.max_context or None,
                "prompt_style": renderer.prompt_style}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "generate_calls": policy.generate_calls}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{model:path}")
    async def model(model: str) -> dict[str, Any]:
        if model != served.model_name:
            raise ModelNotFound(model)
        return model_card()

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(request: Request) -> dict[str, Any] | Response:
        body = await _json(request)
        check_model(body, served.model_name)
        chat = read_chat(body, renderer.stop_strings, policy)
        rule = constraint(chat.tool_choice, chat.parallel_tool_calls, parser, chat.tools,
                          lambda tag: policy.grammar_tokenizer.terminal(tag))  # built on a grammar's first use
        if rule.grammar is not None and (problem := policy.grammar_tokenizer.problem(rule.grammar)):
            raise BadRequest(f"cannot hold the call to the tools' parameter schemas: {problem}", "tools")
        messages = prompt_messages(chat.messages, chat.tools, renderer.prompt_style)
        try:
            text = renderer.render_text(messages, chat.tools or None, add_generation_prompt=True)
        except Exception as exc:
            raise BadRequest(
                f"cannot render the messages with the model's chat template: {reason(exc)}", "messages",
            ) from exc
        stops = [*chat.sampling.stop, *(s for s in rule.stops if s not in chat.sampling.stop)]
        samplings = per_choice(replace(chat.sampling, stop=stops), chat.n)
        prompt_ids = renderer.encode(text + rule.prefill)
        check_prompt(prompt_ids, policy, "messages")
        generations = list(await asyncio.gather(*(
            policy.generate(GenerationRequest(sampling=s, prompt_ids=list(prompt_ids), grammar=rule.grammar))
            for s in samplings
        )))
        choices = []
        for generation, sampling in zip(generations, samplings, strict=True):
            reply_text = rule.prefill + strip_stop(renderer.decode(generation.completion_ids), sampling.stop)
            reply = build_reply(reply_text, generation.finish_reason, parser, chat)
            logprobs = None
            if chat.logprobs:
                count = reply_token_count(generation, turn_end_ids)
                top = await alternatives(prompt_ids, generation, sampling, chat.top_logprobs, rule.grammar)
                logprobs = chat_logprobs(policy.tokenizer, generation, count, top)
            choices.append(ChatChoice(reply, [call_id() for _ in reply.tool_calls], logprobs))
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": served.model_name}
        usage = _usage(len(prompt_ids), generations)
        if not chat.stream:
            return {**head, "object": "chat.completion", "choices": [c.to_json(i) for i, c in enumerate(choices)],
                    "usage": usage}

        def chunks() -> Iterator[dict[str, Any]]:
            extra = {"usage": None} if chat.include_usage else {}
            for index, choice in enumerate(choices):
                for part in choice.chunks(index):
                    yield {**head, "object": "chat.completion.chunk", "choices": [part], **extra}
            if chat.include_usage:
                yield {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}

        return event_stream(chunks())

    async def completion_choice(job: CompletionRequest, prompt_ids: list[int], generation: Generation, sampling: SamplingParams,
                                index: int) -> dict[str, Any]:
        skip_special = job.skip_special_tokens
        text_ids = [i for i in generation.completion_ids if not (skip_special and i in policy.eos_token_ids)]
        text = policy.tokenizer.decode(text_ids, skip_special_tokens=skip_special)
        if not job.include_stop:
            text = strip_stop(text, sampling.stop)
        choice: dict[str, Any] = {
            "index": index,
            "text": text,
            "finish_reason": generation.finish_reason,
            "logprobs": None,
            "token_ids": generation.completion_ids,
            "prompt_token_ids": prompt_ids,
        }
        if job.logprobs is None:
            return choice

        def name(token_id: int) -> str:
            if job.as_token_ids:
                return f"token_id:{token_id}"
            return str(policy.tokenizer.decode([token_id], skip_special_tokens=False))

        tokens = [name(i) for i in generation.completion_ids]
        top = await alternatives(prompt_ids, generation, sampling, job.logprobs, None)
        tops = []
        for position, (token, logprob) in enumerate(zip(tokens, generation.logprobs, strict=True)):
            # The N most likely, and the sampled token whether or not it is among them (vLLM's rule).
            entry = {name(i): lp for i, lp in (top[position] if top is not None else [])}
            entry[token] = logprob
            tops.append(entry)
        choice["logprobs"] = {
            "tokens": tokens,
            "token_logprobs": generation.logprobs,
            "top_logprobs": tops,
            "text_offset": _text_offsets([policy.tokenizer.decode([i], skip_special_tokens=False)
                                          for i in generation.completion_ids]),
        }
        return choice

    @app.post("/v1/completions", response_model=None)
    async def completions(request: Request) -> dict[str, Any] | Response:
        body = await _json(request)
        check_model(body, served.model_name)
        job = read_completion(body, policy)
        batched = len(job.prompts) > 1
        for index, prompt_ids in enumerate(job.prompts):
            check_prompt(prompt_ids, policy, "prompt", f"prompt {index}: " if batched else "")
        samplings = per_choice(job.sampling, job.n)
        per_prompt = await asyncio.gather(*(generate(p, samplings) for p in job.prompts))
        choices: list[dict[str, Any]] = []
        for prompt_ids, generations in zip(job.prompts, per_prompt, strict=True):
            for generation, sampling in zip(generations, samplings, strict=True):
                choices.append(await completion_choice(job, prompt_ids, generation, sampling, len(choices)))
        head = {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": served.model_name}
        usage = _usage(sum(len(p) for p in job.prompts), [g for gs in per_prompt for g in gs])
        if not job.stream:
            return {**head, "choices": choices, "usage": usage}

        def chunks() -> Iterator[dict[str, Any]]:
            extra = {"usage": None} if job.include_usage else {}
            for choice in choices:
                yield {**head, "choices": [{**choice, "finish_reason": None}], **extra}
                yield {**head, "choices": [{"index": choice["index"], "text": "", "logprobs": None,
                                            "finish_reason": choice["finish_reason"]}], **extra}
            if job.include_usage:
                yield {**head, "choices": [], "usage": usage}

        return event_stream(chunks())

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
        raise BadRequest(f"request body is not JSON: {reason(exc)}", None, "invalid_json") from exc
    if isinstance(body, dict | list) and _nests_deeper_than(body, MAX_JSON_DEPTH):
        raise too_deep
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object", None, "invalid_json")
    return body


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
