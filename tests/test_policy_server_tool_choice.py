"""Acceptance: with tool_choice named or `required`, `toolgym serve policy` returns a call whose arguments fit the schema.

The real `openai` client asks the shipped default model (a real loopback server) for a call to each of
the booking app's twelve tools, in the app's own conversation: by name (the tools marked `strict`),
and with `required` over that tool alone and over all twelve. The default model is undertrained for
this app; unconstrained, most of its arguments break the schema (a missing required key, a string
where an integer goes, text that is not JSON). Every reply must be a call whose arguments validate
against the tool's JSON schema, and its log-probs must be those of the grammar's masked distribution.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest

from test_rollout_support import PolicyServer, policy_server
from toolgym.envs import make_env
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR
from toolgym.schema import ToolSpec

USER = "I want to plan a trip, can you help?"


@pytest.fixture(scope="module")
def server() -> Iterator[PolicyServer]:
    with policy_server(DEFAULT_MODEL_DIR) as running:
        yield running


def booking() -> tuple[list[ToolSpec], list[dict[str, Any]]]:
    env = make_env("booking")
    return env.tool_specs(), [{"role": "system", "content": env.policy}, {"role": "user", "content": USER}]


def openai_tool(tool: ToolSpec, strict: bool = False) -> dict[str, Any]:
    spec = tool.to_openai()
    return {**spec, "function": {**spec["function"], "strict": True}} if strict else spec


def ask_all(server: PolicyServer, bodies: list[dict[str, Any]]) -> list[Any]:
    """Every request at once, so the server decodes them in one batch."""

    async def run() -> list[Any]:
        client = openai.AsyncOpenAI(base_url=server.url, api_key="EMPTY", max_retries=0, timeout=900)
        try:
            return list(await asyncio.gather(*(client.chat.completions.create(model=server.model, **body)
                                               for body in bodies)))
        finally:
            await client.close()

    return asyncio.run(run())


def invalid_calls(choice: Any, offered: dict[str, ToolSpec]) -> list[str]:
    """Why `choice` is not one call, to an offered tool, with arguments its schema accepts (empty: it is)."""
    calls = choice.message.tool_calls or []
    if len(calls) != 1 or choice.finish_reason != "tool_calls":
        return [f"{choice.finish_reason}: {len(calls)} calls; content {choice.message.content!r}"]
    call = calls[0].function
    if call.name not in offered:
        return [f"{call.name} was not offered"]
    try:
        jsonschema.validate(json.loads(call.arguments), offered[call.name].parameters)
    except (ValueError, jsonschema.ValidationError) as exc:
        return [f"{call.name}({call.arguments}): {str(exc).splitlines()[0]}"]
    return []


def test_a_named_tool_choice_gets_schema_valid_arguments_for_every_booking_tool(server: PolicyServer) -> None:
    tools, messages = booking()
    strict = [openai_tool(t, strict=True) for t in tools]
    replies = ask_all(server, [
        {"messages": messages, "tools": strict, "temperature": 0,
         "tool_choice": {"type": "function", "function": {"name": tool.name}}} for tool in tools
    ])
    problems = {}
    for tool, reply in zip(tools, replies, strict=True):
        choice = reply.choices[0]
        problems[tool.name] = [*invalid_calls(choice, {tool.name: tool}),
                               *(choice.model_extra or {}).get("tool_call_errors", [])]
    assert not any(problems.values()), problems


def test_required_tool_choice_gets_schema_valid_arguments_for_every_booking_tool(server: PolicyServer) -> None:
    """Each tool offered alone, sampled with a seed (so more than the greedy path), then all twelve at once:
    the model names one of them under the grammar."""
    tools, messages = booking()
    everything = [openai_tool(t) for t in tools]
    bodies = [{"messages": messages, "tools": [openai_tool(tool)], "tool_choice": "required", "temperature": 1.0,
               "seed": index} for index, tool in enumerate(tools)]
    bodies.append({"messages": messages, "tools": everything, "tool_choice": "required", "temperature": 1.0,
                   "n": 4, "seed": 7})
    replies = ask_all(server, bodies)
    offered = {t.name: t for t in tools}
    problems = {tool.name: invalid_calls(reply.choices[0], {tool.name: tool})
                for tool, reply in zip(tools, replies, strict=False)}
    problems["all twelve"] = [p for choice in replies[-1].choices for p in invalid_calls(choice, offered)]
    assert not any(problems.values()), problems


def test_log_probs_of_a_forced_call_are_under_the_grammars_mask(server: PolicyServer) -> None:
    """Alternatives the grammar forbids never show as possible (finite) log-probs, and a token the
    grammar forces has log-prob 0: the distribution reported is the one the token was drawn from."""
    tools, messages = booking()
    tool = next(t for t in tools if t.name == "list_cities")  # no arguments: `{}`, then the close tag
    (reply,) = ask_all(server, [{"messages": messages, "tools": [openai_tool(t) for t in tools],
                                 "tool_choice": {"type": "function", "function": {"name": tool.name}},
                                 "temperature": 1.0, "seed": 1, "logprobs": True, "top_logprobs": 5}])
    choice = reply.choices[0]
    assert invalid_calls(choice, {tool.name: tool}) == []
    tokens = choice.logprobs.content
    assert "".join(t.token for t in tokens).startswith(" {") and tokens[-1].token == "</tool_call>"
    for token in tokens[:-1]:
        possible = [alt.token for alt in token.top_logprobs if alt.logprob > -9999.0]
        # Only spellings of " {}}\n" were allowed: the arguments can be nothing but {}.
        assert token.token in possible and all(set(alt) <= set(" {}\n") for alt in possible), token
    close = tokens[-1]  # nothing but the close tag was allowed after "}\n"
    assert close.logprob == pytest.approx(0.0, abs=1e-6)
    assert [alt.token for alt in close.top_logprobs if alt.logprob > -9999.0] == ["</tool_call>"]
