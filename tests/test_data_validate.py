"""`toolgym data validate`: every BenchFlow check, JSON arguments, token samples, results rows of a real run."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from test_agent_support import tiny_tokenizer
from test_integrations_support import MODEL_DIR, app_tasks, oracle_rows, trl_lengths
from test_train_sft_support import ReplayTokenPolicy, mixed_tasks, read_jsonl, run_toy, write_jsonl_rows
from toolgym.cli.main import app
from toolgym.data.validate import check_row, check_sft_row, validate_file

TOOLS = [{"type": "function", "function": {"name": "add_note", "description": "Add a note.",
                                           "parameters": {"type": "object", "properties": {"title": {"type": "string"}}}}}]


def _call(call_id: str = "c0", arguments: Any = '{"title": "milk"}', name: str = "add_note") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def good_row() -> dict[str, Any]:
    return {
        "messages": [
            {"role": "system", "content": "You manage notes."},
            {"role": "user", "content": "Add milk."},
            {"role": "assistant", "content": "", "tool_calls": [_call()]},
            {"role": "tool", "tool_call_id": "c0", "name": "add_note", "content": '{"id": 7}'},
            {"role": "assistant", "content": "Added."},
        ],
        "tools": TOOLS,
        "task_id": "toy/add/0",
    }


def _reasons(row: dict[str, Any]) -> list[str]:
    return [p.reason for p in check_sft_row(row, 1).problems]


def test_a_well_formed_sft_row_is_valid() -> None:
    check = check_sft_row(good_row(), 1)
    assert check.valid and check.notes == []


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda r: r["messages"].__setitem__(1, {"role": "robot", "content": "hi"}), "unknown role"),
        (lambda r: r["messages"].insert(2, {"role": "system", "content": "late"}), "system message not at index 0"),
        (lambda r: r["messages"][3].pop("tool_call_id"), "tool message without tool_call_id"),
        (lambda r: r["messages"][3].__setitem__("tool_call_id", "c9"), "tool message answers an unknown tool_call_id"),
        (lambda r: r.__setitem__("messages", r["messages"][:2]), "no assistant message"),
        (lambda r: r.__setitem__("tools", []), "tool calls without tools"),
        (lambda r: r["messages"][2]["tool_calls"][0]["function"].__setitem__("arguments", "{title: milk}"),
         "tool call arguments are not JSON"),
        (lambda r: r["messages"][2]["tool_calls"][0]["function"].__setitem__("arguments", "[1, 2]"),
         "tool call arguments are not a JSON object"),
        (lambda r: r["messages"][2]["tool_calls"][0].pop("id"), "tool call without id"),
        (lambda r: r["messages"][2]["tool_calls"][0].pop("function"), "malformed tool call"),
        (lambda r: r["messages"][1].__setitem__("weight", 0), "bad weight"),
        (lambda r: [m.__setitem__("weight", 0) for m in r["messages"] if m["role"] == "assistant"],
         "no trained assistant message"),
        (lambda r: r["messages"][1].__setitem__("content", [{"type": "text", "text": "hi"}]), "content is not text"),
        (lambda r: r.__setitem__("tools", [{"type": "function", "function": {}}]), "malformed tool schema"),
    ],
)
def test_each_check_names_its_reason(edit: Any, reason: str) -> None:
    row = good_row()
    edit(row)
    assert reason in _reasons(row)


def test_a_tool_message_answering_the_same_call_twice_is_invalid() -> None:
    row = good_row()
    row["messages"].insert(4, dict(row["messages"][3]))
    assert "tool message answers an unknown tool_call_id" in _reasons(row)


def test_a_call_to_a_tool_not_listed_is_a_note_not_an_error() -> None:
    row = good_row()
    row["messages"][2]["tool_calls"][0]["function"]["name"] = "delete_everything"
    check = check_sft_row(row, 1)
    assert check.valid and [n.reason for n in check.notes] == ["call to a tool not in tools"]


@pytest.mark.parametrize(
    ("samples", "detail"),
    [
        ([{"input_ids": [1, 2, 3], "loss_mask": [0, 1], "sampler_logprobs": [0, 0, 0]}], "differ in length"),
        ([{"input_ids": [1, 2, 3], "loss_mask": [0, 2, 1], "sampler_logprobs": [0, 0, 0]}], "0 or 1"),
        ([{"input_ids": [1, -2, 3], "loss_mask": [0, 1, 1], "sampler_logprobs": [0, 0, 0]}], "non-negative"),
        ([{"input_ids": [1, 2, 3], "loss_mask": [0, 0, 0], "sampler_logprobs": [0, 0, 0]}], "no token has loss_mask 1"),
        ([{"input_ids": [1, 2], "loss_mask": [1, 1], "sampler_logprobs": [0, 0]}], "first token"),
    ],
)
def test_inconsistent_token_samples_are_invalid(samples: list[dict[str, Any]], detail: str) -> None:
    row = {**good_row(), "token_samples": samples}
    problems = check_sft_row(row, 1).problems
    assert [p.reason for p in problems] == ["token samples inconsistent"]
    assert detail in problems[0].detail


def test_a_run_that_mixes_every_outcome_is_valid_and_notes_its_format_feedback(tmp_path: Path) -> None:
    summary = run_toy(tmp_path, ReplayTokenPolicy(tiny_tokenizer()), mixed_tasks(), max_turns=3)
    assert (summary.ok, summary.truncated, summary.error) == (5, 1, 2)
    report = validate_file(tmp_path)  # a run folder is read through its results.jsonl
    assert (report.rows, report.valid, report.invalid) == (8, 8, 0)
    assert report.statuses == {"ok": 5, "truncated": 1, "error": 2}
    assert report.notes == {"format-error feedback (tool message without tool_call_id)": 1}


def test_results_rows_whose_token_samples_disagree_with_their_turns_are_invalid(tmp_path: Path) -> None:
    run_toy(tmp_path, ReplayTokenPolicy(tiny_tokenizer()), mixed_tasks()[:1], max_turns=3)
    [row] = read_jsonl(tmp_path / "results.jsonl")
    row["token_samples"][0]["loss_mask"][-1] = 0  # the stop token is no longer trained
    assert [p.reason for p in check_row(row, 1).problems] == ["token samples differ from the episode's token turns"]
    row = read_jsonl(tmp_path / "results.jsonl")[0]
    row["episode"]["token_turns"] = row["episode"]["token_turns"][:1]
    row["token_samples"] = row["token_samples"]  # built from two turns: now one too many
    reasons = [p.reason for p in check_row(row, 1).problems]
    assert "token turns do not match assistant turns" in reasons


def test_an_error_row_needs_no_assistant_but_must_not_carry_a_reward(tmp_path: Path) -> None:
    run_toy(tmp_path, ReplayTokenPolicy(tiny_tokenizer()), mixed_tasks()[-2:-1], max_turns=3)
    [row] = read_jsonl(tmp_path / "results.jsonl")
    assert row["status"] == "error" and check_row(row, 1).valid
    row["reward"] = 0.0
    assert [p.reason for p in check_row(row, 1).problems] == ["error row carries a reward"]


def test_cli_counts_reasons_and_strict_exits_non_zero(tmp_path: Path) -> None:
    bad = good_row()
    bad["messages"][3].pop("tool_call_id")
    path = write_jsonl_rows(tmp_path / "rows.jsonl", [good_row(), bad, good_row()])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"messages": [\n')  # a torn line: counted, not a crash
    runner = CliRunner()
    lenient = runner.invoke(app, ["data", "validate", str(path)])
    assert lenient.exit_code == 0, lenient.output
    text = "".join(lenient.output.split())  # rich wraps long lines (paths) anywhere
    assert "valid2·invalid2" in text
    assert "toolmessagewithouttool_call_id:1" in text and "invalidJSON:1" in text
    assert f"{path}:2:" in text
    strict = runner.invoke(app, ["data", "validate", str(path), "--strict"])
    assert strict.exit_code == 1
    clean = write_jsonl_rows(tmp_path / "clean.jsonl", [good_row()])
    assert runner.invoke(app, ["data", "validate", str(clean), "--strict"]).exit_code == 0
    missing = runner.invoke(app, ["data", "validate", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "nosuchfile" in "".join(missing.output.split())


def test_report_dict_round_trips_as_json(tmp_path: Path) -> None:
    path = write_jsonl_rows(tmp_path / "rows.jsonl", [good_row()])
    assert json.loads(json.dumps(validate_file(path).to_dict()))["valid"] == 1


def test_cli_validate_with_the_model_counts_the_rows_over_its_context(tmp_path: Path) -> None:
    """Full-style code_host rows overflow the shipped model's context as TRL tokenizes them: validate says how
    many and by how much, for the SFT rows and for the results rows they came from; invalid rows are not measured."""
    from toolgym.data.context import ContextCheck

    context = json.loads((MODEL_DIR / "config.json").read_text())["max_position_embeddings"]
    rows_path, rows = oracle_rows(tmp_path, app_tasks("code_host", 6), "full")
    lengths = trl_lengths(rows)
    over = sorted(n - context for n in lengths if n > context)
    assert over, f"full-style code_host rows fit after all: {lengths}"
    with open(rows_path, "a", encoding="utf-8") as handle:
        handle.write('{"messages": [{"role": "user", "content": "no answer"}]}\n')  # invalid: not measured
    said = (f"{len(over)} of 6 rows overflow it, by up to {over[-1]} tokens (median {statistics.median(over):g}; "
            f"the longest row is {max(lengths)} tokens)")
    for path in (rows_path, tmp_path / "run" / "results.jsonl"):
        result = CliRunner().invoke(app, ["data", "validate", str(path), "--model", "default"])
        assert result.exit_code == 0, result.output
        assert "".join(f"model default: context {context} tokens; as TRL renders them, {said}".split()) in "".join(result.output.split())
    report = validate_file(rows_path, ContextCheck("default")).to_dict()
    assert report["invalid"] == 1 and report["context"] == {
        "model": "default", "context": context, "rows": 6, "longest": max(lengths), "rows_over_context": len(over),
        "overflow_max": over[-1], "overflow_median": statistics.median(over)}
    assert validate_file(rows_path).to_dict()["context"] is None
    bad = CliRunner().invoke(app, ["data", "validate", str(rows_path), "--model", str(tmp_path / "no-model")])
    assert bad.exit_code == 2 and "isnotamodelfolder" in "".join(bad.output.split())
