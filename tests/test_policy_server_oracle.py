"""Acceptance: oracle conversations replayed by a plain `openai` client against `toolgym serve policy`.

Twelve conversations (the three longest reference solutions of code_host, drive, mail and tickets,
played by the oracle) are sent as a client that knows nothing of toolgym sends them: the app's
system prompt without any tool list, the tools as OpenAI schemas. Every assistant turn that was a
tool call is asked for again. On the shipped default model (compact prompts, 4,096-token context)
every request must fit and succeed; the tiny model is undertrained for these apps, so how many turns
come back as a valid call, and as the oracle's call, is measured and printed, not required.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest

from test_rollout_support import PolicyServer, policy_server
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR

APPS = ("code_host", "drive", "mail", "tickets")
PER_APP = 3
CONTEXT = 4096
MAX_TOKENS = 160  # an oracle call for these apps is far shorter; a rambling reply stops at "length"


@dataclass
class Conversation:
    task_id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]

    def call_turns(self) -> list[int]:
        """Indexes of the assistant turns that called a tool: the request is every message before one."""
        return [i for i, m in enumerate(self.messages) if m["role"] == "assistant" and m.get("tool_calls")]


def oracle_conversations() -> list[Conversation]:
    """The oracle's episodes, as a plain client holds them (system prompt in full style: no tool list)."""
    from toolgym.agent.episode import run_episode
    from toolgym.dataset.build import BuildConfig, generate_app_tasks
    from toolgym.envs import get_app, make_env
    from toolgym.policy.base import SamplingParams
    from toolgym.policy.oracle import OraclePolicy

    conversations = []
    for app in APPS:
        config = BuildConfig(apps=[app], tasks_per_family=1, heldout_envs=[], compositions=[])
        tasks = sorted(generate_app_tasks(get_app(app), config), key=lambda t: (-len(t.reference_solution), t.id))
        for task in tasks[:PER_APP]:
            episode = asyncio.run(run_episode(task, make_env(app), OraclePolicy(), SamplingParams(temperature=0)))
            assert episode.reward == 1.0, (task.id, episode.error)
            conversations.append(Conversation(task.id, [m.to_openai() for m in episode.messages],
                                              [t.to_openai() for t in episode.tools]))
    return conversations


@pytest.fixture(scope="module")
def server() -> Iterator[PolicyServer]:
    with policy_server(DEFAULT_MODEL_DIR) as running:
        yield running


@pytest.fixture(scope="module")
def conversations() -> list[Conversation]:
    found = oracle_conversations()
    assert len(found) == len(APPS) * PER_APP
    return found


async def _replay(server: PolicyServer, requests: list[tuple[Conversation, int]], **fields: Any) -> list[Any]:
    client = openai.AsyncOpenAI(base_url=server.url, api_key="EMPTY", max_retries=0, timeout=600)
    try:
        return await asyncio.gather(*(
            client.chat.completions.create(model=server.model, messages=conversation.messages[:turn],  # type: ignore[arg-type]
                                           tools=conversation.tools, temperature=0, max_tokens=MAX_TOKENS, **fields)
            for conversation, turn in requests
        ))
    finally:
        await client.close()


def _check(reply: Any, conversation: Conversation, turn: int) -> tuple[bool, bool]:
    """(valid call, the oracle's tool): every returned call names an offered tool with object arguments."""
    assert reply.usage.prompt_tokens < CONTEXT and reply.choices[0].finish_reason in ("stop", "length", "tool_calls")
    offered = {t["function"]["name"] for t in conversation.tools}
    calls = reply.choices[0].message.tool_calls or []
    for call in calls:
        assert call.function.name in offered and isinstance(json.loads(call.function.arguments), dict)
    expected = conversation.messages[turn]["tool_calls"][0]["function"]["name"]
    return bool(calls), bool(calls) and calls[0].function.name == expected


def test_every_oracle_turn_fits_and_every_returned_call_is_valid(
    server: PolicyServer, conversations: list[Conversation],
) -> None:
    requests = [(c, turn) for c in conversations for turn in c.call_turns()]
    replies = asyncio.run(_replay(server, requests))  # any 4xx/5xx raises here
    results = [_check(reply, c, turn) for reply, (c, turn) in zip(replies, requests, strict=True)]
    longest = {c.task_id: 0 for c in conversations}
    for reply, (c, _) in zip(replies, requests, strict=True):
        longest[c.task_id] = max(longest[c.task_id], reply.usage.prompt_tokens)
    print(f"\nauto: {len(requests)} turns of {len(conversations)} conversations, all fit (longest prompt "
          f"{max(longest.values())} of {CONTEXT} tokens); valid tool calls {sum(v for v, _ in results)}, "
          f"the oracle's tool {sum(m for _, m in results)}")


def test_required_tool_choice_calls_an_offered_tool_in_every_conversation(
    server: PolicyServer, conversations: list[Conversation],
) -> None:
    """At each conversation's last call, tool_choice="required": a call to an offered tool, or why not."""
    requests = [(c, c.call_turns()[-1]) for c in conversations]
    replies = asyncio.run(_replay(server, requests, tool_choice="required"))
    results = []
    for reply, (conversation, turn) in zip(replies, requests, strict=True):
        results.append(_check(reply, conversation, turn))
        choice = reply.choices[0]
        if not choice.message.tool_calls:
            assert any("tool_choice required a call" in e for e in (choice.model_extra or {})["tool_call_errors"])
        else:
            assert len(choice.message.tool_calls) == 1
    print(f"\nrequired: {len(requests)} conversations; valid tool calls {sum(v for v, _ in results)}, "
          f"the oracle's tool {sum(m for _, m in results)}")
