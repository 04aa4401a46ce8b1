"""OpenAIPolicy: any OpenAI-compatible server (vLLM, SGLang, `toolgym serve policy`, hosted APIs).

Chat mode sends messages + tools to `/v1/chat/completions` and returns the parsed assistant
message. Token mode sends prompt token ids to `/v1/completions` and returns the sampled ids and
log-probs, so the rollout stays token-in/token-out against a remote engine. Anything the server
cannot deliver (connection refused, 5xx after retries, a malformed body) is a PolicyError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import openai

from toolgym.chat.render import PromptStyle, load_prompt_style
from toolgym.policy.base import (
    Generation,
    GenerationRequest,
    Policy,
    PolicyError,
    SamplingParams,
    refuse_grammar,
)
from toolgym.policy.openai_client import LoopBoundClient
from toolgym.schema import Message, ToolCall

Mode = Literal["chat", "token"]
TOKEN_ID_PREFIX = "token_id:"


def token_extra_body(sampling: SamplingParams) -> dict[str, Any]:
    """vLLM's completion extras: ids instead of token strings, stop text kept, special tokens kept."""
    body: dict[str, Any] = {
        "return_tokens_as_token_ids": True,
        "return_token_ids": True,
        "skip_special_tokens": False,
        "include_stop_str_in_output": True,
    }
    if sampling.top_k > 0:
        body["top_k"] = sampling.top_k
    return body


def _parse_token(token: str) -> int:
    if not token.startswith(TOKEN_ID_PREFIX):
        raise PolicyError(
            f"server returned token {token!r} instead of 'token_id:N'; it ignores return_tokens_as_token_ids"
        )
    return int(token[len(TOKEN_ID_PREFIX):])


def _field(obj: Any, name: str) -> Any:
    """A field of an openai response object, including server extras kept in `model_extra`."""
    value = getattr(obj, name, None)
    if value is None and getattr(obj, "model_extra", None):
        value = obj.model_extra.get(name)
    return value


def completion_to_generation(choice: Any) -> Generation:
    """Ids + log-probs of one `/v1/completions` choice (vLLM's `token_ids` or `token_id:N` tokens)."""
    logprobs = _field(choice, "logprobs")
    if logprobs is None or _field(logprobs, "token_logprobs") is None:
        raise PolicyError("server returned no logprobs for a token-mode completion")
    values = [float(v) if v is not None else 0.0 for v in _field(logprobs, "token_logprobs")]
    token_ids = _field(choice, "token_ids")
    if token_ids is None:
        token_ids = [_parse_token(t) for t in _field(logprobs, "tokens") or []]
    ids = [int(i) for i in token_ids]
    if len(ids) != len(values):
        raise PolicyError(f"server returned {len(ids)} token ids but {len(values)} logprobs")
    finish = choice.finish_reason
    if finish not in ("stop", "length"):
        raise PolicyError(f"generation ended with finish_reason={finish!r}")
    return Generation(text=choice.text or "", completion_ids=ids, logprobs=values, finish_reason=finish)


def _tool_call_text(name: str, raw_arguments: str) -> str:
    return f'<tool_call>\n{{"name": {json.dumps(name)}, "arguments": {raw_arguments}}}\n</tool_call>'


def chat_message_to_generation(message: Any, finish_reason: str | None) -> Generation:
    """The assistant message with parsed calls; calls whose arguments are not a JSON object stay in
    the content as `<tool_call>` text, so the episode's parser reports them as format errors."""
    content = message.content or ""
    calls: list[ToolCall] = []
    unparsed: list[str] = []
    for index, raw in enumerate(message.tool_calls or []):
        function = raw.function
        name = (function.name or "").strip() if function else ""
        raw_arguments = (function.arguments or "") if function else ""
        try:
            arguments = json.loads(raw_arguments) if raw_arguments.strip() else {}
        except json.JSONDecodeError:
            arguments = None
        if not name or not isinstance(arguments, dict):
            unparsed.append(_tool_call_text(name, raw_arguments or "null"))
            continue
        calls.append(ToolCall(name=name, arguments=arguments, id=raw.id or f"call_{index}"))
    if unparsed:
        content = "\n".join([content, *unparsed]) if content else "\n".join(unparsed)
    reasoning = _field(message, "reasoning_content") or _field(message, "reasoning")
    parsed = Message(
        role="assistant", content=content, tool_calls=calls or None, reasoning_content=reasoning or None
    )
    text = "\n".join([content, *(_tool_call_text(c.name, json.dumps(c.arguments)) for c in calls)]).strip()
    return Generation(text=text, message=parsed, finish_reason="length" if finish_reason == "length" else "stop")


class OpenAIPolicy(Policy):
    """Chat mode (messages in, parsed message out) or token mode (ids in, ids + logprobs out)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "EMPTY",
        mode: Mode = "chat",
        tokenizer_dir: str | Path | None = None,
        timeout_s: float = 300.0,
        max_retries: int = 2,
        prompt_style: PromptStyle | None = None,
    ) -> None:
        if mode not in ("chat", "token"):
            raise ValueError(f"mode must be 'chat' or 'token'; got {mode!r}")
        self.base_url = base_url
        self.model = model
        self.mode: Mode = mode
        self.name = f"openai:{base_url}#{model}" + ("#token" if mode == "token" else "")
        self.checkpoint = model
        self.tokenizer = None
        # Chat mode: the episode writes the system prompt, so it must use the style the served model
        # expects (a local model folder names it in toolgym.json).
        self.prompt_style: PromptStyle | None = prompt_style or (
            load_prompt_style(model) if Path(model).is_dir() else None
        )
        if mode == "token":
            if tokenizer_dir is None:
                raise ValueError("token mode needs tokenizer_dir: the prompt ids are rendered here, not on the server")
            from transformers import AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True)
        self._clients = LoopBoundClient(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries)

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The running loop's client: pooled connections belong to the loop that opened them."""
        return self._clients.get()

    async def generate(self, request: GenerationRequest) -> Generation:
        refuse_grammar(request, "OpenAIPolicy")
        try:
            if self.mode == "token":
                return await self._complete(request)
            return await self._chat(request)
        except openai.APIStatusError as exc:
            raise PolicyError(f"{self.base_url}: HTTP {exc.status_code}: {_error_detail(exc)}") from exc
        except openai.APIConnectionError as exc:
            raise PolicyError(f"{self.base_url}: {type(exc).__name__}: {exc} (server unreachable)") from exc
        except openai.OpenAIError as exc:
            raise PolicyError(f"{self.base_url}: {type(exc).__name__}: {exc}") from exc

    async def _complete(self, request: GenerationRequest) -> Generation:
        if request.prompt_ids is None:
            raise PolicyError("token mode needs prompt_ids in the request")
        sampling = request.sampling
        response = await self.client.completions.create(
            model=self.model,
            prompt=[list(request.prompt_ids)],
            max_tokens=sampling.max_new_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            stop=list(sampling.stop) or None,
            seed=sampling.seed,
            logprobs=0,  # the sampled tokens' own log-probs; alternatives would cost the server a scoring pass
            extra_body=token_extra_body(sampling),
        )
        if not response.choices:
            raise PolicyError("server returned no choices")
        return completion_to_generation(response.choices[0])

    async def _chat(self, request: GenerationRequest) -> Generation:
        if request.messages is None:
            raise PolicyError("chat mode needs messages in the request")
        sampling = request.sampling
        extra: dict[str, Any] = {"top_k": sampling.top_k} if sampling.top_k > 0 else {}
        kwargs: dict[str, Any] = {"tools": request.tools} if request.tools else {}
        response = await self.client.chat.completions.create(
            model=self.model,
            messages=request.messages,  # type: ignore[arg-type]
            max_tokens=sampling.max_new_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            stop=list(sampling.stop) or None,
            seed=sampling.seed,
            extra_body=extra or None,
            **kwargs,
        )
        if not response.choices:
            raise PolicyError("server returned no choices")
        choice = response.choices[0]
        return chat_message_to_generation(choice.message, choice.finish_reason)

    async def close(self) -> None:
        await self._clients.close()


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        return json.dumps(body)[:500]
    return str(exc)[:500]
