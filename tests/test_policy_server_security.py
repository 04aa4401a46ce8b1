"""`toolgym serve policy` refuses what a browser page or a stranger could send, as the client's error.

Real servers (subprocesses on 127.0.0.1 with the tiny model) and the real `openai` client: bodies
past the limit are refused before they are read, bad Host/Origin headers and missing keys never
reach the model, and every malformed field is a 400 naming it in OpenAI's error object.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from starlette.testclient import TestClient

from test_guard_support import chunked, raw_post, rss_bytes
from test_rollout_support import PolicyServer, policy_server, tiny_model_dir
from toolgym.http_guard import API_KEY_ENV, DEFAULT_MAX_BODY_BYTES, allowed_hosts_for, is_loopback

KEY = "sk-toolgym-test-key"
CONTEXT = 4096  # the tiny model's max_position_embeddings
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server() -> Iterator[PolicyServer]:
    with policy_server(tiny_model_dir()) as running:
        yield running


@pytest.fixture(scope="module")
def vocab_size() -> int:
    from transformers import AutoConfig

    return int(AutoConfig.from_pretrained(str(tiny_model_dir())).vocab_size)


def _client(server: PolicyServer, key: str = "EMPTY") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key=key, max_retries=0)


def _complete(server: PolicyServer, **fields: Any) -> httpx.Response:
    body = {"model": server.model, "prompt": [[5, 6, 7]], "max_tokens": 2, "temperature": 0, **fields}
    return httpx.post(f"{server.url}/completions", json=body, timeout=60)


def _refusal(response: httpx.Response, status: int = 400) -> dict[str, Any]:
    """The OpenAI error object of a refused request (all four fields present)."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


# -- the body ---------------------------------------------------------------------------------------


def test_oversized_bodies_are_refused_before_they_are_read(server: PolicyServer) -> None:
    url = f"{server.url}/completions"
    before = rss_bytes(server.process.pid)
    # A declared 10 MB body that never comes: refused on the header alone.
    declared = raw_post(url, {**JSON, "Content-Length": str(10 * 1024 * 1024)})
    assert declared.status == 413
    assert declared.json()["error"]["code"] == "request_too_large"
    assert f"limit is {DEFAULT_MAX_BODY_BYTES} bytes" in declared.json()["error"]["message"]
    # No length at all (chunked): counted as it arrives, refused one byte past the limit.
    for _ in range(3):
        streamed = raw_post(url, {**JSON, "Transfer-Encoding": "chunked"}, chunked(DEFAULT_MAX_BODY_BYTES + 1))
        assert streamed.status == 413 and streamed.json()["error"]["code"] == "request_too_large"
    # Just under the limit, valid JSON: a prompt far past the context is refused before any model work.
    ids = ",".join(["5"] * ((DEFAULT_MAX_BODY_BYTES - 200) // 2))
    body = f'{{"prompt": [{ids}], "max_tokens": 1}}'.encode()  # no "model": the served one
    assert len(body) <= DEFAULT_MAX_BODY_BYTES
    big = httpx.post(url, content=body, headers=JSON, timeout=120)
    assert _refusal(big)["code"] == "context_length_exceeded"
    grown = rss_bytes(server.process.pid) - before
    assert grown < 150 * 1024 * 1024, f"the server grew by {grown / 2**20:.0f} MiB"
    assert httpx.get(f"{server.url}/models", timeout=10).status_code == 200


def test_bodies_that_are_not_a_json_object_are_400(server: PolicyServer) -> None:
    url = f"{server.url}/chat/completions"
    deep = httpx.post(url, content=b"[" * 100_000 + b"]" * 100_000, headers=JSON, timeout=60)
    assert "nests deeper" in _refusal(deep)["message"]
    nested: Any = "hi"
    for _ in range(200):  # shallow enough for the parser, too deep for the server
        nested = {"content": nested}
    deep_field = httpx.post(url, json={"messages": [{"role": "user", "content": nested}]}, timeout=60)
    assert _refusal(deep_field)["code"] == "invalid_json"
    assert _refusal(httpx.post(url, content=b"{not json", headers=JSON, timeout=60))["code"] == "invalid_json"
    assert "object" in _refusal(httpx.post(url, json=[1, 2], timeout=60))["message"]
    nan = httpx.post(url, content=b'{"messages": [], "temperature": NaN}', headers=JSON, timeout=60)
    assert "NaN" in _refusal(nan)["message"]
    latin = httpx.post(url, content=b'{"messages": "\xff"}', headers=JSON, timeout=60)
    assert _refusal(latin)["code"] == "invalid_json"


# -- who may ask ------------------------------------------------------------------------------------


def test_foreign_host_and_origin_headers_are_refused(server: PolicyServer) -> None:
    models = f"{server.url}/models"
    rebound = httpx.get(models, headers={"Host": f"attacker.example:{server.port}"}, timeout=10)
    assert _refusal(rebound, 421)["code"] == "invalid_host"
    cross_site = httpx.post(
        f"{server.url}/completions", content=json.dumps({"prompt": [[5]], "max_tokens": 1}),
        headers={"Origin": "http://attacker.example", "Content-Type": "text/plain"}, timeout=10,
    )
    assert _refusal(cross_site, 403)["code"] == "invalid_origin"
    assert _refusal(httpx.get(models, headers={"Origin": "null"}, timeout=10), 403)["code"] == "invalid_origin"
    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}", "LOCALHOST"):
        assert httpx.get(models, headers={"Host": host}, timeout=10).status_code == 200
    same_site = httpx.get(models, headers={"Origin": f"http://localhost:{server.port}"}, timeout=10)
    assert same_site.status_code == 200


def _check_key(server: PolicyServer, key: str) -> None:
    models = f"{server.url}/models"
    missing = httpx.get(models, timeout=10)
    assert _refusal(missing, 401)["code"] == "invalid_api_key"
    assert missing.headers["www-authenticate"] == "Bearer"
    with pytest.raises(openai.AuthenticationError, match="not this server's key"):
        _client(server, "sk-wrong").models.list()
    with pytest.raises(openai.AuthenticationError):
        _client(server, key + "x").completions.create(model=server.model, prompt=[[5, 6]], max_tokens=1)
    assert [m.id for m in _client(server, key).models.list().data] == [server.model]
    reply = _client(server, key).chat.completions.create(
        model=server.model, messages=[{"role": "user", "content": "hi"}], max_tokens=2, temperature=0,
    )
    assert reply.usage is not None and reply.usage.completion_tokens >= 1
    assert httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=10).status_code == 200  # no key needed


@contextlib.contextmanager
def _keyed_server(*extra: str) -> Iterator[PolicyServer]:
    """A server that needs a key: ready once its open /health answers (/v1/models wants the key)."""
    server = PolicyServer(tiny_model_dir(), *extra)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.process.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=2).status_code == 200:
                    break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"server did not start: {server.output()}")
        yield server
    finally:
        server.close()


def test_api_key_from_the_flag_is_required() -> None:
    with _keyed_server("--api-key", KEY) as keyed:
        _check_key(keyed, KEY)


def test_api_key_from_the_environment_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_KEY_ENV, KEY)
    with _keyed_server() as keyed:
        _check_key(keyed, KEY)


# -- what is asked ----------------------------------------------------------------------------------

BAD_SAMPLING = [
    ("temperature", -1), ("temperature", 2.5), ("temperature", "hot"), ("temperature", True),
    ("top_p", 0), ("top_p", 5), ("top_p", -0.1),
    ("max_tokens", -3), ("max_tokens", 0), ("max_tokens", 10**12), ("max_tokens", CONTEXT + 1), ("max_tokens", 1.5),
    ("n", 0), ("n", 17), ("n", "1"),
    ("seed", "x"), ("seed", 2**70), ("seed", 1.5),
    ("stop", 5), ("stop", [""]), ("stop", ["a", 3]), ("stop", ["x"] * 33),
    ("top_k", -2), ("top_k", "k"),
    ("logprobs", -1), ("logprobs", 21),
    ("stream", "yes"), ("stream_options", {"include_usage": True}),
    ("frequency_penalty", 0.5), ("presence_penalty", -1), ("logit_bias", {"5": 10}), ("best_of", 3),
    ("suffix", "end"), ("echo", True), ("min_p", 0.1),
]


@pytest.mark.parametrize(("param", "value"), BAD_SAMPLING, ids=[f"{p}={v!r}"[:40] for p, v in BAD_SAMPLING])
def test_each_bad_sampling_value_is_a_400_naming_it(server: PolicyServer, param: str, value: Any) -> None:
    error = _refusal(_complete(server, **{param: value}))
    assert error["param"] == param and error["type"] == "invalid_request_error"
    assert param in error["message"]


def test_the_openai_client_sees_bad_request_errors_with_the_message(server: PolicyServer) -> None:
    client = _client(server)
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.BadRequestError, match=r"'temperature' must be in \[0, 2\]; got -1") as bad:
        client.chat.completions.create(model=server.model, messages=messages, temperature=-1)  # type: ignore[arg-type]
    assert bad.value.param == "temperature" and bad.value.status_code == 400
    with pytest.raises(openai.BadRequestError, match="'max_completion_tokens' must be between 1 and 4096") as bad:
        client.chat.completions.create(model=server.model, messages=messages, max_completion_tokens=0)  # type: ignore[arg-type]
    assert bad.value.param == "max_completion_tokens"
    with pytest.raises(openai.BadRequestError, match=r"'top_p' must be in \(0, 1\]"):
        client.completions.create(model=server.model, prompt=[[5, 6]], top_p=5)


def test_edge_values_that_are_allowed_still_run(server: PolicyServer) -> None:
    allowed = _complete(server, prompt=[[5] * (CONTEXT - 3)], temperature=0, top_p=1, max_tokens=CONTEXT,
                        seed=-(2**63), stop=["x"], top_k=-1, n=1, logprobs=0, max_completion_tokens=None)
    assert allowed.status_code == 200, allowed.text
    assert len(allowed.json()["choices"][0]["token_ids"]) <= 3  # max_tokens trimmed to what the prompt leaves
    sampled = _complete(server, temperature=2, top_p=1e-9, top_k=10**6, max_tokens=3.0, seed=2**64 - 1)
    assert sampled.status_code == 200, sampled.text


def test_token_ids_outside_the_vocabulary_are_400(server: PolicyServer, vocab_size: int) -> None:
    error = _refusal(_complete(server, prompt=[[5, vocab_size + 100, 6]]))
    assert error["param"] == "prompt"
    assert f"token id {vocab_size + 100} (position 1) is outside the vocabulary (ids 0 to {vocab_size - 1})" in (
        error["message"])
    assert "outside the vocabulary" in _refusal(_complete(server, prompt=[-1]))["message"]
    assert _refusal(_complete(server, prompt=[[5, True]]))["param"] == "prompt"
    assert _refusal(_complete(server, prompt=[[5.0]]))["param"] == "prompt"
    assert "empty" in _refusal(_complete(server, prompt=[]))["message"]
    with pytest.raises(openai.BadRequestError, match="outside the vocabulary"):
        _client(server).completions.create(model=server.model, prompt=[[5, vocab_size]], max_tokens=1)


def test_prompts_longer_than_the_context_are_400_saying_by_how_much(server: PolicyServer) -> None:
    exactly = _refusal(_complete(server, prompt=[[5] * CONTEXT]))
    assert exactly["code"] == "context_length_exceeded" and exactly["param"] == "prompt"
    assert f"the prompt is {CONTEXT} tokens, 1 too many: the model's context is {CONTEXT} tokens" in exactly["message"]
    assert "905 too many" in _refusal(_complete(server, prompt=[[5] * 5000]))["message"]
    assert _complete(server, prompt=[[5] * (CONTEXT - 1)], max_tokens=1).status_code == 200
    with pytest.raises(openai.BadRequestError, match=r"the prompt is \d+ tokens, \d+ too many") as bad:
        _client(server).chat.completions.create(
            model=server.model, messages=[{"role": "user", "content": "notes " * 6000}], max_tokens=1,
        )
    assert bad.value.param == "messages" and bad.value.code == "context_length_exceeded"


BAD_CHAT = [
    ({"messages": []}, "messages"),
    ({"messages": "hi"}, "messages"),
    ({"messages": [1]}, "messages[0]"),
    ({"messages": [{"role": "robot", "content": "hi"}]}, "messages[0]"),
    ({"messages": [{"content": "hi"}]}, "messages[0]"),
    ({"messages": [{"role": "user", "content": {"a": 1}}]}, "messages[0]"),
    ({"messages": [{"role": "assistant", "tool_calls": [1]}]}, "messages[0]"),
    ({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1"}}]}]},
     "messages[0]"),
    ({"tools": "list_my_notes"}, "tools"),
    ({"tools": [1]}, "tools[0]"),
    ({"tools": [{"type": "function", "function": "f"}]}, "tools[0]"),
    ({"tools": [{"type": "function", "function": {"description": "no name"}}]}, "tools[0]"),
    ({"tools": [{"type": "retrieval"}]}, "tools[0]"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"properties": [1]}}}]}, "tools[0]"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": 1}}}}]},
     "tools[0]"),
    ({"tools": [{"type": "function", "function": {"name": 3}}]}, "tools[0]"),
]


@pytest.mark.parametrize(("fields", "param"), BAD_CHAT, ids=[json.dumps(f)[:50] for f, _ in BAD_CHAT])
def test_malformed_messages_and_tools_are_400_naming_where(
    server: PolicyServer, fields: dict[str, Any], param: str
) -> None:
    body = {"model": server.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1, **fields}
    error = _refusal(httpx.post(f"{server.url}/chat/completions", json=body, timeout=60))
    assert error["param"] == param and param in error["message"]


LONE = "\ud800"  # a lone surrogate: json.dumps writes it as the escape `\ud800`, valid JSON but not text
CHAT, COMPLETIONS = "chat/completions", "completions"
# (path, fields replacing the base body's, the field the refusal names).
LONE_SURROGATES: list[tuple[str, dict[str, Any], str]] = [
    (CHAT, {"messages": [{"role": "user", "content": LONE}]}, "messages[0].content"),
    (CHAT, {"messages": [{"role": "user", "content": [{"type": "text", "text": "a" + LONE}]}]},
     "messages[0].content[0].text"),
    (CHAT, {"messages": [{"role": "user", "name": LONE, "content": "hi"}]}, "messages[0].name"),
    (CHAT, {"messages": [{"role": "assistant", "content": "hi", "reasoning_content": LONE}]},
     "messages[0].reasoning_content"),
    (CHAT, {"tools": [{"type": "function", "function": {"name": "f", "description": LONE}}]},
     "tools[0].function.description"),
    (CHAT, {"tools": [{"type": "function", "function": {"name": "f" + LONE}}]}, "tools[0].function.name"),
    (CHAT, {"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string", "enum": ["x" + LONE]}}}}}]},
     "tools[0].function.parameters.properties.a.enum[0]"),
    (CHAT, {"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {LONE: {"type": "string"}}}}}]}, "tools[0].function.parameters.properties"),
    (CHAT, {"stop": ["ok", LONE]}, "stop[1]"),
    (COMPLETIONS, {"prompt": "notes " + LONE}, "prompt"),
    (COMPLETIONS, {"prompt": ["fine", LONE]}, "prompt[1]"),
]


@pytest.mark.parametrize(("path", "fields", "param"), LONE_SURROGATES, ids=[p for _, _, p in LONE_SURROGATES])
def test_a_lone_surrogate_in_any_text_field_is_a_400_naming_it(
    server: PolicyServer, path: str, fields: dict[str, Any], param: str
) -> None:
    base: dict[str, Any] = {"model": server.model, "max_tokens": 1}
    base.update({"messages": [{"role": "user", "content": "hi"}]} if path == CHAT else {"prompt": "hi"})
    body = json.dumps({**base, **fields}).encode()
    assert b"\\ud800" in body
    error = _refusal(httpx.post(f"{server.url}/{path}", content=body, headers=JSON, timeout=60))
    assert error["param"] == param
    assert error["message"].startswith(f"{param}: ") and "lone surrogate escape" in error["message"]


def test_a_lone_surrogate_inside_tool_call_arguments_is_a_400_naming_the_argument(server: PolicyServer) -> None:
    """The arguments are JSON text inside the body: their own escape decodes to the surrogate."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"city": "\\ud800"}'}}
    body = {"model": server.model, "max_tokens": 1,
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [call]}]}
    error = _refusal(httpx.post(f"{server.url}/{CHAT}", json=body, timeout=60))
    assert error["param"] == "messages[1].tool_calls[0].function.arguments"
    assert "field 'city': a lone surrogate" in error["message"]


def test_unknown_paths_and_methods_get_openai_errors(server: PolicyServer) -> None:
    assert _refusal(httpx.get(f"{server.url}/nothing", timeout=10), 404)["message"] == "Not Found"
    assert _refusal(httpx.get(f"{server.url}/completions", timeout=10), 405)["type"] == "invalid_request_error"


def test_a_server_fault_is_a_500_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolgym.policy.server import create_app, load_served_model

    served = load_served_model(str(tiny_model_dir()))

    def broken(text: str) -> Any:
        raise ZeroDivisionError("secret internal state /etc/toolgym")

    monkeypatch.setattr(served.parser, "parse", broken)
    with TestClient(create_app(served), base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        reply = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}],
                                                          "max_tokens": 1})
    error = _refusal(reply, 500)
    assert error == {"message": "internal server error", "type": "server_error", "param": None,
                     "code": "internal_error"}
    assert "Traceback" not in reply.text and "secret" not in reply.text and "ZeroDivision" not in reply.text


def test_an_empty_api_key_flag_is_refused_not_read_as_no_key() -> None:
    argv = [sys.executable, "-m", "toolgym.cli.main", "serve", "policy", str(tiny_model_dir()), "--api-key", ""]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--api-key is empty" in result.stderr


def test_which_host_names_a_server_answers() -> None:
    local = allowed_hosts_for("127.0.0.1")
    assert local is not None and {"127.0.0.1", "localhost", "::1"} <= local
    assert allowed_hosts_for("::1") == local and is_loopback("[::1]") and is_loopback("127.0.0.2")
    assert allowed_hosts_for("127.0.0.1", ["Models.LAN:8000"]) == local | {"models.lan"}
    assert allowed_hosts_for("0.0.0.0") is None  # any name: the key is what keeps strangers out there
    assert allowed_hosts_for("0.0.0.0", ["models.lan:8000", "[fd00::5]:80"]) == {"models.lan", "fd00::5"}
