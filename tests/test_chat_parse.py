"""Hermes/Qwen tool-call parsing: every malformed call becomes a readable error, never an exception."""

from __future__ import annotations

import json

import pytest

from toolgym.chat.parse import PARSERS, HermesParser, get_parser, register_parser, screen_calls
from toolgym.schema import ToolCall


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


@pytest.mark.parametrize("key", ["args", "params", "input", "argument"])
def test_a_wrong_arguments_key_is_a_format_error_not_an_empty_call(parser: HermesParser, key: str) -> None:
    result = parser.parse(f'<tool_call>{{"name": "add_note", "{key}": {{"title": "Buy milk"}}}}</tool_call>')
    assert result.tool_calls == []
    assert result.errors == [
        f'tool call 1 (add_note): unknown key(s) "{key}" in the call; a call has "name" and "arguments", '
        'and the tool\'s arguments go under "arguments"'
    ]


def test_call_keys_and_the_openai_wrapper_are_checked(parser: HermesParser) -> None:
    text = (
        '<tool_call>{"name": "a", "arguments": {}, "parameters": {}}</tool_call>'
        '<tool_call>{"type": "function", "function": {"name": "b", "arguments": {}}, "extra": 1}</tool_call>'
        '<tool_call>{"type": "function", "id": "c1", "function": {"name": "c", "arguments": {}}}</tool_call>'
        '<tool_call>{"name": "d", "arguments": {}, "id": "c2", "type": "function"}</tool_call>'
        '<tool_call>{"name": "e"}</tool_call>'
    )
    result = parser.parse(text)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("c", {}), ("d", {}), ("e", {})]
    assert 'has both "arguments" and "parameters"' in result.errors[0]
    assert 'unknown key(s) "extra" around "function"' in result.errors[1]


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("NaN", "NaN is not a JSON number (numbers must be finite)"),
        ("Infinity", "Infinity is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
        ("1e400", "the number 1e400 is too large (numbers must be finite)"),
        ("-1e999", "the number -1e999 is too large"),
        ("9" * 5000, "an integer of 5,000 digits is too long (at most 100)"),
        ('"\\ud800"', "unpaired surrogate (\\ud800)"),
        ('"\udc00"', "unpaired surrogate (\\udc00)"),
        ("[" * 1000 + "]" * 1000, "the JSON nests deeper than 32 levels"),
        ('{"a": ' * 5000 + "1" + "}" * 5000, "the JSON nests deeper than 32 levels"),
    ],
)
def test_values_no_tool_should_see_are_format_errors(parser: HermesParser, value: str, error: str) -> None:
    for body in (
        f'{{"name": "add_note", "arguments": {{"title": {value}}}}}',
        json.dumps({"name": "add_note", "arguments": f'{{"title": {value}}}'}),  # arguments as a JSON string
    ):
        result = parser.parse(f"<tool_call>{body}</tool_call>")
        assert result.tool_calls == [], body[:80]
        assert len(result.errors) == 1 and error in result.errors[0], result.errors


def test_large_but_sane_values_still_parse(parser: HermesParser) -> None:
    body = json.dumps({"name": "a", "arguments": {"n": 2**70, "x": 1e308, "deep": [[[[1]]]], "s": "🙂" * 100}})
    [call] = parser.parse(f"<tool_call>{body}</tool_call>").tool_calls
    assert call.arguments == {"n": 2**70, "x": 1e308, "deep": [[[[1]]]], "s": "🙂" * 100}


def test_brackets_inside_strings_do_not_count_as_nesting(parser: HermesParser) -> None:
    title = "[" * 500 + '\\"{' * 100
    [call] = parser.parse(f'<tool_call>{{"name": "a", "arguments": {{"t": "{title}"}}}}</tool_call>').tool_calls
    assert call.arguments["t"] == "[" * 500 + '"{' * 100


def test_chat_mode_calls_are_screened_by_the_same_rules() -> None:
    calls = [
        ToolCall(name="ok", arguments={"n": 2**70, "x": [1.5]}),
        ToolCall(name="nan", arguments={"x": [float("nan")]}),
        ToolCall(name="big", arguments={"x": 10**200}),
        ToolCall(name="sur", arguments={"\ud800": 1}),
        ToolCall(name="deep", arguments={"x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}),
    ]
    kept, errors = screen_calls(calls)
    assert [c.name for c in kept] == ["ok"]
    assert errors[0] == "tool call 2 (nan): nan is not a JSON number (numbers must be finite)"
    assert "tool call 3 (big): an integer of about 201 digits is too long" in errors[1]
    assert "unpaired surrogate (\\ud800)" in errors[2] and "nests deeper than 32 levels" in errors[3]


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


def test_format_feedback_lists_the_first_few_problems_and_counts_the_rest() -> None:
    from toolgym.agent.episode import MAX_FEEDBACK_ERRORS, format_feedback

    text = format_feedback([f"problem {i}" for i in range(20_000)])
    assert text.count("- problem") == MAX_FEEDBACK_ERRORS
    assert f"and {20_000 - MAX_FEEDBACK_ERRORS} more" in text
    assert format_feedback(["only one"]).count("- ") == 1
