"""Model faults stay the model's: no model output can make a tool call, the parser or an episode raise.

A fast slice of bench/fuzz_tools.py over every tool of every app (and the multi-app compositions),
a sweep of every argument of every tool with every adversarial value, a property test of the
tool-call parser on seeded adversarial text, and episodes whose policy emits such calls: they end
scored, never as infrastructure errors (which pass rates and GRPO groups leave out).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import random
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from test_agent_support import ScriptedChatPolicy, ScriptedTokenPolicy, tiny_tokenizer, toy_env, toy_task
from toolgym.agent.episode import run_episode
from toolgym.agent.limits import EpisodeLimits
from toolgym.chat.parse import MAX_JSON_DEPTH, HermesParser
from toolgym.dataset.build import BuildConfig, generate_app_tasks, generate_composition_tasks
from toolgym.envs import Environment, app_names, get_app, make_env
from toolgym.envs.multi import composition_names, get_composition
from toolgym.policy.base import SamplingParams
from toolgym.schema import Message, Task, ToolCall

BENCH = Path(__file__).resolve().parents[1] / "bench" / "fuzz_tools.py"
ENVS = [*app_names(), *composition_names()]
SAMPLING = SamplingParams(temperature=0.0, max_new_tokens=400)


@cache
def fuzz() -> ModuleType:
    """bench/fuzz_tools.py, whose value pools and call builders this file shares."""
    spec = importlib.util.spec_from_file_location("fuzz_tools", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_tools"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@cache
def tasks(env_name: str) -> tuple[Task, ...]:
    """One task per family: its user and day have data, and its gold calls seed plausible values."""
    config = BuildConfig(tasks_per_family=1)
    if "+" in env_name:
        return tuple(generate_composition_tasks(get_composition(env_name), config))
    return tuple(generate_app_tasks(get_app(env_name), config))


def assert_contract(tally: Any) -> None:
    broken = {k: v for k, v in tally.examples.items() if not k.startswith("tool raised")}
    assert tally.broken == 0, f"{dict(tally.counts)}: {broken}"
    assert tally.counts["ok"] + tally.counts["tool error"] == tally.calls


@pytest.mark.parametrize("env_name", ENVS)
def test_random_calls_to_every_tool_are_answered_or_refused_readably(env_name: str) -> None:
    tally = fuzz().fuzz_random(env_name, list(tasks(env_name)), calls_per_tool=25 if "+" not in env_name else 5, seed=11)
    assert tally.calls >= 5 * len(make_env(env_name).tool_specs("agent"))
    assert_contract(tally)


@pytest.mark.parametrize("app_name", app_names())
def test_every_argument_of_every_tool_survives_every_adversarial_value(app_name: str) -> None:
    """Deterministic sweep: each argument in turn gets each adversarial value, the others stay plausible."""
    module = fuzz()
    rng = random.Random(app_name)
    app_tasks = list(tasks(app_name))
    pool = module.gold_pool(app_tasks)
    env = make_env(app_name)
    tally = module.Tally()
    for index, t in enumerate(get_app(app_name).tools):
        env.reset(app_tasks[index % len(app_tasks)].env_variables)
        base = {p.name: module.valid_value(rng, p.annotation, pool.get(p.name, [])) for p in t.params}
        for p in t.params:
            for value in module.ADVERSARIAL:
                tally.run(env, t.name, {**base, p.name: value}, t.owner)
        tally.run(env, t.name, {**base, "args": {"x": 1}}, t.owner)
        for value in (None, [], "{}", math.nan, module.DEEP_LIST):
            tally.run(env, t.name, value, t.owner)
    env.close()
    assert_contract(tally)
    assert tally.counts["tool error"] > tally.counts["ok"]


def test_mutated_gold_calls_of_every_environment_are_answered_or_refused() -> None:
    every = [task for name in ENVS for task in tasks(name)]
    assert_contract(fuzz().fuzz_gold(every, seed=5))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"note_id": math.nan}, "argument 'note_id' must be a finite number; got NaN"),
        ({"note_id": -math.inf}, "argument 'note_id' must be a finite number; got -Infinity"),
        ({"note_id": 1e308}, "argument 'note_id' is out of range: integers must lie between"),
        ({"note_id": 2**63}, "argument 'note_id' is out of range"),
        ({"note_id": 10**5000}, "got an integer of about 5001 digits"),
        ({"note_id": [[[]]]}, "argument 'note_id' must be an integer; got array [[[]]]"),
    ],
)
def test_the_boundary_names_the_argument_and_the_rule(arguments: dict[str, Any], message: str) -> None:
    env = toy_env()
    env.reset(toy_task().env_variables)
    result = env.call_tool("complete_note", arguments)
    assert result.is_error and message in result.content, result.content
    assert len(result.content) < 400


# ---------------------------------------------------------------------------------------------
#  The parser: never raises, never yields a call it should have refused
# ---------------------------------------------------------------------------------------------

FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_end|>", "```json", "```", "{", "}", "[", "]",
    '"name": "add_note"', '"arguments": ', '"args": ', '"params": ', '"parameters": ', '"function": ', ",", ":",
    '{"title": "x"}', "NaN", "-Infinity", "Infinity", "1e400", "-1e400", "1e308", "9" * 5000, "0.5", "-0",
    '"\\ud800"', '"\\udfff x"', '"\ud800"', '"\\u0000"', "\\", '"', "null", "true", "[" * 1000, "]" * 1000,
    "{\"a\": " * 200, "}" * 200, '"' + "x" * 60_000 + '"', "\x00", "🙂", "\n", " ",
]
WELL_FORMED = '<tool_call>\n{"name": "add_note", "arguments": {"title": "Buy milk"}}\n</tool_call>'


def adversarial_text(rng: random.Random) -> str:
    shape = rng.random()
    if shape < 0.4:  # a well-formed call with one value swapped for something nasty
        value = rng.choice(["NaN", "Infinity", "-Infinity", "1e400", "9" * 5000, '"\\ud800"', '"\ud800"',
                            "[" * 1000 + "]" * 1000, '{"a":' * 1000 + "1" + "}" * 1000, '"' + "x" * 60_000 + '"'])
        key = rng.choice(["arguments", "args", "params", "parameters"])
        body = f'{{"name": "add_note", "{key}": {{"title": {value}}}}}'
        if rng.random() < 0.3:
            body = json.dumps({"name": "add_note", "arguments": f'{{"title": {value}}}'})
        return "<tool_call>" * rng.randint(1, 3) + body + "</tool_call>" * rng.randint(0, 2)
    if shape < 0.5:  # a valid call, truncated anywhere
        return WELL_FORMED[: rng.randint(0, len(WELL_FORMED))]
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 25)))


def clean(value: Any) -> bool:
    """Finite numbers, no unpaired surrogates, nesting within the parser's limit."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return False
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, str) and any("\ud800" <= ch <= "\udfff" for ch in item):
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in [*item.keys(), *item.values()])
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True


def test_parser_never_raises_and_never_yields_an_unsafe_call() -> None:
    parser = HermesParser()
    rng = random.Random(20260615)
    for _ in range(3_000):
        text = adversarial_text(rng)
        result = parser.parse(text)  # must not raise
        for call in result.tool_calls:
            assert call.name.strip() and clean(call.name) and clean(call.arguments), (text[:200], call)
        if "<tool_call>" in text and "think>" not in text and not result.tool_calls:  # (a call in reasoning is not one)
            assert result.errors, text[:200]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ('{"name": "a", "arguments": {"x": NaN}}', "NaN is not a JSON number"),
        ('{"name": "a", "arguments": {"x": -Infinity}}', "-Infinity is not a JSON number"),
        ('{"name": "a", "arguments": {"x": 1e400}}', "the number 1e400 is too large"),
        ('{"name": "a", "arguments": {"x": ' + "7" * 5000 + "}}", "an integer of 5,000 digits is too long"),
        ('{"name": "a", "arguments": {"x": "\\ud800"}}', "unpaired surrogate (\\ud800)"),
        ('{"name": "a", "arguments": {"x": ' + "[" * 1000 + "]" * 1000 + "}}", "nests deeper than 32 levels"),
        ('{"name": "a", "arguments": "{\\"x\\": NaN}"}', '"arguments" is a string that is not valid JSON: NaN'),
    ],
)
def test_unsafe_json_in_a_call_is_a_format_error(body: str, error: str) -> None:
    result = HermesParser().parse(f"<tool_call>{body}</tool_call>")
    assert result.tool_calls == []
    assert len(result.errors) == 1 and error in result.errors[0], result.errors


def test_the_parser_stays_linear_on_pathological_turns() -> None:
    parser = HermesParser()
    assert len(parser.parse("<tool_call>" * 20_000 + "</tool_call>").errors) == 20_000
    assert parser.parse("answer" + "<|im_end|>\n" * 20_000).content == "answer"
    assert parser.parse("<tool_call>" + "[" * 200_000 + "</tool_call>").errors


# ---------------------------------------------------------------------------------------------
#  Episodes: a policy that sends such calls is scored, not excused as an infrastructure error
# ---------------------------------------------------------------------------------------------


def run(policy: Any, **kwargs: Any) -> Any:
    env = toy_env()
    try:
        return asyncio.run(run_episode(toy_task(), env, policy, SAMPLING, **kwargs))
    finally:
        env.close()


def test_token_mode_episode_with_hostile_calls_is_scored() -> None:
    hostile = [
        '<tool_call>{"name": "complete_note", "arguments": {"note_id": NaN}}</tool_call>',
        '<tool_call>{"name": "complete_note", "arguments": {"note_id": 1e400}}</tool_call>',
        '<tool_call>{"name": "complete_note", "arguments": {"note_id": 1e308}}</tool_call>',
        '<tool_call>{"name": "complete_note", "arguments": {"note_id": 9223372036854775808}}</tool_call>',
        '<tool_call>{"name": "add_note", "arguments": {"title": "\\ud800"}}</tool_call>',
        '<tool_call>{"name": "add_note", "args": {"title": "Buy milk"}}</tool_call>',
        '<tool_call>{"name": "add_note", "arguments": {"title": ' + "[" * 100 + "]" * 100 + "}}</tool_call>",
        '<tool_call>{"name": "list_my_notes", "arguments": {"x": ' + "9" * 200 + "}}</tool_call>",
        "I did it.",
    ]
    episode = run(ScriptedTokenPolicy(tiny_tokenizer(), hostile), limits=EpisodeLimits(max_turns=len(hostile)))
    assert episode.status == "ok" and episode.stop_reason == "answer", episode.error
    assert episode.verdict is not None and episode.verdict.error is None
    assert episode.reward < 1.0 and not episode.succeeded  # scored, and it failed
    assert episode.tool_errors == 2  # 1e308 and 2**63: the parser passes them, the tool boundary refuses
    assert episode.format_errors == 6


def test_chat_mode_calls_from_a_server_parser_are_screened_then_meet_the_boundary() -> None:
    """A server's tool parser hands arguments straight through: unsafe JSON values become format errors
    (NaN, Infinity, surrogates, deep nesting), the rest meet the tool boundary (range, length)."""
    calls = [
        {"note_id": math.nan}, {"note_id": math.inf}, {"title": "\ud800"}, {"title": fuzz().DEEP_LIST},
        {"note_id": 2**64}, {"note_id": 1e308}, {"title": "x" * 60_000},
    ]
    script = [
        Message(role="assistant", content="", tool_calls=[
            ToolCall(id=f"c{i}", name="add_note" if "title" in args else "complete_note", arguments=args)
        ])
        for i, args in enumerate(calls)
    ]
    script.append(Message(role="assistant", content="Done."))
    episode = run(ScriptedChatPolicy(script), limits=EpisodeLimits(max_turns=len(script)))
    assert episode.status == "ok" and episode.stop_reason == "answer", episode.error
    assert (episode.format_errors, episode.tool_errors) == (4, 3)
    assert episode.verdict is not None and episode.verdict.error is None and not episode.succeeded
    errors = [m.content for m in episode.messages if m.role == "tool"]
    assert all(e.startswith("Error: argument 'note_id' is out of range") for e in errors[:2]), errors
    assert errors[2].startswith("Error: argument 'title' is too long: 60,000 characters; the limit is 10,000")
    json.dumps([m.to_openai() for m in episode.messages])  # what the next request sends: serializable


def test_environment_left_usable_after_a_fuzz_run() -> None:
    env = Environment([get_app("mail")])
    module = fuzz()
    variables = tasks("mail")[0].env_variables
    env.reset(variables)
    for value in module.ADVERSARIAL:
        env.call_tool("search_messages", {"query": value})
    assert not env.call_tool("list_folders", {}).is_error
    assert env.diff() == []
    env.close()
