"""Hermes/Qwen tool-call parsing: every malformed call becomes a readable error, never an exception."""

from __future__ import annotations

import json

import pytest

from toolgym.agent.parse import PARSERS, HermesParser, get_parser, register_parser


@pytest.fixture
def parser() -> HermesParser:
    return HermesParser()


def test_two_calls_in_one_turn_with_text_around(parser: HermesParser) -> None:
    text = (
        "Let me check.\n"
        '<tool_call>\n{"name": "list_my_notes", "arguments": {}}\n</tool_call>\n'
        '<tool_call>\n{"name": "add_note", "arguments": {"title": "Buy milk", "due": "tomorrow"}}\n</tool_call>'
        "<|im_end|>"
    )
    result = parser.parse(text)
    assert [c.name for c in result.tool_calls] == ["list_my_notes", "add_note"]
    assert result.tool_calls[1].arguments == {"title": "Buy milk", "due": "tomorrow"}
    assert result.content == "Let me check."
    assert result.errors == []
    assert result.reasoning is None


def test_missing_closing_tag_at_the_end(parser: HermesParser) -> None:
    # The turn stopped on the stop string "</tool_call>", which the server left out.
    result = parser.parse('<tool_call>\n{"name": "complete_note", "arguments": {"note_id": 3}}\n')
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("complete_note", {"note_id": 3})]
    assert result.errors == []
    assert result.content == ""


def test_unclosed_call_followed_by_another_call(parser: HermesParser) -> None:
    text = '<tool_call>{"name": "a", "arguments": {}}\n<tool_call>{"name": "b", "arguments": {"x": 1}}</tool_call>'
    result = parser.parse(text)
    assert [c.name for c in result.tool_calls] == ["a", "b"]


def test_arguments_as_json_string(parser: HermesParser) -> None:
    body = json.dumps({"name": "add_note", "arguments": json.dumps({"title": "Buy milk"})})
    result = parser.parse(f"<tool_call>{body}</tool_call>")
    assert result.tool_calls[0].arguments == {"title": "Buy milk"}
    assert result.errors == []


def test_double_encoded_arguments(parser: HermesParser) -> None:
    double = json.dumps(json.dumps({"note_id": 4}))
    body = json.dumps({"name": "complete_note", "arguments": double})
    result = parser.parse(f"<tool_call>{body}</tool_call>")
    assert result.tool_calls[0].arguments == {"note_id": 4}


def test_openai_function_shape_and_parameters_key(parser: HermesParser) -> None:
    text = (
        '<tool_call>{"type": "function", "function": {"name": "a", "arguments": "{\\"k\\": 1}"}}</tool_call>'
        '<tool_call>{"name": "b", "parameters": {"k": 2}}</tool_call>'
    )
    result = parser.parse(text)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("a", {"k": 1}), ("b", {"k": 2})]


def test_bad_json_reports_position_and_keeps_the_text(parser: HermesParser) -> None:
    text = 'I will add it. <tool_call>\n{"name": "add_note", "arguments": {"title": }}\n</tool_call>'
    result = parser.parse(text)
    assert result.tool_calls == []
    assert len(result.errors) == 1
    assert "tool call 1: invalid JSON" in result.errors[0]
    assert "Expecting value at line 1 column 45" in result.errors[0]  # position in the shown call
    # The malformed block stays in content, so the trace shows what the model wrote.
    assert '"title": }' in result.content


def test_missing_name_and_non_object_arguments(parser: HermesParser) -> None:
    text = (
        '<tool_call>{"arguments": {"a": 1}}</tool_call>'
        '<tool_call>{"name": "add_note", "arguments": ["Buy milk"]}</tool_call>'
        '<tool_call>{"name": "add_note", "arguments": "not json"}</tool_call>'
        '<tool_call>["add_note"]</tool_call>'
        '<tool_call>{"name": "ok", "arguments": {}}</tool_call>'
    )
    result = parser.parse(text)
    assert [c.name for c in result.tool_calls] == ["ok"]
    assert len(result.errors) == 4
    assert 'tool call 1: the call has no "name"' in result.errors[0]
    assert "tool call 2 (add_note)" in result.errors[1]
    assert "must be a JSON object, got array" in result.errors[1]
    assert "not valid JSON" in result.errors[2]
    assert "expected a JSON object" in result.errors[3]


def test_trailing_text_after_json_is_an_error(parser: HermesParser) -> None:
    result = parser.parse('<tool_call>{"name": "a", "arguments": {}}}</tool_call>')
    assert result.tool_calls == []
    assert "unexpected text after the JSON object at position" in result.errors[0]


def test_think_block_before_the_call_becomes_reasoning(parser: HermesParser) -> None:
    text = '<think>\nThe user wants a note.\n</think>\n\n<tool_call>\n{"name": "add_note", "arguments": {"title": "x"}}\n</tool_call><|im_end|>'
    result = parser.parse(text)
    assert result.reasoning == "The user wants a note."
    assert [c.name for c in result.tool_calls] == ["add_note"]
    assert result.content == ""
    assert "<think>" not in result.content


def test_answer_with_trailing_stop_token(parser: HermesParser) -> None:
    result = parser.parse("You have 3 open notes.<|im_end|>")
    assert result.content == "You have 3 open notes."
    assert result.tool_calls == [] and result.errors == []


def test_unclosed_think_block_is_a_format_error(parser: HermesParser) -> None:
    result = parser.parse("<think>\nstill thinking about")
    assert result.reasoning == "still thinking about"
    assert any("never closed" in e for e in result.errors)


def test_stray_closing_tag_is_reported(parser: HermesParser) -> None:
    result = parser.parse('{"name": "a"}</tool_call>')
    assert result.tool_calls == []
    assert any("without a matching <tool_call>" in e for e in result.errors)


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "<tool_call>",
        "<tool_call></tool_call>",
        "<tool_call>```json\n{\"name\": 1}\n```</tool_call>",
        "</think></think><tool_call>{{{{",
        "<tool_call>null</tool_call><tool_call>\"\"</tool_call>",
        '<tool_call>{"name": "x", "arguments": "\\"[1, 2]\\""}</tool_call>',
        "\x00\ufffd<tool_call>\ud800</tool_call>",
    ],
)
def test_garbage_never_raises(parser: HermesParser, garbage: str) -> None:
    result = parser.parse(garbage)
    assert result.tool_calls == [] or all(c.name for c in result.tool_calls)
    if "<tool_call>" in garbage:
        assert result.errors, f"no error reported for {garbage!r}"


def test_code_fenced_call_is_accepted(parser: HermesParser) -> None:
    result = parser.parse('<tool_call>```json\n{"name": "a", "arguments": {"k": 1}}\n```</tool_call>')
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("a", {"k": 1})]


def test_registry() -> None:
    assert isinstance(get_parser("hermes"), HermesParser)
    assert isinstance(get_parser("qwen3"), HermesParser)
    with pytest.raises(KeyError, match="unknown tool-call parser 'nope'; known parsers: "):
        get_parser("nope")

    class Upper(HermesParser):
        name = "upper"

    register_parser("upper-test", Upper)
    try:
        assert isinstance(get_parser("upper-test"), Upper)
    finally:
        PARSERS.pop("upper-test")
