"""Acceptance: the OpenAI Agents SDK with `tool_choice="required"` gets schema-valid tool calls from `toolgym serve policy`.

A real SDK client (Agent, Runner, OpenAIChatCompletionsModel over `openai.AsyncOpenAI`) runs against the
shipped default model on a real loopback server, once per booking tool (the tool offered alone) and
once with all twelve. `tool_use_behavior="stop_on_first_tool"` ends each run at the first call, so a
run's final output is the tool's own result. A reply without a call would end the run instead with
the model's raw text as the final answer, and the tool never called: what an agent framework does
when a server breaks the `required` contract.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest
from agents import (
    Agent,
    FunctionTool,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    RunContextWrapper,
    Runner,
)

from test_rollout_support import PolicyServer, policy_server
from toolgym.envs import make_env
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR
from toolgym.schema import ToolSpec

USER = "I want to plan a trip, can you help?"


@pytest.fixture(scope="module")
def server() -> Iterator[PolicyServer]:
    with policy_server(DEFAULT_MODEL_DIR) as running:
        yield running


class Recorder:
    """The SDK tools' side: every call's name and argument text, answered with a marker the run returns."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def tool(self, spec: ToolSpec) -> FunctionTool:
        async def invoke(context: RunContextWrapper[Any], arguments: str) -> str:
            self.calls.append((spec.name, arguments))
            return f"called {spec.name}"

        return FunctionTool(name=spec.name, description=spec.description, params_json_schema=spec.parameters,
                            on_invoke_tool=invoke, strict_json_schema=False)


async def run_agent(server: PolicyServer, instructions: str, tools: list[ToolSpec], recorder: Recorder,
                    temperature: float, seed: int) -> Any:
    client = openai.AsyncOpenAI(base_url=server.url, api_key="EMPTY", max_retries=0, timeout=900)
    agent = Agent(name="booking", instructions=instructions,
                  model=OpenAIChatCompletionsModel(model=server.model, openai_client=client),
                  tools=[recorder.tool(t) for t in tools], tool_use_behavior="stop_on_first_tool",
                  model_settings=ModelSettings(tool_choice="required", temperature=temperature,
                                               extra_args={"seed": seed}))
    try:
        return await Runner.run(agent, USER, max_turns=2, run_config=RunConfig(tracing_disabled=True))
    finally:
        await client.close()


def test_the_agents_sdk_with_required_tool_choice_calls_every_booking_tool_with_schema_valid_arguments(
    server: PolicyServer,
) -> None:
    env = make_env("booking")
    tools = env.tool_specs()
    recorders = [Recorder() for _ in range(len(tools) + 1)]

    async def run_all() -> list[Any]:  # concurrently: the server decodes them in one batch
        runs = [run_agent(server, env.policy, [tool], recorder, 1.0, index)
                for index, (tool, recorder) in enumerate(zip(tools, recorders, strict=False))]
        runs.append(run_agent(server, env.policy, tools, recorders[-1], 0.0, 0))
        return list(await asyncio.gather(*runs))

    results = asyncio.run(run_all())
    offered = {t.name: t for t in tools}
    problems: dict[str, str] = {}
    for index, (result, recorder) in enumerate(zip(results, recorders, strict=True)):
        label = tools[index].name if index < len(tools) else "all twelve"
        if len(recorder.calls) != 1:
            problems[label] = f"{len(recorder.calls)} calls; final output {result.final_output!r}"
            continue
        name, arguments = recorder.calls[0]
        assert result.final_output == f"called {name}"
        if index < len(tools) and name != tools[index].name:
            problems[label] = f"called {name}"
            continue
        try:
            jsonschema.validate(json.loads(arguments), offered[name].parameters)
        except (ValueError, jsonschema.ValidationError) as exc:
            problems[label] = f"{name}({arguments}): {str(exc).splitlines()[0]}"
    assert not problems, problems
