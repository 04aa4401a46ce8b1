"""LLMUserSimulator against a real OpenAI-compatible HTTP server on 127.0.0.1 (FastAPI + uvicorn).

The server is a tiny deterministic "customer model": it answers from the system prompt's facts and
calls the phone tools it is offered (a real tool call over the wire). The simulator uses the
official `openai` client; the device changes happen on the episode's environment with caller "user".
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from test_user_sim_support import ChatScript, dual_task
from toolgym.agent.episode import run_episode
from toolgym.agent.limits import EpisodeLimits
from toolgym.agent.users import InstructingOraclePolicy, LLMUserSimulator
from toolgym.envs import Environment, make_env
from toolgym.policy.base import Policy, SamplingParams
from toolgym.schema import Episode, Task

MODEL = "fake-customer"


class FakeCustomerModel:
    """Rules instead of weights: facts from the system prompt, phone tools when asked, markers to end."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail = False

    @staticmethod
    def _tool_call(name: str, arguments: str) -> dict[str, Any]:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": arguments}}]}

    def decide(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        last = messages[-1]
        if last["role"] == "tool":
            fixed = '"service": "ok"' in last["content"] and '"internet": "working"' in last["content"]
            text = "It works now, I have service. Thank you! ###STOP###" if fixed else "Done, but it still shows no service."
            return {"role": "assistant", "content": text}
        said = (last.get("content") or "").lower()
        if "airplane mode" in said and "toggle_airplane_mode" in tools:
            return self._tool_call("toggle_airplane_mode", '{"enabled": false}')
        if "status" in said and "check_device_status" in tools:
            return self._tool_call("check_device_status", "{}")
        if "phone number" in said:
            number = re.search(r"^- phone number: (.+)$", messages[0]["content"], re.M)
            return {"role": "assistant", "content": f"It's {number.group(1) if number else 'unknown'}."}
        return {"role": "assistant", "content": "I don't know that. ###OUT-OF-SCOPE###"}

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> JSONResponse:
            body = await request.json()
            self.requests.append(body)
            if self.fail:
                return JSONResponse({"error": {"message": "the customer model crashed"}}, status_code=500)
            message = self.decide(body)
            return JSONResponse({
                "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            })

        return app


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """Run `app` with uvicorn on a free loopback port in a thread; yield its /v1 base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the fake customer model did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def customer() -> Iterator[tuple[FakeCustomerModel, str]]:
    model = FakeCustomerModel()
    with serve(model.app()) as url:
        yield model, url


def run(task: Task, policy: Policy, url: str, **options: Any) -> tuple[Episode, Environment]:
    env = make_env(task.env)
    simulator = LLMUserSimulator(url, MODEL, **options)

    async def episode() -> Episode:
        try:
            return await run_episode(task, env, policy, SamplingParams(temperature=0.0), user_simulator=simulator,
                                     limits=EpisodeLimits(max_turns=8))
        finally:
            await simulator.close()

    return asyncio.run(episode()), env


def test_the_llm_user_answers_facts_acts_through_its_tools_and_stops(customer: tuple[FakeCustomerModel, str]) -> None:
    model, url = customer
    model.requests.clear()
    task = dual_task("dual_no_service_airplane")
    episode, env = run(task, ChatScript(["Could you tell me your phone number?",
                                         "Thanks. Please turn off airplane mode on your phone."]), url)
    assert episode.status == "ok" and episode.stop_reason == "user_stop" and episode.reward == 1.0
    assert episode.user_simulator == f"llm:{MODEL}" and episode.user_termination == "###STOP###"
    replies = [m.content for m in episode.messages[2:] if m.role == "user"]
    assert replies == [f"It's {task.metadata['phone_number']}.", "It works now, I have service. Thank you!"]
    assert [(c.name, c.caller, c.ok) for c in env.calls] == [("toggle_airplane_mode", "user", True)]
    # what went over the wire: the scenario as the system prompt, flipped roles, only the user's tools
    first = model.requests[0]
    system = first["messages"][0]["content"]
    assert task.user_scenario is not None and task.user_scenario.instructions in system
    assert f"- phone number: {task.metadata['phone_number']}" in system
    assert all(marker in system for marker in ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"))
    assert [m["role"] for m in first["messages"][1:]] == ["assistant", "user"]
    assert first["messages"][1]["content"] == task.prompt
    offered = {t["function"]["name"] for t in first["tools"]}
    assert "toggle_airplane_mode" in offered and "check_device_status" in offered and "get_my_account" not in offered
    last = model.requests[-1]["messages"]
    assert last[-1]["role"] == "tool" and last[-1]["tool_call_id"] == "call_toggle_airplane_mode"
    assert last[-2]["tool_calls"][0]["function"]["name"] == "toggle_airplane_mode"


def test_the_instructing_oracle_and_the_llm_user_solve_a_task_together(customer: tuple[FakeCustomerModel, str]) -> None:
    model, url = customer
    model.requests.clear()
    task = dual_task("dual_no_service_airplane")
    episode, env = run(task, InstructingOraclePolicy(), url)
    assert episode.stop_reason == "user_stop" and episode.reward == 1.0
    assert [(c.name, c.caller) for c in env.calls] == [
        ("get_my_account", "agent"), ("check_device_status", "user"), ("toggle_airplane_mode", "user")]
    # the customer never sees the agent's own tool traffic
    for request in model.requests:
        assert all("account_number" not in (m.get("content") or "") for m in request["messages"])


def test_an_unanswerable_question_ends_out_of_scope(customer: tuple[FakeCustomerModel, str]) -> None:
    _, url = customer
    episode, env = run(dual_task("dual_no_data_switch"), ChatScript(["What's your mother's maiden name?"]), url)
    assert episode.status == "ok" and episode.stop_reason == "user_out_of_scope"
    assert episode.user_termination == "###OUT-OF-SCOPE###" and episode.reward == 0.0
    assert env.diff() == []


def test_a_failing_user_model_is_an_infrastructure_error(customer: tuple[FakeCustomerModel, str]) -> None:
    model, url = customer
    model.fail = True
    try:
        episode, _ = run(dual_task("dual_no_data_switch"), ChatScript(["How can I help?"]), url, max_retries=0)
    finally:
        model.fail = False
    assert episode.status == "error" and episode.stop_reason == "error"
    assert episode.error is not None and episode.error.startswith("user simulator error")
    assert "500" in episode.error and episode.verdict is None
