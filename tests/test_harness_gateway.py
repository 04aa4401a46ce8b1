"""The gateway's endpoints as real clients reach them on loopback: per-episode state and keys, refusals that name
the problem, streaming, and nothing reachable once an episode has ended."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import openai
import pytest
from mcp import Client

from test_harness_support import booking_tasks
from toolgym.envs import make_env
from toolgym.envs.mcp.session import describe_error
from toolgym.harness.gateway import Gateway
from toolgym.harness.policy_endpoint import MODEL_NAME, PolicyEndpoint
from toolgym.harness.recording import Recording
from toolgym.harness.session import EpisodeSession
from toolgym.policy.base import SamplingParams
from toolgym.policy.instructing_oracle import InstructingOraclePolicy
from toolgym.schema import Task


def _session(task: Task) -> EpisodeSession:
    env = make_env(task.env)
    env.reset(task.env_variables)
    return EpisodeSession(task, 0, env, Recording(None), max_turns=2)


def _write_task() -> Task:
    return next(t for t in booking_tasks(16) if t.reference_solution and t.reference_solution[-1].name.startswith("book"))


async def _scenario() -> dict[str, Any]:
    task = _write_task()
    endpoint = PolicyEndpoint(InstructingOraclePolicy(prompt_style="compact"), prompt_style="compact",
                              defaults=SamplingParams())
    seen: dict[str, Any] = {}
    async with Gateway(endpoint) as gateway:
        first, second = _session(task), _session(task)
        urls, other = gateway.open(first), gateway.open(second)
        tools = [{"type": "function", "function": {"name": s.name, "description": s.description,
                                                   "parameters": s.parameters}} for s in first.env.tool_specs("agent")]
        messages = [{"role": "user", "content": task.prompt}]
        async with httpx.AsyncClient() as http:
            chat = f"{urls.openai_base_url}/chat/completions"
            seen["wrong_key"] = (await http.post(chat, json={"messages": messages},
                                                 headers={"Authorization": f"Bearer {other.api_key}"})).status_code
            seen["foreign_host"] = (await http.post(chat, json={"messages": messages}, headers={
                "Authorization": f"Bearer {urls.api_key}", "Host": "evil.example"})).status_code
        client = openai.AsyncOpenAI(base_url=urls.openai_base_url, api_key=urls.api_key, max_retries=0)
        for name, extra in (("other_model", {"model": "gpt-4o"}), ("n", {"n": 2}),
                            ("tool_choice", {"tool_choice": "required"})):
            with pytest.raises(openai.APIStatusError) as refused:
                await client.chat.completions.create(**{"model": MODEL_NAME, "messages": messages, "tools": tools,
                                                        **extra})
            seen[name] = (refused.value.status_code, refused.value.body)
        stream = await client.chat.completions.create(model=MODEL_NAME, messages=messages, tools=tools, stream=True)
        pieces = [chunk async for chunk in stream]
        calls = [c for p in pieces if p.choices for c in p.choices[0].delta.tool_calls or []]
        seen["streamed_call"] = (calls[0].function.name, json.loads(calls[1].function.arguments))
        # Every reference call, made through the episode's MCP URL, lands in that episode's state only.
        async with Client(urls.mcp_url) as mcp:
            seen["listed"] = [t.name for t in (await mcp.list_tools()).tools]
            for call in task.reference_solution:
                await mcp.call_tool(call.name, call.arguments)
        seen["first_diff"], seen["second_diff"] = len(first.env.diff()), len(second.env.diff())
        gateway.close(first)
        with pytest.raises(openai.NotFoundError):
            await client.chat.completions.create(model=MODEL_NAME, messages=messages)
        try:
            async with Client(urls.mcp_url) as mcp:
                await mcp.call_tool("list_cities", {})
        except BaseException as exc:  # the client's task group wraps the MCPError
            seen["ended_mcp"] = describe_error(exc)
        await client.close()
        seen["recorded"] = first.recording.to_json()["calls"]
        seen["requests"] = first.requests
        seen["tool_uses"] = [u.name for u in first.tool_uses]
    seen["task"] = task
    return seen


def test_each_episode_has_its_own_key_state_and_lifetime_and_refusals_name_the_field() -> None:
    seen = asyncio.run(_scenario())
    task: Task = seen["task"]
    assert seen["wrong_key"] == 401  # another episode's key does not open this one
    assert seen["foreign_host"] == 421  # a page that rebinds its DNS name to loopback still sends its own name
    status, body = seen["other_model"]
    assert status == 404 and body["code"] == "model_not_found" and "OPENAI_MODEL" in body["message"]
    assert seen["n"][0] == 400 and seen["n"][1]["param"] == "n"
    assert seen["tool_choice"][0] == 400 and seen["tool_choice"][1]["param"] == "tool_choice"
    first_call = task.reference_solution[0]
    assert seen["streamed_call"] == (first_call.name, first_call.arguments)  # the oracle, through the endpoint
    assert seen["listed"] == [s.name for s in make_env("booking").tool_specs("agent")]
    assert seen["first_diff"] > 0 and seen["second_diff"] == 0
    assert seen["tool_uses"] == [c.name for c in task.reference_solution]
    assert seen["ended_mcp"] == "MCPError: no live toolgym episode at this URL (it has ended)"
    assert seen["requests"] == 1 and len(seen["recorded"]) == 1  # refused requests are not turns
