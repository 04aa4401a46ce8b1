"""Grammar-constrained decoding: tool-call grammars (llguidance), the sampler's mask, and HFPolicy rows held to one.

The grammars are built for the booking app's twelve tools and run against the default model's own
tokenizer; the sampler is driven by arbitrary logits, so what it writes is valid because of the mask,
not because a model happened to write it.
"""

from __future__ import annotations

import asyncio
import json
from functools import cache

import jsonschema
import pytest
import torch

from toolgym.envs import make_env
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR
from toolgym.policy.base import GenerationRequest, PolicyError, SamplingParams
from toolgym.policy.call_grammar import MAX_SAFE_INTEGER, MAX_STRING_CHARS, bounded, call_grammar
from toolgym.policy.grammar import GrammarTokenizer, replay_allowed
from toolgym.policy.hf import HFPolicy
from toolgym.policy.openai_policy import OpenAIPolicy
from toolgym.policy.sampling import RowSampler, RowState, RowStopper
from toolgym.schema import ToolSpec

OPEN, CLOSE = "<tool_call>", "</tool_call>"
VOCAB = 4000


@cache
def _policy() -> HFPolicy:
    return HFPolicy(DEFAULT_MODEL_DIR)


@cache
def _tools() -> tuple[ToolSpec, ...]:
    return tuple(make_env("booking").tool_specs())


def _tokenizer() -> GrammarTokenizer:
    return _policy().grammar_tokenizer


def _named(tool: ToolSpec) -> str:
    return call_grammar([tool], _tokenizer().terminal(CLOSE), named=True)


def _accepts(grammar: str, text: str) -> bool:
    """Whether `text` (tokenized the usual way) is a complete sentence of `grammar`."""
    matcher = _tokenizer().matcher(grammar)
    tokens = _policy().tokenizer.encode(text, add_special_tokens=False)
    return matcher.validate_tokens(tokens) == len(tokens) and matcher.consume_tokens(tokens) and matcher.is_accepting()


def test_bounded_adds_bounds_only_where_the_schema_gives_none() -> None:
    schema = {"type": "object", "properties": {
        "free": {"type": "string"}, "short": {"type": "string", "maxLength": 5},
        "kind": {"type": "string", "enum": ["a", "b"]}, "day": {"type": "string", "format": "date"},
        "count": {"type": "integer"}, "rating": {"type": "integer", "minimum": 1, "maximum": 5},
        "maybe": {"type": ["string", "null"]}, "tags": {"type": "array", "items": {"type": "string"}},
        "open": {"type": "object", "additionalProperties": True},
        "not_this": {"not": {"type": "string"}},
    }}
    out = bounded(schema)
    props = out["properties"]
    assert out["additionalProperties"] is False and props["open"]["additionalProperties"] is True
    assert props["free"]["maxLength"] == MAX_STRING_CHARS and props["short"]["maxLength"] == 5
    assert "maxLength" not in props["kind"] and "maxLength" not in props["day"]
    assert (props["count"]["minimum"], props["count"]["maximum"]) == (-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    assert (props["rating"]["minimum"], props["rating"]["maximum"]) == (1, 5)
    assert props["maybe"]["maxLength"] == MAX_STRING_CHARS and props["tags"]["items"]["maxLength"] == MAX_STRING_CHARS
    assert props["not_this"] == {"not": {"type": "string"}}  # tightening under `not` would loosen the whole
    assert schema["properties"]["free"] == {"type": "string"}  # the caller's schema is not changed


def test_a_named_call_grammar_takes_schema_valid_arguments_in_the_models_style_and_nothing_else() -> None:
    tools = {t.name: t for t in _tools()}
    flights = _named(tools["search_flights"])
    good = ' {"origin": "Boston", "destination": "Paris", "date": "tomorrow", "max_price": 300}}\n' + CLOSE
    assert _accepts(flights, good)
    for bad in (
        ' {"origin": "Boston", "destination": "Paris"}}\n' + CLOSE,  # a required argument missing
        ' {"origin": "Boston", "destination": "Paris", "date": "x", "max_price": "cheap"}}\n' + CLOSE,  # a type
        ' {"origin": "Boston", "destination": "Paris", "date": "x", "seats": 2}}\n' + CLOSE,  # an unknown key
        ' {"origin":"Boston", "destination": "Paris", "date": "x"}}\n' + CLOSE,  # not the model's separators
        ' {"origin": "Boston", "destination": "Paris", "date": "x"}}\n',  # no close tag
        ' {"origin": "' + "B" * (MAX_STRING_CHARS + 1) + '", "destination": "P", "date": "x"}}\n' + CLOSE,
    ):
        assert not _accepts(flights, bad), bad
    cities = _named(tools["list_cities"])
    assert _accepts(cities, " {}}\n" + CLOSE) and not _accepts(cities, ' {"city": "Paris"}}\n' + CLOSE)
    # The close tag is the tokenizer's own token, never the same characters spelled in plain text.
    assert "<[" in _tokenizer().terminal(CLOSE) and _tokenizer().terminal("done") == '"done"'


def test_a_required_call_grammar_names_one_of_the_allowed_tools_with_its_own_arguments() -> None:
    tools = {t.name: t for t in _tools()}
    grammar = call_grammar([tools["get_booking"], tools["list_cities"]], _tokenizer().terminal(CLOSE), named=False)
    assert _accepts(grammar, 'get_booking", "arguments": {"code": "F7KQ2M"}}\n' + CLOSE)
    assert _accepts(grammar, 'list_cities", "arguments": {}}\n' + CLOSE)
    assert not _accepts(grammar, 'list_cities", "arguments": {"code": "F7KQ2M"}}\n' + CLOSE)
    assert not _accepts(grammar, 'cancel_booking", "arguments": {"code": "F7KQ2M"}}\n' + CLOSE)


def test_whatever_the_logits_the_sampler_writes_a_schema_valid_call_to_every_booking_tool() -> None:
    """Random logits, favouring the token that closes the turn: only the mask keeps the output valid."""
    tokenizer = _policy().tokenizer
    rng = torch.Generator().manual_seed(5)
    rows = []
    for seed, tool in enumerate(_tools()):
        sampling = SamplingParams(temperature=0.0 if seed % 2 else 1.0, max_new_tokens=2000, stop=[CLOSE], seed=seed)
        rows.append(RowState(sampling, torch.Generator().manual_seed(seed), _tokenizer().matcher(_named(tool))))
    sampler, stopper = RowSampler(rows), RowStopper(rows, tokenizer, {2})
    input_ids = torch.zeros((len(rows), 1), dtype=torch.long)
    for _ in range(2000):
        logits = torch.randn((len(rows), VOCAB), generator=rng) * 4
        logits[:, 2] += 50.0  # <|im_end|>: what an unconstrained sampler would write at once
        sampler(input_ids, logits)
        if bool(stopper(input_ids, logits).all()):
            break
    for row, tool in zip(rows, _tools(), strict=True):
        text = tokenizer.decode(row.token_ids, skip_special_tokens=False)
        assert row.finish_reason == "stop" and text.endswith("}\n" + CLOSE), (tool.name, text)
        jsonschema.validate(json.loads(text[: -len("}\n" + CLOSE)]), tool.parameters)


def test_a_constrained_row_reports_log_probs_under_the_mask_and_leaves_other_rows_alone() -> None:
    torch.manual_seed(0)
    logits = torch.randn((2, VOCAB))
    tool = next(t for t in _tools() if t.name == "get_booking")
    grammar = _named(tool)
    plain = RowState(SamplingParams(temperature=0), torch.Generator())
    held = RowState(SamplingParams(temperature=0.8, seed=3), torch.Generator().manual_seed(3),
                    _tokenizer().matcher(grammar))
    RowSampler([plain, held])(torch.zeros((2, 1), dtype=torch.long), logits)
    raw = logits[0].log_softmax(-1)
    assert plain.token_ids == [int(raw.argmax())] and plain.logprobs == pytest.approx([float(raw.max())], abs=1e-5)
    allowed = replay_allowed(_tokenizer(), grammar, held.token_ids)[0]
    assert bool(allowed[held.token_ids[0]]) and int(allowed.sum()) < VOCAB
    masked = (logits[1] / 0.8).masked_fill(~allowed, float("-inf")).log_softmax(-1)
    assert held.logprobs == pytest.approx([float(masked[held.token_ids[0]])], abs=1e-5)


def test_hf_policy_holds_a_row_to_its_grammar_with_log_probs_of_the_masked_distribution() -> None:
    policy = _policy()
    tool = next(t for t in _tools() if t.name == "book_flight")
    prompt = policy.tokenizer.encode("<|im_start|>user\nBook flight 3 for two.<|im_end|>\n<|im_start|>assistant\n"
                                     f'{OPEN}\n{{"name": "book_flight", "arguments":', add_special_tokens=False)
    free = GenerationRequest(SamplingParams(temperature=0, max_new_tokens=24), prompt_ids=prompt)
    held = GenerationRequest(SamplingParams(temperature=0, max_new_tokens=400, stop=[CLOSE]), prompt_ids=prompt,
                             grammar=_named(tool))
    alone = policy.generate_batch([free])[0]
    together, constrained = policy.generate_batch([free, held])
    assert together.completion_ids == alone.completion_ids  # a grammar row changes nothing for the others
    text = policy.tokenizer.decode(constrained.completion_ids, skip_special_tokens=False)
    assert constrained.finish_reason == "stop" and text.endswith("}\n" + CLOSE)
    jsonschema.validate(json.loads(text[: -len("}\n" + CLOSE)]), tool.parameters)
    with torch.inference_mode():
        logits = policy.model(torch.tensor([prompt + constrained.completion_ids])).logits[0].float()
    logits = logits[len(prompt) - 1 : len(prompt) - 1 + len(constrained.completion_ids)]
    allowed = replay_allowed(policy.grammar_tokenizer, _named(tool), constrained.completion_ids)
    expected = logits.masked_fill(~allowed, float("-inf")).log_softmax(-1)
    picked = expected.gather(-1, torch.tensor(constrained.completion_ids)[:, None]).squeeze(-1)
    assert constrained.logprobs == pytest.approx(picked.tolist(), abs=1e-3)
    assert constrained.completion_ids == expected.argmax(-1).tolist()


def test_a_grammar_that_does_not_compile_and_one_a_policy_cannot_hold_are_refused() -> None:
    policy = _policy()
    prompt = policy.tokenizer.encode("hi", add_special_tokens=False)
    assert _tokenizer().problem("start: missing_rule\n")
    with pytest.raises(PolicyError, match="grammar does not compile"):
        policy.generate_batch([GenerationRequest(SamplingParams(), prompt_ids=prompt, grammar="start: missing\n")])
    remote = OpenAIPolicy("http://127.0.0.1:9/v1", "m", tokenizer_dir=DEFAULT_MODEL_DIR, mode="token")
    request = GenerationRequest(SamplingParams(), prompt_ids=prompt, grammar='start: "x"\n')
    with pytest.raises(PolicyError, match="cannot hold a completion to a grammar"):
        asyncio.run(remote.generate(request))
