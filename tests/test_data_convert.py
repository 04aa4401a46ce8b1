"""`toolgym data convert`: every row accounted for, provenance and token samples kept, malformed turns."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from test_agent_support import tiny_tokenizer
from test_integrations_support import MODEL_DIR, app_tasks, oracle_rows, trl_lengths
from test_train_sft_support import (
    ReplayTokenPolicy,
    mixed_tasks,
    oracle_rollout,
    read_jsonl,
    run_toy,
)
from toolgym.cli.main import app
from toolgym.data.convert import ConvertOptions, convert_rows, convert_run
from toolgym.data.rows import iter_lines
from toolgym.data.validate import validate_file
from toolgym.rollout.results import row_to_episode


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Successes, a failure, a malformed-then-recovered success, a truncation and two errors."""
    out = tmp_path_factory.mktemp("mixed")
    run_toy(out, ReplayTokenPolicy(tiny_tokenizer()), mixed_tasks(), max_turns=3)
    return out


def _by_task(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["task_id"]: r for r in rows}


def _trained_ids(sample: dict[str, Any]) -> list[int]:
    return [i for i, m in zip(sample["input_ids"], sample["loss_mask"], strict=True) if m]


def test_convert_then_validate_accounts_for_every_row(mixed_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft.jsonl"
    report = convert_run(mixed_run, out)
    assert report.rows_in == 8 and report.accounted
    assert report.episodes_converted == report.rows_out == 6
    assert dict(report.skipped) == {"status error (infrastructure failure: no reward)": 2}
    assert report.rows_with_tool_calls == 6 and report.rows_with_token_samples == 6
    checked = validate_file(out)
    assert (checked.rows, checked.invalid) == (6, 0)
    sidecar = out.with_name("sft.jsonl.manifest.json")
    assert sidecar.is_file() and '"rows_in": 8' in sidecar.read_text()


def test_rows_keep_provenance_openai_tool_calls_and_the_samplers_ids(mixed_run: Path, tmp_path: Path) -> None:
    convert_run(mixed_run, tmp_path / "sft.jsonl")
    rows = _by_task(read_jsonl(tmp_path / "sft.jsonl"))
    results = _by_task(read_jsonl(mixed_run / "results.jsonl"))
    row = rows["toy/complete/0"]
    for name in ("task_id", "env", "split", "sample_index", "reward", "partial_score", "policy", "checkpoint", "status"):
        assert row[name] == results["toy/complete/0"][name]
    assert row["stop_reason"] == "answer" and row["source"]["line"] == 3
    call = row["messages"][2]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "list_my_notes"
    assert isinstance(call["function"]["arguments"], str) and call["id"]
    assert row["messages"][3]["tool_call_id"] == call["id"]
    assert row["tools"] == results["toy/complete/0"]["tool_defs"]
    # token samples are the run's own, untouched
    assert row["token_samples"] == results["toy/complete/0"]["token_samples"]
    assert rows["toy/list/wrong"]["reward"] == 0.0 and rows["toy/list/loop"]["status"] == "truncated"


def test_format_feedback_becomes_a_user_message_and_the_malformed_turn_is_not_trained(
        mixed_run: Path, tmp_path: Path) -> None:
    report = convert_run(mixed_run, tmp_path / "sft.jsonl")
    assert (report.feedback_rewritten, report.turns_not_trained) == (1, 1)
    row = _by_task(read_jsonl(tmp_path / "sft.jsonl"))["toy/add/recovered"]
    roles = [(m["role"], m.get("weight")) for m in row["messages"]]
    assert roles == [("system", None), ("user", None), ("assistant", 0), ("user", None), ("assistant", None),
                     ("tool", None), ("assistant", None)]
    assert row["messages"][3]["content"].startswith("Error: your tool call could not be read.")
    assert all(m.get("tool_call_id") for m in row["messages"] if m["role"] == "tool")
    episode = row_to_episode(_by_task(read_jsonl(mixed_run / "results.jsonl"))["toy/add/recovered"])
    malformed, call, answer = (t.completion_ids for t in episode.token_turns)
    [sample] = row["token_samples"]
    assert _trained_ids(sample) == call + answer  # the malformed call stays context, untrained
    assert sample["input_ids"][: len(episode.token_turns[0].prompt_ids) + len(malformed)] == [
        *episode.token_turns[0].prompt_ids, *malformed]


def test_train_malformed_turns_keeps_them_trained(mixed_run: Path, tmp_path: Path) -> None:
    report = convert_run(mixed_run, tmp_path / "sft.jsonl", ConvertOptions(train_malformed_turns=True))
    assert report.turns_not_trained == 0 and report.feedback_rewritten == 1
    row = _by_task(read_jsonl(tmp_path / "sft.jsonl"))["toy/add/recovered"]
    episode = row_to_episode(_by_task(read_jsonl(mixed_run / "results.jsonl"))["toy/add/recovered"])
    assert _trained_ids(row["token_samples"][0]) == [i for t in episode.token_turns for i in t.completion_ids]


def test_a_turn_cut_off_by_the_token_budget_is_context_not_training(tmp_path: Path) -> None:
    task = mixed_tasks()[1].model_copy(update={"id": "toy/add/cut", "metadata": {"cut_off_answer": True}})
    run_toy(tmp_path, ReplayTokenPolicy(tiny_tokenizer()), [task], max_turns=3)
    [result] = read_jsonl(tmp_path / "results.jsonl")
    assert (result["status"], result["stop_condition"]) == ("truncated", "max_tokens")
    rows, report = convert_rows(iter_lines(tmp_path / "results.jsonl"))
    assert report.turns_not_trained == 1 and report.accounted
    [row] = rows
    assert [m.get("weight") for m in row["messages"] if m["role"] == "assistant"] == [None, 0]
    call, cut = (t.completion_ids for t in row_to_episode(result).token_turns)
    assert _trained_ids(row["token_samples"][0]) == call
    # nothing follows the cut turn, so the sample simply ends after the last trained turn
    assert row["token_samples"][0]["input_ids"][-len(call):] == call and cut


def test_filters_skip_with_reasons_and_still_account_for_every_row(mixed_run: Path) -> None:
    rows, report = convert_rows(iter_lines(mixed_run / "results.jsonl"), ConvertOptions(min_reward=1.0, statuses=("ok",)))
    assert report.accounted and report.rows_in == 8
    assert dict(report.skipped) == {
        "status error (infrastructure failure: no reward)": 2,
        "status truncated not selected": 1,
        "reward below 1": 1,
    }
    assert sorted(r["task_id"] for r in rows) == ["toy/add/0", "toy/add/recovered", "toy/complete/0", "toy/list/0"]


def test_turn_mode_writes_one_row_per_trained_turn_with_that_turns_ids(mixed_run: Path) -> None:
    rows, report = convert_rows(iter_lines(mixed_run / "results.jsonl"), ConvertOptions(row_mode="turn"))
    results = _by_task(read_jsonl(mixed_run / "results.jsonl"))
    # list 2 + add 2 + complete 3 + wrong 2 + recovered 2 (of 3: one malformed) + loop 3 = 14
    assert report.rows_out == len(rows) == 14 and report.episodes_converted == 6 and report.accounted
    for row in rows:
        episode = row_to_episode(results[row["task_id"]])
        turn = episode.token_turns[row["turn"]]
        [sample] = row["token_samples"]
        assert sample["input_ids"] == turn.prompt_ids + turn.completion_ids
        assert _trained_ids(sample) == turn.completion_ids
        assistants = [m for m in row["messages"] if m["role"] == "assistant"]
        assert row["messages"][-1]["role"] == "assistant" and "weight" not in row["messages"][-1]
        assert all(m["weight"] == 0 for m in assistants[:-1])


def test_dedupe_drops_repeated_episodes(tmp_path: Path) -> None:
    tasks = mixed_tasks()[:2]
    run_toy(tmp_path, ReplayTokenPolicy(tiny_tokenizer()), tasks, max_turns=3, samples_per_task=3)
    rows, report = convert_rows(iter_lines(tmp_path / "results.jsonl"), ConvertOptions(dedupe=True))
    assert report.rows_in == 6 and len(rows) == 2 and report.skipped == {"duplicate": 4} and report.accounted
    turn_rows, turn_report = convert_rows(iter_lines(tmp_path / "results.jsonl"),
                                          ConvertOptions(dedupe=True, row_mode="turn"))
    assert len(turn_rows) == 4 and turn_report.duplicate_turns == 8 and turn_report.episodes_converted == 6


def test_oracle_teacher_rows_have_the_same_shape_without_token_samples(tmp_path: Path) -> None:
    oracle_rollout(tmp_path / "run", mixed_tasks()[:3])
    report = convert_run(tmp_path / "run", tmp_path / "sft.jsonl")
    assert (report.rows_in, report.rows_out, sum(report.skipped.values())) == (3, 3, 0)
    rows = read_jsonl(tmp_path / "sft.jsonl")
    assert all("token_samples" not in r and r["policy"] == "oracle" for r in rows)
    assert validate_file(tmp_path / "sft.jsonl").invalid == 0
    system = rows[0]["messages"][0]["content"]
    assert "list_my_notes()" in system  # compact style: tool signatures in the system prompt


def test_unreadable_and_foreign_lines_are_skipped_with_reasons(mixed_run: Path, tmp_path: Path) -> None:
    lines = (mixed_run / "results.jsonl").read_text().splitlines()
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join([lines[0], '{"messages": []}', '{"task_id": ', lines[1]]) + "\n")
    rows, report = convert_rows(iter_lines(path), source=str(path))
    assert len(rows) == 2 and report.accounted and report.valid_rows == 2
    assert dict(report.skipped) == {"invalid: invalid JSON": 1, "invalid: no assistant message": 1}
    assert [(line, p.reason) for line, p in report.invalid] == [(2, "no assistant message"), (3, "invalid JSON")]
    assert f"invalid row {path}:3: invalid JSON: Expecting value" in report.render()


def test_cli_convert_prints_counts(mixed_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    result = CliRunner().invoke(app, ["data", "convert", str(mixed_run), "--out", str(out), "--status", "ok",
                                      "--row-mode", "episode"])
    assert result.exit_code == 0, result.output
    text = result.output.replace("\n", " ")
    assert "rows in 8" in text and "rows out 5" in text and "status truncated not selected: 1" in text
    assert len(read_jsonl(out)) == 5
    bad = CliRunner().invoke(app, ["data", "convert", str(mixed_run), "--out", str(out), "--row-mode", "chat"])
    assert bad.exit_code == 2 and "row mode" in bad.output


def test_rows_come_out_in_task_order_whatever_order_the_episodes_finished_in(tmp_path: Path) -> None:
    """Concurrent rollouts append in completion order; the SFT file (and so a seeded SFT) must not depend on it."""
    run_toy(tmp_path, ReplayTokenPolicy(tiny_tokenizer()), mixed_tasks()[:4], max_turns=3, samples_per_task=2)
    lines = list(iter_lines(tmp_path / "results.jsonl"))
    finished_late_first = list(reversed(lines))
    rows, _ = convert_rows(lines)
    rows_reversed, _ = convert_rows(finished_late_first)
    keys = [(r["task_id"], r["sample_index"]) for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys) >= 4
    assert [{k: v for k, v in r.items() if k != "source"} for r in rows] == [
        {k: v for k, v in r.items() if k != "source"} for r in rows_reversed]


def test_cli_convert_reads_a_config_file_then_set_overrides(mixed_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    config = tmp_path / "convert.yaml"
    config.write_text(f"out: {out}\nstatuses: [ok]\nrow_mode: turn\n")
    result = CliRunner().invoke(app, ["data", "convert", str(mixed_run), "--config", str(config),
                                      "--set", "row_mode=episode"])
    assert result.exit_code == 0, result.output
    text = result.output.replace("\n", " ")
    assert "rows out 5" in text and "status truncated not selected: 1" in text  # the file's statuses
    assert len(read_jsonl(out)) == 5  # episode rows: the override won over the file's turn mode
    manifest = json.loads(out.with_name("rows.jsonl.manifest.json").read_text())
    assert manifest["options"]["statuses"] == ["ok"] and manifest["options"]["row_mode"] == "episode"
    config.write_text(f"out: {out}\nrow_mode: turn\nmin_rewrd: 1\n")
    bad = CliRunner().invoke(app, ["data", "convert", str(mixed_run), "--config", str(config)])
    assert bad.exit_code == 2
    text = bad.output.replace("\n", " ")
    assert f"{config}" in text and "field min_rewrd: unknown setting" in text and "(line 3)" in text
    missing = CliRunner().invoke(app, ["data", "convert", str(mixed_run)])
    assert missing.exit_code == 2 and "needs --out" in missing.output


def test_cli_convert_with_the_model_counts_the_rows_over_its_context(tmp_path: Path) -> None:
    """code_host rows in the full prompt style run past the shipped model's context as TRL tokenizes them; the
    report says how many and by how much, and compact rows of the same episodes fit."""
    context = json.loads((MODEL_DIR / "config.json").read_text())["max_position_embeddings"]
    tasks = app_tasks("code_host", 6)
    texts, reports = {}, {}
    for style in ("full", "compact"):
        oracle_rows(tmp_path / style, tasks, style)
        out = tmp_path / f"{style}.jsonl"
        result = CliRunner().invoke(app, ["data", "convert", str(tmp_path / style / "run"), "--out", str(out),
                                          "--model", "default"])
        assert result.exit_code == 0, result.output
        texts[style] = "".join(result.output.split())  # rich wraps long lines
        reports[style] = json.loads(out.with_name(out.name + ".manifest.json").read_text())["report"]["context"]
    lengths = trl_lengths(read_jsonl(tmp_path / "full.jsonl"))
    over = sorted(n - context for n in lengths if n > context)
    assert over, f"full-style code_host rows fit after all: {lengths}"
    assert reports["full"] == {"model": "default", "context": context, "rows": 6, "longest": max(lengths),
                               "rows_over_context": len(over), "overflow_max": over[-1],
                               "overflow_median": statistics.median(over)}
    said = (f"model default: context {context} tokens; as TRL renders them, {len(over)} of 6 rows overflow it, by up "
            f"to {over[-1]} tokens (median {statistics.median(over):g}; the longest row is {max(lengths)} tokens)")
    assert "".join(said.split()) in texts["full"]
    compact = trl_lengths(read_jsonl(tmp_path / "compact.jsonl"))
    assert max(compact) <= context and reports["compact"]["rows_over_context"] == 0
    assert f"all6rowsfit(thelongestis{max(compact)}tokens)" in texts["compact"]
    plain = CliRunner().invoke(app, ["data", "convert", str(tmp_path / "full" / "run"), "--out",
                                     str(tmp_path / "plain.jsonl")])  # no model: nothing measured
    assert plain.exit_code == 0 and "as TRL renders them" not in plain.output
    assert json.loads((tmp_path / "plain.jsonl.manifest.json").read_text())["report"]["context"] is None
    bad = CliRunner().invoke(app, ["data", "convert", str(tmp_path / "full" / "run"), "--out", str(tmp_path / "x.jsonl"),
                                   "--model", str(tmp_path / "no-model")])
    assert bad.exit_code == 2 and "isnotamodelfolder" in "".join(bad.output.split())
