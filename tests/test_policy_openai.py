"""`toolgym serve policy` + OpenAIPolicy (the real openai client) against it, as a real subprocess.

Greedy episodes through the server (token mode and chat mode) must match the in-process
HFPolicy; a server that dies mid-episode must give error rows while the run completes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessage

from test_rollout_support import PolicyServer, env_factory, policy_server, tiny_model_dir, toy_tasks
from toolgym.agent.limits import EpisodeLimits
from toolgym.policy.base import Generation, GenerationRequest, Policy, PolicyError, SamplingParams
from toolgym.policy.hf import HFPolicy
from toolgym.policy.openai_policy import OpenAIPolicy, chat_message_to_generation
from toolgym.rollout.results import RESULTS_FILE, read_rows, row_key
from toolgym.rollout.runner import run_rollout

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=24)
# Seeded sampling: every request carries its own seed, so server and in-process runs must agree too,
# and the random tiny model says more than its greedy repetition.
SEEDED = SamplingParams(temperature=1.0, max_new_tokens=24, seed=7)


@pytest.fixture(scope="module")
def server() -> Iterator[PolicyServer]:
    with policy_server(tiny_model_dir()) as running:
        yield running


def _rollout(policy: Policy, out: Path, concurrency: int = 3, samples: int = 2,
             sampling: SamplingParams = GREEDY) -> list[dict]:
    asyncio.run(run_rollout(toy_tasks(), policy, out_dir=out, samples_per_task=samples, concurrency=concurrency,
                            sampling=sampling, limits=EpisodeLimits(max_turns=3), env_factory=env_factory))
    return sorted(read_rows(out / RESULTS_FILE), key=row_key)


def _close(policy: Policy) -> None:
    asyncio.run(policy.close())


def test_models_endpoint_lists_the_checkpoint(server: PolicyServer) -> None:
    data = httpx.get(f"{server.url}/models").json()["data"]
    assert [m["id"] for m in data] == [server.model]


@pytest.mark.parametrize("sampling", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_token_mode_episodes_through_the_server_match_the_in_process_policy(
    server: PolicyServer, tmp_path: Path, sampling: SamplingParams
) -> None:
    local = HFPolicy(tiny_model_dir())
    remote = OpenAIPolicy(server.url, server.model, mode="token", tokenizer_dir=tiny_model_dir())
    try:
        local_rows = _rollout(local, tmp_path / "local", sampling=sampling)
        remote_rows = _rollout(remote, tmp_path / "remote", sampling=sampling)
    finally:
        _close(local), _close(remote)
    assert len(remote_rows) == 6 and all(r["status"] != "error" for r in remote_rows)
    for mine, theirs in zip(local_rows, remote_rows, strict=True):
        assert row_key(mine) == row_key(theirs)
        mine_turns, their_turns = mine["episode"]["token_turns"], theirs["episode"]["token_turns"]
        assert [t["prompt_ids"] for t in their_turns] == [t["prompt_ids"] for t in mine_turns]
        assert [t["completion_ids"] for t in their_turns] == [t["completion_ids"] for t in mine_turns]
        for a, b in zip(mine_turns, their_turns, strict=True):
            assert b["logprobs"] == pytest.approx(a["logprobs"], abs=1e-4)
        assert [(s["input_ids"], s["loss_mask"]) for s in theirs["token_samples"]] == [
            (s["input_ids"], s["loss_mask"]) for s in mine["token_samples"]]
        assert (theirs["status"], theirs["stop_condition"], theirs["reward"]) == (
            mine["status"], mine["stop_condition"], mine["reward"])
    if sampling is SEEDED:  # not the random model's greedy repetition of one token
        assert all(len(set(t["completion_ids"])) > 5 for r in remote_rows for t in r["episode"]["token_turns"])


@pytest.mark.parametrize("sampling", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_chat_mode_episodes_through_the_server_match_the_in_process_policy(
    server: PolicyServer, tmp_path: Path, sampling: SamplingParams
) -> None:
    local = HFPolicy(tiny_model_dir())
    chat = OpenAIPolicy(server.url, server.model, mode="chat")
    assert chat.prompt_style == "compact"  # read from the model folder's toolgym.json
    try:
        local_rows = _rollout(local, tmp_path / "local", samples=1, sampling=sampling)
        chat_rows = _rollout(chat, tmp_path / "chat", samples=1, sampling=sampling)
    finally:
        _close(local), _close(chat)
    assert len(chat_rows) == 3 and all(r["status"] != "error" for r in chat_rows)
    for mine, theirs in zip(local_rows, chat_rows, strict=True):
        # Same system prompt on both sides and the same template on the server: the same first turn.
        assert theirs["prompt"] == mine["prompt"]
        assert theirs["completion"][0]["content"] == mine["completion"][0]["content"]
        assert theirs["stop_condition"] == mine["stop_condition"]
    if sampling is SEEDED:
        assert all(len(r["completion"][0]["content"]) > 10 for r in chat_rows)


def test_chat_completion_reports_usage_and_honours_max_tokens(server: PolicyServer) -> None:
    client = openai.OpenAI(base_url=server.url, api_key="EMPTY")
    response = client.chat.completions.create(
        model=server.model, messages=[{"role": "user", "content": "List my notes."}], max_tokens=5, temperature=0,
        tools=[{"type": "function", "function": {"name": "list_my_notes", "parameters": {"type": "object"}}}],
    )
    assert response.choices[0].finish_reason in ("length", "stop", "tool_calls")
    assert response.usage is not None and 0 < response.usage.completion_tokens <= 5
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens


def test_chat_tools_reach_the_model_whoever_wrote_the_system_prompt(server: PolicyServer) -> None:
    """A compact-style model reads tools from the system prompt; a generic client's tools go to the template."""
    from toolgym.chat.render import system_prompt
    from toolgym.schema import ToolSpec

    client = openai.OpenAI(base_url=server.url, api_key="EMPTY")
    spec = ToolSpec(name="list_my_notes", description="List the logged-in user's notes.")
    tools = [spec.to_openai()]

    def prompt_tokens(system: str, with_tools: bool) -> int:
        response = client.chat.completions.create(
            model=server.model, max_tokens=1, temperature=0, **({"tools": tools} if with_tools else {}),
            messages=[{"role": "system", "content": system}, {"role": "user", "content": "List my notes."}],
        )
        assert response.usage is not None
        return response.usage.prompt_tokens

    generic = "You are a helpful assistant."
    assert prompt_tokens(generic, True) > prompt_tokens(generic, False) + 20
    compact = system_prompt("You manage notes.", {}, [spec], "compact")
    assert prompt_tokens(compact, True) == prompt_tokens(compact, False)


def test_completions_return_token_ids_and_logprobs_like_vllm(server: PolicyServer) -> None:
    policy = HFPolicy(tiny_model_dir())
    prompt = policy.tokenizer("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")["input_ids"]
    expected = policy.generate_batch([GenerationRequest(sampling=GREEDY, prompt_ids=prompt)])[0]
    body = {"model": server.model, "prompt": [prompt], "max_tokens": 24, "temperature": 0, "logprobs": 1,
            "return_tokens_as_token_ids": True}
    choice = httpx.post(f"{server.url}/completions", json=body, timeout=60).json()["choices"][0]
    assert choice["logprobs"]["tokens"] == [f"token_id:{i}" for i in expected.completion_ids]
    assert choice["token_ids"] == expected.completion_ids
    assert choice["logprobs"]["token_logprobs"] == pytest.approx(expected.logprobs, abs=1e-4)
    bad = httpx.post(f"{server.url}/completions", json={**body, "prompt": "x", "n": 17}, timeout=60)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "n"


def test_concurrent_requests_are_batched_by_the_server(server: PolicyServer) -> None:
    client = openai.AsyncOpenAI(base_url=server.url, api_key="EMPTY")
    before = server.generate_calls()

    async def burst() -> None:
        try:
            await asyncio.gather(*(
                client.completions.create(model=server.model, prompt=[[5, 6, 7, 8 + i]], max_tokens=4, temperature=0)
                for i in range(8)
            ))
        finally:
            await client.close()

    asyncio.run(burst())
    assert server.generate_calls() - before < 8


def test_malformed_tool_call_arguments_become_content_not_a_crash() -> None:
    message = ChatCompletionMessage.model_validate({
        "role": "assistant", "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "add_note", "arguments": '{"title": "x"'}},
            {"id": "b", "type": "function", "function": {"name": "list_my_notes", "arguments": ""}},
            {"id": "c", "type": "function", "function": {"name": "add_note", "arguments": "[1, 2]"}},
        ],
    })
    generation = chat_message_to_generation(message, "tool_calls")
    assert generation.message is not None
    assert [(c.name, c.arguments, c.id) for c in generation.message.tool_calls or []] == [("list_my_notes", {}, "b")]
    assert '{"title": "x"' in (generation.message.content or "") and "[1, 2]" in (generation.message.content or "")
    from toolgym.chat.parse import get_parser

    assert len(get_parser("hermes").parse(generation.message.content or "").errors) == 2


def test_a_server_error_is_a_policy_error_naming_the_status(server: PolicyServer) -> None:
    policy = OpenAIPolicy(server.url, server.model, mode="token", tokenizer_dir=tiny_model_dir(), max_retries=1)
    huge_id = len(policy.tokenizer) + 100  # outside the vocabulary: the server refuses it as the client's error
    with pytest.raises(PolicyError, match=r"HTTP 400: .*outside the vocabulary"):
        asyncio.run(policy.generate(GenerationRequest(sampling=GREEDY, prompt_ids=[5, huge_id])))


def test_an_unreachable_server_is_a_policy_error() -> None:
    from test_rollout_support import free_port

    policy = OpenAIPolicy(f"http://127.0.0.1:{free_port()}/v1", "m", max_retries=1, timeout_s=5)
    with pytest.raises(PolicyError, match="unreachable"):
        asyncio.run(policy.generate(GenerationRequest(sampling=GREEDY, messages=[{"role": "user", "content": "hi"}])))
    _close(policy)


class _KillServerAt(Policy):
    """Forwards to a real OpenAIPolicy; SIGKILLs the server process just before the n-th generation."""

    def __init__(self, inner: OpenAIPolicy, server_pid: int, at_call: int) -> None:
        self.inner, self.server_pid, self.at_call, self.calls = inner, server_pid, at_call, 0
        self.name, self.checkpoint, self.tokenizer = inner.name, inner.checkpoint, inner.tokenizer

    async def generate(self, request: GenerationRequest) -> Generation:
        self.calls += 1
        if self.calls == self.at_call:
            os.kill(self.server_pid, signal.SIGKILL)
        return await self.inner.generate(request)


def test_a_server_dying_mid_run_gives_error_rows_and_the_run_completes(tmp_path: Path) -> None:
    with policy_server(tiny_model_dir()) as doomed:
        inner = OpenAIPolicy(doomed.url, doomed.model, mode="token", tokenizer_dir=tiny_model_dir(), max_retries=1)
        policy = _KillServerAt(inner, doomed.process.pid, at_call=3)
        try:
            rows = _rollout(policy, tmp_path, concurrency=1, samples=2)
        finally:
            _close(inner)
    assert len(rows) == 6 and policy.calls >= 3
    written = [json.loads(line) for line in (tmp_path / RESULTS_FILE).read_text().splitlines()]
    statuses = [r["status"] for r in written]
    first_error = statuses.index("error")
    assert first_error >= 1 and all(s == "error" for s in statuses[first_error:])  # before: fine; after: all down
    for row in written[first_error:]:
        assert "policy error" in row["error"] and "unreachable" in row["error"] and row["reward"] is None
