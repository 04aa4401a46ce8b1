"""Shared pieces of the agent tests: a tiny tokenizer (built once), toy tasks, scripted test doubles.

The scripted policies return fixed text through the REAL tokenizer: the properties they test are
about bookkeeping (which ids were sampled, where masks go), not about a model's choices.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from toolgym.envs import Environment
from toolgym.envs.examples.toy import APP as TOY_APP
from toolgym.model.tiny import build_tokenizer, chat_template
from toolgym.policy.base import Generation, GenerationRequest, Policy, PolicyError
from toolgym.schema import Message, RowExists, Task, ToolCall, UserScenario

# The real Qwen3 template, copied into the repo from the project's shared fixtures.
QWEN3_TEMPLATE = Path(__file__).resolve().parent / "fixtures/chat_templates/qwen3-hybrid-thinking.jinja"

ENV_VARIABLES = {
    "CURRENT_DATE": "2026-06-19",
    "LOGGED_IN_USER": "ana",
    "LOGGED_IN_NAME": "Ana Lee",
    "TEAM": "Platform",
}


def _corpus() -> list[str]:
    specs = [json.dumps(t.spec.to_openai()) for t in TOY_APP.tools]
    lines = [
        chat_template(),
        TOY_APP.policy,
        *specs,
        *[t.spec.signature() for t in TOY_APP.tools],
        '<|im_start|>assistant\n<tool_call>\n{"name": "add_note", "arguments": {"title": "Buy milk", "due": "tomorrow"}}\n'
        "</tool_call><|im_end|>\n",
        '<|im_start|>user\n<tool_response>\n[{"id": 1, "title": "Call the bank", "due": "2026-06-11", "done": 0}]\n'
        "</tool_response><|im_end|>\n",
        "Today is Friday, 2026-06-19. You act for ana (Ana Lee). Current date: Logged-in user:",
    ]
    return lines * 5


@cache
def _tokenizer(template: str) -> Any:
    tokenizer = build_tokenizer(_corpus(), vocab_size=700)
    if template == "qwen3":
        tokenizer.chat_template = QWEN3_TEMPLATE.read_text(encoding="utf-8")
    return tokenizer


def tiny_tokenizer() -> Any:
    """The project's tiny tokenizer and template (built once per session; do not modify it)."""
    return _tokenizer("tiny")


def qwen3_tokenizer() -> Any:
    """The same tokenizer (it has the Qwen special tokens) with the real Qwen3 template."""
    return _tokenizer("qwen3")


def toy_env() -> Environment:
    return Environment([TOY_APP])


def toy_task(prompt: str = "Add a note 'Buy milk' due tomorrow.", **fields: Any) -> Task:
    defaults: dict[str, Any] = {
        "id": "toy/add_note/0000",
        "env": "toy",
        "env_version": TOY_APP.version,
        "prompt": prompt,
        "env_variables": dict(ENV_VARIABLES),
        "checks": [RowExists(table="notes", where={"owner": "ana", "title": "Buy milk", "due": "2026-06-20"})],
    }
    defaults.update(fields)
    return Task(**defaults)


def call_text(name: str, **arguments: Any) -> str:
    """A call exactly as the templates render it (so re-rendered history can match)."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments)}}}\n</tool_call>'


# A scripted turn: text (closed with <|im_end|>, finish "stop"), or (text, "length") for a cut-off
# turn without the stop token, or an exception to raise, or a coroutine function to await.
Script = str | tuple[str, str] | BaseException | Callable[[], Any]


class ScriptedTokenPolicy(Policy):
    """Token mode: encodes scripted text with the real tokenizer and invents distinct logprobs."""

    name = "scripted-token"

    def __init__(self, tokenizer: Any, script: list[Script]) -> None:
        self.tokenizer = tokenizer
        self.script = list(script)
        self.requests: list[GenerationRequest] = []
        self.sampled: list[list[int]] = []
        self._logprob = 0.0
        self.im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")

    async def generate(self, request: GenerationRequest) -> Generation:
        self.requests.append(request)
        if not self.script:
            raise PolicyError("script exhausted")
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            step = await step()
        text, finish = step if isinstance(step, tuple) else (step, "stop")
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + ([self.im_end] if finish == "stop" else [])
        budget = request.sampling.max_new_tokens
        if len(ids) > budget:
            ids, finish = ids[:budget], "length"
        logprobs = []
        for _ in ids:
            self._logprob -= 0.01
            logprobs.append(round(self._logprob, 4))
        self.sampled.append(list(ids))
        return Generation(text=self.tokenizer.decode(ids), completion_ids=ids, logprobs=logprobs, finish_reason=finish)


class ScriptedChatPolicy(Policy):
    """Chat mode: returns scripted assistant Messages (as a hosted API with a tool parser would)."""

    name = "scripted-chat"

    def __init__(self, script: list[Message]) -> None:
        self.script = list(script)
        self.requests: list[GenerationRequest] = []

    async def generate(self, request: GenerationRequest) -> Generation:
        self.requests.append(request)
        message = self.script.pop(0)
        return Generation(text=message.content or "", message=message)


class SlowPolicy(Policy):
    name = "slow"

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    async def generate(self, request: GenerationRequest) -> Generation:
        await asyncio.sleep(30)
        raise AssertionError("the episode clock should have stopped this turn")


class ScriptedUser:
    """A deterministic user simulator: replies in order; a marker in a reply ends the conversation."""

    name = "scripted-user"

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.histories: list[list[Message]] = []

    async def respond(self, history: list[Message]) -> tuple[str, Any]:
        from toolgym.agent.user import split_termination

        self.histories.append(list(history))
        return split_termination(self.replies.pop(0))


def note_calls(*pairs: tuple[str, dict[str, Any]]) -> list[ToolCall]:
    return [ToolCall(name=n, arguments=a) for n, a in pairs]


def user_task() -> Task:
    return toy_task(
        prompt="Hi, I need help with my notes.",
        user_scenario=UserScenario(instructions="You want a note 'Buy milk' due tomorrow."),
    )
