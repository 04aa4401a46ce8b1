"""Rendering through the tokenizer's own template: tools, runtime context, prompt styles, deltas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from test_agent_support import ENV_VARIABLES, qwen3_tokenizer, tiny_tokenizer, toy_env, toy_task
from toolgym.chat.render import (
    CALL_FORMAT,
    Renderer,
    RenderError,
    load_prompt_style,
    runtime_context_lines,
    system_prompt,
)
from toolgym.schema import Message, ToolCall

TOKENIZERS = {"tiny": tiny_tokenizer, "qwen3": qwen3_tokenizer}


@pytest.fixture(params=["tiny", "qwen3"])
def tokenizer(request: pytest.FixtureRequest) -> Any:
    return TOKENIZERS[request.param]()


def test_full_style_passes_tool_schemas_and_runtime_context(tokenizer: Any) -> None:
    env = toy_env()
    tools = env.tool_specs()
    renderer = Renderer(tokenizer, prompt_style="full")
    messages = renderer.initial_messages(toy_task(), tools, env.policy)
    assert [m.role for m in messages] == ["system", "user"]
    text = renderer.render_text(messages, tools, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nYou manage notes.")
    assert "Current date: 2026-06-19 (Friday)" in text
    assert "Logged-in user: ana (Ana Lee)" in text
    assert "TEAM: Platform" in text
    assert "<tools>" in text
    for tool in tools:
        assert json.dumps(tool.to_openai(), ensure_ascii=False) in text
    assert "<|im_start|>user\nAdd a note 'Buy milk' due tomorrow.<|im_end|>\n<|im_start|>assistant\n" in text
    assert renderer.prompt_ids(messages, tools) == tokenizer(text, add_special_tokens=False)["input_ids"]


def test_compact_style_lists_signatures_and_call_format_without_schemas(tokenizer: Any) -> None:
    env = toy_env()
    tools = env.tool_specs()
    renderer = Renderer(tokenizer, prompt_style="compact")
    messages = renderer.initial_messages(toy_task(), tools, env.policy)
    text = renderer.render_text(messages, tools, add_generation_prompt=True)
    assert "<tools>" not in text and '"parameters"' not in text
    assert "add_note(title: string, due?: string) - Add a note for the logged-in user." in text
    assert CALL_FORMAT in text
    assert "Today is Friday, 2026-06-19." in text
    assert "You act for ana (Ana Lee)." in text
    assert "TEAM: Platform" in text
    full = Renderer(tokenizer, prompt_style="full")
    assert len(renderer.prompt_ids(messages, tools)) < len(full.prompt_ids(full.initial_messages(toy_task(), tools, env.policy), tools)) / 2


@pytest.mark.parametrize("style", ["compact", "full"])
def test_both_styles_render_calls_that_parse_back_to_the_same_calls(tokenizer: Any, style: str) -> None:
    from toolgym.chat.parse import get_parser

    env = toy_env()
    tools = env.tool_specs()
    renderer = Renderer(tokenizer, prompt_style=style)  # type: ignore[arg-type]
    calls = [ToolCall(id="c1", name="add_note", arguments={"title": "Buy \"oat\" milk", "due": "2026-06-20"}),
             ToolCall(id="c2", name="list_my_notes", arguments={})]
    messages = [*renderer.initial_messages(toy_task(), tools, env.policy),
                Message(role="assistant", content="", tool_calls=calls)]
    prompt = renderer.render_text(messages[:-1], tools, add_generation_prompt=True)
    whole = renderer.render_text(messages, tools, add_generation_prompt=False)
    assert whole.startswith(prompt)
    parsed = get_parser("hermes").parse(whole[len(prompt):].split("<|im_end|>")[0])
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [(c.name, c.arguments) for c in calls]
    assert not parsed.errors


def test_compact_scaffolding_is_tens_of_tokens() -> None:
    env = toy_env()
    tools = env.tool_specs()
    tokenizer = tiny_tokenizer()

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    prompt = system_prompt(env.policy, {}, tools, "compact")
    payload = env.policy + "\n" + "\n".join(t.signature() for t in tools)
    assert count(prompt) - count(payload) < 60


def test_qwen3_generation_prompt_follows_enable_thinking() -> None:
    messages = [Message(role="user", content="hi")]
    assert Renderer(qwen3_tokenizer(), enable_thinking=False).render_text(messages, None, True).endswith(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert Renderer(qwen3_tokenizer(), enable_thinking=True).render_text(messages, None, True).endswith(
        "<|im_start|>assistant\n"
    )


def test_runtime_context_shows_only_what_the_task_gives() -> None:
    assert runtime_context_lines({}, "full") == []
    assert runtime_context_lines({"CURRENT_DATE": "soon"}, "compact") == ["Today is soon."]
    assert runtime_context_lines({"LOGGED_IN_NAME": "Bo"}, "full") == ["Logged-in user name: Bo"]
    assert runtime_context_lines(ENV_VARIABLES, "compact")[:2] == ["Today is Friday, 2026-06-19.", "You act for ana (Ana Lee)."]


def test_done_tool_changes_the_closing_rule() -> None:
    from toolgym.agent.episode import DONE_TOOL

    tools = [*toy_env().tool_specs(), DONE_TOOL]
    assert "call done with your answer" in system_prompt("P", {}, tools, "compact")
    assert "calls `done` with the final answer" in system_prompt("P", {}, tools, "full")


def test_user_scenario_opening_message_replaces_the_prompt() -> None:
    from toolgym.schema import UserScenario

    task = toy_task(user_scenario=UserScenario(instructions="x", opening_message="Hello there"))
    messages = Renderer(None).initial_messages(task, [], "policy")
    assert messages[1].content == "Hello there"


@pytest.mark.parametrize("enable_thinking", [False, True])
def test_observation_delta_is_what_the_template_writes_after_a_closed_turn(tokenizer: Any, enable_thinking: bool) -> None:
    renderer = Renderer(tokenizer, prompt_style="full", enable_thinking=enable_thinking)
    tools = toy_env().tool_specs()
    results = [
        Message(role="tool", content='[{"id": 1}]', tool_call_id="call_0_0", name="list_my_notes"),
        Message(role="tool", content="Error: no note", tool_call_id="call_0_1", name="complete_note"),
    ]
    text = renderer.observation_text(results, tools)
    generation_prompt = "<|im_start|>assistant\n"
    if tokenizer.chat_template != tiny_tokenizer().chat_template and not enable_thinking:
        generation_prompt += "<think>\n\n</think>\n\n"
    assert text == (
        "\n<|im_start|>user\n<tool_response>\n[{\"id\": 1}]\n</tool_response>\n"
        "<tool_response>\nError: no note\n</tool_response><|im_end|>\n" + generation_prompt
    )
    ids = renderer.observation_ids(results, tools)
    assert ids == tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids[:1]) == "\n"  # the newline after <|im_end|> belongs to the observation

    user_text = renderer.observation_text([Message(role="user", content="Yes, do it.")], tools)
    assert user_text == "\n<|im_start|>user\nYes, do it.<|im_end|>\n" + generation_prompt


def test_prefix_property_with_the_tiny_template() -> None:
    """prompt + sampled turn + observation == the template's own render of the whole history."""
    tokenizer = tiny_tokenizer()
    env = toy_env()
    tools = env.tool_specs()
    renderer = Renderer(tokenizer, prompt_style="compact")
    messages = renderer.initial_messages(toy_task(), tools, env.policy)
    prompt = renderer.prompt_ids(messages, tools)
    call = ToolCall(name="add_note", arguments={"title": "Buy milk", "due": "tomorrow"}, id="call_0_0")
    completion = renderer.encode(
        '<tool_call>\n{"name": "add_note", "arguments": {"title": "Buy milk", "due": "tomorrow"}}\n</tool_call><|im_end|>'
    )
    result = Message(role="tool", content='{"id": 7}', tool_call_id="call_0_0", name="add_note")
    extended = prompt + completion + renderer.observation_ids([result], tools)
    history = [*messages, Message(role="assistant", content="", tool_calls=[call]), result]
    assert extended == renderer.prompt_ids(history, tools)


def test_stop_strings_and_ids(tokenizer: Any) -> None:
    renderer = Renderer(tokenizer)
    assert renderer.stop_strings == ["<|im_end|>", "<|endoftext|>"]
    assert renderer.stop_token_ids == [tokenizer.convert_tokens_to_ids(s) for s in renderer.stop_strings]
    assert renderer.turn_close_ids == [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    assert renderer.ends_turn([5, renderer.stop_token_ids[0]])
    assert not renderer.ends_turn([5]) and not renderer.ends_turn([])


def test_chat_mode_renderer_refuses_token_work() -> None:
    renderer = Renderer(None)
    with pytest.raises(RenderError, match="no tokenizer"):
        renderer.prompt_ids([Message(role="user", content="x")], None)


def test_load_prompt_style(tmp_path: Path) -> None:
    assert load_prompt_style(None) == "full"
    assert load_prompt_style(tmp_path) == "full"
    assert load_prompt_style("Qwen/Qwen3-8B") == "full"
    (tmp_path / "toolgym.json").write_text('{"prompt_style": "compact", "context_length": 4096}')
    assert load_prompt_style(tmp_path) == "compact"
    (tmp_path / "toolgym.json").write_text('{"prompt_style": "tiny"}')
    with pytest.raises(ValueError, match=r"toolgym.json: field 'prompt_style' must be one of full, compact"):
        load_prompt_style(tmp_path)
    (tmp_path / "toolgym.json").write_text("{oops")
    with pytest.raises(ValueError, match=r"toolgym.json: line 1 column 2: invalid JSON: "):
        load_prompt_style(tmp_path)
