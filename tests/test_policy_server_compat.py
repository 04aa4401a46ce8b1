"""`toolgym serve policy` as a standard OpenAI server: the real `openai` client against a real subprocess.

The server runs the shipped default model (compact prompt style, 4,096-token context). Each feature a
plain client uses is exercised: streaming (the same reply as without it at temperature 0), `n`,
tool_choice (held, never ignored), calls checked against the offered tools, chat log-probs, content
parts, the developer role, batched completions with top-N log-probs, and the fields the server
refuses rather than ignores. The checking logic itself is also tested directly, on fixed texts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from test_rollout_support import PolicyServer, policy_server
from toolgym.chat.parse import get_parser
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR
from toolgym.policy.base import SamplingParams
from toolgym.policy.server_chat import build_reply, constraint, prompt_messages, strict_problem
from toolgym.policy.server_request import ChatRequest, ToolChoice
from toolgym.schema import Message, ToolSpec

NOTES = ToolSpec(name="list_my_notes", description="List the logged-in user's notes.")
ADD = ToolSpec(name="add_note", description="Add a note.", parameters={
    "type": "object", "properties": {"title": {"type": "string"}, "due": {"type": "string"}}, "required": ["title"]})
TOOLS = [NOTES.to_openai(), ADD.to_openai()]
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You manage notes."}, {"role": "user", "content": "Add a note 'milk'."},
]
CONTEXT = 4096


@pytest.fixture(scope="module")
def server() -> Iterator[PolicyServer]:
    with policy_server(DEFAULT_MODEL_DIR) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: PolicyServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="EMPTY", max_retries=0)


def _chat(client: openai.OpenAI, server: PolicyServer, **fields: Any) -> Any:
    body: dict[str, Any] = {"model": server.model, "messages": MESSAGES, "temperature": 0, "max_tokens": 40, **fields}
    return client.chat.completions.create(**body)


def _errors(choice: Any) -> list[str]:
    return list((choice.model_extra or {}).get("tool_call_errors") or [])


def _calls(message: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]


# -- the model and the prompt ------------------------------------------------------------------------


def test_an_unknown_model_is_404_model_not_found(client: openai.OpenAI, server: PolicyServer) -> None:
    for call in (
        lambda: client.chat.completions.create(model="gpt-4o", messages=MESSAGES),
        lambda: client.completions.create(model="gpt-4o", prompt="hi"),
        lambda: client.models.retrieve("gpt-4o"),
    ):
        with pytest.raises(openai.NotFoundError, match="gpt-4o") as missing:
            call()
        assert missing.value.code == "model_not_found" and missing.value.status_code == 404
    assert client.models.retrieve(server.model).id == server.model
    card = client.models.list().data[0]
    assert (card.model_extra or {})["max_model_len"] == CONTEXT and (card.model_extra or {})["prompt_style"] == "compact"


def test_a_plain_client_gets_the_compact_tool_list_its_model_was_trained_on(
    client: openai.OpenAI, server: PolicyServer,
) -> None:
    """The system prompt a plain client writes holds no tools: the server adds the compact signatures."""
    from transformers import AutoTokenizer

    from toolgym.chat.render import Renderer
    from toolgym.envs import make_env

    tools = make_env("code_host").tool_specs("agent")
    messages = [Message(role="system", content="You help with code."), Message(role="user", content="List repos.")]
    served = _chat(client, server, messages=[m.to_openai() for m in messages], tools=[t.to_openai() for t in tools],
                   max_tokens=1).usage.prompt_tokens
    tokenizer = AutoTokenizer.from_pretrained(str(DEFAULT_MODEL_DIR))
    compact = Renderer(tokenizer, prompt_style="compact")
    expected = compact.prompt_ids(prompt_messages(messages, tools, "compact"), tools)
    full = Renderer(tokenizer, prompt_style="full").prompt_ids(messages, tools)
    assert served == len(expected)
    assert all(t.signature() in (prompt_messages(messages, tools, "compact")[0].content or "") for t in tools)
    assert served * 2 < len(full), (served, len(full))  # the template's JSON schemas are several times longer


def test_prompt_messages_leave_a_compact_system_prompt_alone_and_add_one_where_missing() -> None:
    from toolgym.chat.render import system_prompt

    own = [Message(role="system", content=system_prompt("You manage notes.", {}, [NOTES, ADD], "compact")),
           Message(role="user", content="hi")]
    assert prompt_messages(own, [NOTES, ADD], "compact") == own
    bare = prompt_messages([Message(role="user", content="hi")], [NOTES], "compact")
    assert bare[0].role == "system" and NOTES.signature() in (bare[0].content or "") and bare[1].content == "hi"
    assert prompt_messages(bare[1:], [NOTES], "full") == bare[1:]  # a full-style model reads the template's tools


def test_developer_role_and_text_parts_read_as_system_and_joined_text(
    client: openai.OpenAI, server: PolicyServer,
) -> None:
    plain = _chat(client, server, messages=[{"role": "system", "content": "You manage\nnotes."}, MESSAGES[1]])
    parts = _chat(client, server, messages=[
        {"role": "developer", "content": [{"type": "text", "text": "You manage"}, {"type": "text", "text": "notes."}]},
        {"role": "user", "content": [{"type": "text", "text": "Add a note 'milk'."}]},
    ])
    assert parts.usage.prompt_tokens == plain.usage.prompt_tokens
    assert parts.choices[0].message.content == plain.choices[0].message.content


@pytest.mark.parametrize("part", [
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
    {"type": "text"},
    "just a string",
])
def test_non_text_content_parts_are_400(client: openai.OpenAI, server: PolicyServer, part: Any) -> None:
    with pytest.raises(openai.BadRequestError, match=r"messages\[1\]\.content\[1\]") as bad:
        _chat(client, server, messages=[MESSAGES[0], {"role": "user", "content": [{"type": "text", "text": "hi"}, part]}])
    assert bad.value.param == "messages[1]"


def test_the_function_role_is_400_naming_the_roles_there_are(client: openai.OpenAI, server: PolicyServer) -> None:
    with pytest.raises(openai.BadRequestError, match="developer, user, assistant or tool"):
        _chat(client, server, messages=[{"role": "function", "name": "f", "content": "x"}])


# -- streaming -----------------------------------------------------------------------------------------


def _collect(events: Any) -> dict[int, dict[str, Any]]:
    """Stream chunks accumulated per choice the way a client does: content, reasoning, calls, logprobs."""
    out: dict[int, dict[str, Any]] = {}
    for event in events:
        for choice in event.choices:
            state = out.setdefault(choice.index, {"content": "", "calls": {}, "finish": None, "tokens": [],
                                                  "errors": []})
            delta = choice.delta
            state["content"] += delta.content or ""
            for call in delta.tool_calls or []:
                slot = state["calls"].setdefault(call.index, {"id": None, "name": "", "arguments": ""})
                slot["id"] = call.id or slot["id"]
                slot["name"] += (call.function.name or "") if call.function else ""
                slot["arguments"] += (call.function.arguments or "") if call.function else ""
            if choice.logprobs is not None and choice.logprobs.content:
                state["tokens"] += [(t.token, t.logprob, [a.token for a in t.top_logprobs]) for t in choice.logprobs.content]
            state["finish"] = choice.finish_reason or state["finish"]
            state["errors"] += _errors(choice)
    return out


STREAM_CASES = [
    {},
    {"tools": TOOLS, "tool_choice": "required"},
    {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "list_my_notes"}}},
    {"tools": TOOLS, "n": 2, "temperature": 1, "seed": 11, "logprobs": True, "top_logprobs": 2},
    {"tools": TOOLS, "tool_choice": "none", "logprobs": True},
]


@pytest.mark.parametrize("fields", STREAM_CASES, ids=[json.dumps(c)[:60] for c in STREAM_CASES])
def test_streaming_returns_what_the_same_request_returns_without_it(
    client: openai.OpenAI, server: PolicyServer, fields: dict[str, Any],
) -> None:
    whole = _chat(client, server, **fields)
    streamed = _collect(_chat(client, server, stream=True, **fields))
    assert sorted(streamed) == [c.index for c in whole.choices]
    for choice in whole.choices:
        state = streamed[choice.index]
        assert state["content"] == (choice.message.content or "")
        assert [(c["name"], json.loads(c["arguments"])) for c in state["calls"].values()] == _calls(choice.message)
        assert all(c["id"] and c["id"].startswith("call_") for c in state["calls"].values())
        assert state["finish"] == choice.finish_reason and state["errors"] == _errors(choice)
        if choice.logprobs is not None:
            assert state["tokens"] == [(t.token, t.logprob, [a.token for a in t.top_logprobs])
                                       for t in choice.logprobs.content or []]


def test_a_stream_is_server_sent_events_ending_with_done_and_usage(server: PolicyServer) -> None:
    body = {"model": server.model, "messages": MESSAGES, "tools": TOOLS, "tool_choice": "required", "temperature": 0,
            "max_tokens": 20, "stream": True, "stream_options": {"include_usage": True}}
    with httpx.stream("POST", f"{server.url}/chat/completions", json=body, timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[len("data: "):]) for line in lines[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"} and len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] >= 1
    assert any("tool_calls" in c["choices"][0]["delta"] for c in chunks[:-1])
    assert chunks[-2]["choices"][0]["finish_reason"] in ("tool_calls", "stop", "length")


def test_stream_options_without_stream_is_400(client: openai.OpenAI, server: PolicyServer) -> None:
    with pytest.raises(openai.BadRequestError, match="'stream_options' is only allowed"):
        _chat(client, server, stream_options={"include_usage": True})


# -- n -------------------------------------------------------------------------------------------------


def test_n_gives_n_choices_and_a_seed_reproduces_them(client: openai.OpenAI, server: PolicyServer) -> None:
    fields = {"n": 4, "temperature": 1.0, "seed": 5, "max_tokens": 16}
    first = _chat(client, server, **fields)
    again = _chat(client, server, **fields)
    assert [c.index for c in first.choices] == [0, 1, 2, 3]
    texts = [c.message.content for c in first.choices]
    assert texts == [c.message.content for c in again.choices]
    assert len(set(texts)) > 1  # seed + i per choice: not one sample repeated
    single = _chat(client, server, **{**fields, "n": 1})
    assert single.choices[0].message.content == texts[0]
    assert first.usage.prompt_tokens == single.usage.prompt_tokens
    assert first.usage.completion_tokens > single.usage.completion_tokens


# -- tool_choice and checked calls ---------------------------------------------------------------------


def test_tool_choice_none_never_returns_a_call(client: openai.OpenAI, server: PolicyServer) -> None:
    auto = _chat(client, server, tools=TOOLS)
    assert "<tool_call>" in (auto.choices[0].message.content or "") or auto.choices[0].message.tool_calls
    for reply in (_chat(client, server, tools=TOOLS, tool_choice="none"),
                  _chat(client, server, tools=TOOLS, tool_choice="none", n=6, temperature=1.0, seed=1)):
        for choice in reply.choices:
            assert not choice.message.tool_calls and "<tool_call>" not in (choice.message.content or "")
            assert choice.finish_reason in ("stop", "length")


def test_required_and_named_tool_choice_give_one_call_to_an_allowed_tool_or_say_why_not(
    client: openai.OpenAI, server: PolicyServer,
) -> None:
    named = _chat(client, server, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "list_my_notes"}})
    assert named.choices[0].finish_reason == "tool_calls" and _calls(named.choices[0].message) == [("list_my_notes", {})]
    required = _chat(client, server, tools=TOOLS, tool_choice="required")
    assert [name for name, _ in _calls(required.choices[0].message)] == ["list_my_notes"]
    choices = [
        ("required", {"list_my_notes", "add_note"}),
        ({"type": "function", "function": {"name": "add_note"}}, {"add_note"}),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
            {"type": "function", "function": {"name": "add_note"}}]}}, {"add_note"}),
    ]
    for tool_choice, allowed in choices:
        # Room for the grammar's longest strings (128 characters each): a runaway title still ends in a call.
        reply = _chat(client, server, tools=TOOLS, tool_choice=tool_choice, n=4, temperature=1.0, seed=3,
                      max_tokens=400)
        for choice in reply.choices:  # the grammar holds name and arguments: every choice is a valid call
            calls = _calls(choice.message)
            assert len(calls) == 1 and calls[0][0] in allowed and choice.finish_reason == "tool_calls", choice
            assert "title" in calls[0][1] or calls[0][0] == "list_my_notes"
    cut = _chat(client, server, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "add_note"}},
                max_tokens=3)
    assert cut.choices[0].finish_reason == "length" and not cut.choices[0].message.tool_calls
    assert any("before it was complete (max_tokens)" in e for e in _errors(cut.choices[0])), _errors(cut.choices[0])


@pytest.mark.parametrize(("tool_choice", "fields", "match"), [
    ({"type": "function", "function": {"name": "delete_everything"}}, {"tools": TOOLS}, "does not offer"),
    ("required", {}, "needs 'tools'"),
    ("sometimes", {"tools": TOOLS}, "'tool_choice' must be"),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}, {"tools": TOOLS}, "allowed_tools"),
])
def test_a_tool_choice_that_cannot_be_kept_is_400(
    client: openai.OpenAI, server: PolicyServer, tool_choice: Any, fields: dict[str, Any], match: str,
) -> None:
    with pytest.raises(openai.BadRequestError, match=match) as bad:
        _chat(client, server, tool_choice=tool_choice, **fields)
    assert bad.value.param == "tool_choice"


def test_a_call_to_a_tool_that_was_not_offered_stays_text_with_the_reason(
    client: openai.OpenAI, server: PolicyServer,
) -> None:
    reply = _chat(client, server, tools=TOOLS)  # this model, greedy, calls a tool from its pretraining corpus
    choice = reply.choices[0]
    offered = {"list_my_notes", "add_note"}
    assert all(name in offered for name, _ in _calls(choice.message))
    for error in _errors(choice):
        if "was offered" in error:
            assert error.split("(")[1].split(")")[0] in (choice.message.content or "")


def _request(tools: list[ToolSpec], choice: ToolChoice = ToolChoice(), *, parallel: bool = True,
             strict: frozenset[str] = frozenset()) -> ChatRequest:
    return ChatRequest(messages=[Message(role="user", content="hi")], tools=tools, strict_tools=strict,
                       tool_choice=choice, parallel_tool_calls=parallel, sampling=SamplingParams())


def _call(name: str, arguments: str = "{}") -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


def test_calls_are_checked_against_the_offered_tools_and_tool_choice() -> None:
    parser = get_parser("hermes")
    text = "Sure. " + _call("list_my_notes") + _call("drop_tables") + _call("add_note", '{"title": "milk"}')
    reply = build_reply(text, "stop", parser, _request([NOTES, ADD]))
    assert [c.name for c in reply.tool_calls] == ["list_my_notes", "add_note"] and reply.finish_reason == "tool_calls"
    assert reply.content is not None and reply.content.startswith("Sure.") and "drop_tables" in reply.content
    assert reply.errors == ["tool call 2 (drop_tables): no tool named 'drop_tables' was offered"]
    only_add = build_reply(text, "stop", parser, _request([NOTES, ADD], ToolChoice("auto", frozenset({"add_note"}))))
    assert [c.name for c in only_add.tool_calls] == ["add_note"] and "tool_choice allows only add_note" in only_add.errors[0]
    single = build_reply(text, "stop", parser, _request([NOTES, ADD], parallel=False))
    assert [c.name for c in single.tool_calls] == ["list_my_notes"] and "parallel_tool_calls is false" in single.errors[-1]
    nothing = build_reply("No idea.", "length", parser, _request([NOTES], ToolChoice("required")))
    assert nothing.tool_calls == [] and nothing.finish_reason == "length" and nothing.content == "No idea."
    assert nothing.errors == ["tool_choice required a call to one of the offered tools, and the model's turn ended "
                              "before it was complete (max_tokens) without a valid one"]
    only_calls = build_reply(_call("list_my_notes"), "stop", parser, _request([NOTES]))
    assert only_calls.content is None  # OpenAI's shape: no text beside the calls is null content


def test_strict_tools_get_their_arguments_checked() -> None:
    parser = get_parser("hermes")
    request = _request([ADD], strict=frozenset({"add_note"}))
    good = build_reply(_call("add_note", '{"title": "milk"}'), "stop", parser, request)
    assert [c.arguments for c in good.tool_calls] == [{"title": "milk"}] and not good.errors
    for arguments, problem in [('{"due": "x"}', "missing required argument(s) 'title'"),
                               ('{"title": 3}', "'title' must be of type string"),
                               ('{"title": "a", "color": "red"}', "unknown argument(s) 'color'")]:
        bad = build_reply(_call("add_note", arguments), "stop", parser, request)
        assert not bad.tool_calls and problem in bad.errors[0] and bad.finish_reason == "stop"
    assert build_reply(_call("add_note", '{"due": "x"}'), "stop", parser, _request([ADD])).tool_calls  # not strict
    enum = {"properties": {"kind": {"type": "string", "enum": ["a", "b"]}, "n": {"type": ["integer", "null"]}}}
    assert strict_problem({"kind": "c"}, enum) == "argument 'kind' must be one of ['a', 'b']"
    assert strict_problem({"kind": "a", "n": None}, enum) is None and strict_problem({"n": True}, enum) is not None


def test_constraints_for_each_tool_choice() -> None:
    parser = get_parser("hermes")
    none = constraint(ToolChoice("none"), True, parser, [NOTES])
    assert none.stops == ("<tool_call>",) and none.grammar is None
    named = constraint(ToolChoice("required", frozenset({"add_note"}), "add_note"), True, parser, [NOTES, ADD])
    assert named.prefill == '<tool_call>\n{"name": "add_note", "arguments":' and named.stops == ("</tool_call>",)
    assert named.grammar is not None and '"title"' in named.grammar and "list_my_notes" not in named.grammar
    required = constraint(ToolChoice("required"), True, parser, [NOTES, ADD])
    assert required.prefill == '<tool_call>\n{"name": "' and required.grammar is not None
    assert 'list_my_notes\\", \\"arguments\\": ' in required.grammar and "add_note" in required.grammar
    only = constraint(ToolChoice("required", frozenset({"add_note"})), True, parser, [NOTES, ADD])
    assert only.grammar is not None and "list_my_notes" not in only.grammar
    for auto in (constraint(ToolChoice(), True, parser, [NOTES]), constraint(ToolChoice(), False, parser, [NOTES])):
        assert auto.grammar is None and auto.prefill == ""
    assert constraint(ToolChoice(), False, parser, [NOTES]).stops == ("</tool_call>",)


# -- log-probs -----------------------------------------------------------------------------------------


def test_chat_logprobs_have_openais_shape_and_the_sampled_token_on_top_when_greedy(
    client: openai.OpenAI, server: PolicyServer,
) -> None:
    reply = _chat(client, server, logprobs=True, top_logprobs=3)
    choice = reply.choices[0]
    tokens = choice.logprobs.content
    ends_turn = choice.finish_reason == "stop"
    assert len(tokens) == reply.usage.completion_tokens - (1 if ends_turn else 0)  # not the turn's end token
    assert "".join(t.token for t in tokens).strip() == choice.message.content
    for token in tokens:
        assert token.bytes == list(token.token.encode()) and token.logprob <= 0
        assert len(token.top_logprobs) == 3
        values = [a.logprob for a in token.top_logprobs]
        assert values == sorted(values, reverse=True)
        assert token.top_logprobs[0].token == token.token and token.top_logprobs[0].logprob == token.logprob
    plain = _chat(client, server, logprobs=True)
    assert all(t.top_logprobs == [] for t in plain.choices[0].logprobs.content)
    assert _chat(client, server).choices[0].logprobs is None
    with pytest.raises(openai.BadRequestError, match="'top_logprobs' needs 'logprobs'"):
        _chat(client, server, top_logprobs=2)


def test_top_logprobs_are_under_the_distribution_the_token_was_drawn_from(
    client: openai.OpenAI, server: PolicyServer,
) -> None:
    """With top_k=5 only five tokens have any probability: their top-5 log-probs sum to one."""
    reply = _chat(client, server, temperature=0.7, seed=2, logprobs=True, top_logprobs=6, extra_body={"top_k": 5})
    for token in reply.choices[0].logprobs.content:
        kept = [a for a in token.top_logprobs if a.logprob > -9999]
        assert 1 <= len(kept) <= 5 and token.top_logprobs[5].logprob == -9999.0  # the 6th is outside top_k
        assert math.fsum(math.exp(a.logprob) for a in kept) == pytest.approx(1.0, abs=1e-3)
        assert token.token in [a.token for a in kept]


def test_batched_completions_with_top_n_logprobs(server: PolicyServer) -> None:
    url = f"{server.url}/completions"
    body = {"model": server.model, "prompt": ["Hello there", [5, 6, 7, 8]], "max_tokens": 5, "temperature": 0,
            "logprobs": 3, "n": 2}
    reply = httpx.post(url, json=body, timeout=60).json()
    choices = reply["choices"]
    assert [c["index"] for c in choices] == [0, 1, 2, 3]
    assert choices[2]["prompt_token_ids"] == [5, 6, 7, 8] and choices[0]["prompt_token_ids"] != [5, 6, 7, 8]
    alone = httpx.post(url, json={**body, "prompt": [[5, 6, 7, 8]], "n": 1}, timeout=60).json()["choices"][0]
    assert choices[2]["token_ids"] == choices[3]["token_ids"] == alone["token_ids"]
    assert reply["usage"]["prompt_tokens"] == len(choices[0]["prompt_token_ids"]) + 4
    for choice in choices:
        logprobs = choice["logprobs"]
        assert len(logprobs["tokens"]) == len(logprobs["top_logprobs"]) == len(choice["token_ids"])
        for token, value, top in zip(logprobs["tokens"], logprobs["token_logprobs"], logprobs["top_logprobs"],
                                     strict=True):
            assert len(top) == 3 and top[token] == value  # greedy: the sampled token is the most likely
            assert max(top.values()) == value
        assert logprobs["text_offset"][0] == 0
    as_ids = httpx.post(url, json={**body, "return_tokens_as_token_ids": True}, timeout=60).json()["choices"][0]
    assert all(key.startswith("token_id:") for top in as_ids["logprobs"]["top_logprobs"] for key in top)


def test_a_batch_names_the_prompt_that_does_not_fit(server: PolicyServer) -> None:
    body = {"model": server.model, "prompt": [[5, 6], [5] * (CONTEXT + 10)], "max_tokens": 1}
    error = httpx.post(f"{server.url}/completions", json=body, timeout=60).json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert error["message"].startswith(f"prompt 1: the prompt is {CONTEXT + 10} tokens, 11 too many")


def test_completions_stream_the_same_text(server: PolicyServer) -> None:
    body = {"model": server.model, "prompt": ["Hello there", "Bye"], "max_tokens": 6, "temperature": 0}
    whole = httpx.post(f"{server.url}/completions", json=body, timeout=60).json()["choices"]
    with httpx.stream("POST", f"{server.url}/completions", json={**body, "stream": True}, timeout=60) as response:
        lines = [line for line in response.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    texts: dict[int, str] = {}
    finish: dict[int, str] = {}
    for line in lines[:-1]:
        for choice in json.loads(line[len("data: "):])["choices"]:
            texts[choice["index"]] = texts.get(choice["index"], "") + choice["text"]
            finish[choice["index"]] = choice["finish_reason"] or finish.get(choice["index"], "")
    assert texts == {c["index"]: c["text"] for c in whole}
    assert finish == {c["index"]: c["finish_reason"] for c in whole}


# -- what is refused, and what is accepted without effect ----------------------------------------------

REFUSED = [
    ("response_format", {"type": "json_object"}), ("response_format", {"type": "json_schema", "json_schema": {}}),
    ("response_format", "json"),
    ("logit_bias", {"5": 3}), ("frequency_penalty", 0.5), ("presence_penalty", 1),
    ("audio", {"voice": "alloy", "format": "wav"}), ("modalities", ["text", "audio"]),
    ("functions", [{"name": "f"}]), ("function_call", "auto"), ("store", True), ("reasoning_effort", "low"),
    ("web_search_options", {}), ("parallel_tool_calls", "no"), ("min_p", 0.1), ("n", 17),
]


@pytest.mark.parametrize(("param", "value"), REFUSED, ids=[f"{p}={v!r}"[:40] for p, v in REFUSED])
def test_a_field_the_server_cannot_honour_is_a_400_naming_it(
    client: openai.OpenAI, server: PolicyServer, param: str, value: Any,
) -> None:
    with pytest.raises(openai.BadRequestError) as bad:
        _chat(client, server, extra_body={param: value})
    assert bad.value.param == param and param in bad.value.message


def test_fields_that_change_nothing_are_accepted(client: openai.OpenAI, server: PolicyServer) -> None:
    reply = _chat(client, server, user="u1", metadata={"run": "a"}, service_tier="auto", store=False,
                  prompt_cache_key="k", safety_identifier="s", response_format={"type": "text"}, modalities=["text"],
                  frequency_penalty=0, presence_penalty=0, logit_bias={}, parallel_tool_calls=True)
    assert reply.choices[0].message.content == _chat(client, server).choices[0].message.content


def test_a_server_with_another_prompt_style_uses_it() -> None:
    from toolgym.policy.server import load_served_model

    assert load_served_model(str(DEFAULT_MODEL_DIR)).renderer.prompt_style == "compact"
    assert load_served_model(str(DEFAULT_MODEL_DIR), prompt_style="full").renderer.prompt_style == "full"


def test_an_unknown_prompt_style_flag_is_refused() -> None:
    import subprocess
    import sys

    argv = [sys.executable, "-m", "toolgym.cli.main", "serve", "policy", str(DEFAULT_MODEL_DIR), "--prompt-style", "tiny"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--prompt-style 'tiny': use one of full, compact" in result.stderr
