"""Leakage between training data and eval tasks, by task id and by normalized prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from test_eval_support import episode, suite_tasks, write_results
from toolgym.cli.main import app
from toolgym.eval.leakage import check_files, check_leakage, normalize_prompt, read_items
from toolgym.schema.jsonl import JsonlError, write_jsonl


def test_normalize_prompt_ignores_case_punctuation_and_spacing() -> None:
    assert normalize_prompt("Book the  'Standard Queen' at Spears House, Boston!") == \
        normalize_prompt("book the standard queen at spears house boston")
    assert normalize_prompt("ＡＢＣ\u00a0 def") == "abc def"  # NFKC: full-width letters, no-break space
    assert normalize_prompt("cancel booking 12") != normalize_prompt("cancel booking 13")


def _sft_row(task_id: str | None, prompt: str, where: str = "metadata") -> dict:
    row: dict = {"messages": [{"role": "system", "content": "tools…"}, {"role": "user", "content": prompt},
                              {"role": "assistant", "content": "ok"}], "tools": []}
    if task_id is not None:
        row[where] = {"task_id": task_id} if where != "task_id" else task_id
    return row


def test_dataset_split_sft_rows_and_results_rows(tmp_path: Path) -> None:
    tasks = suite_tasks()
    dataset = tmp_path / "data" / "tasks.jsonl"
    write_jsonl(dataset, tasks)
    train = [t for t in tasks if t.split == "train"]
    held = [t for t in tasks if t.split != "train"]
    # a dataset alone is clean: its own eval tasks are not training data
    clean = check_files([dataset], dataset)
    assert clean.clean and clean.train_items == len(train) and clean.eval_items == len(held)
    assert "leakage check passed" in clean.headline()
    # SFT rows: one copies an eval task's id, one re-cases and re-punctuates another eval prompt
    sft = tmp_path / "sft.jsonl"
    write_jsonl(sft, [
        _sft_row(held[0].id, "something else entirely"),
        _sft_row(None, held[1].prompt.upper().replace(",", " ,") + "!!"),
        _sft_row(train[0].id, train[0].prompt, where="task_id"),
    ])
    report = check_files([dataset, sft], dataset)
    found = {(o.by, o.eval_item.task_id) for o in report.overlaps}
    assert found == {("task id", held[0].id), ("prompt", held[1].id)}
    assert report.overlaps[0].train_item.origin.endswith("sft.jsonl:1")
    assert report.headline().startswith(f"LEAKAGE: 2/{len(held)} eval task(s)")
    # results rows (teacher trajectories) are read by task_id and first user message
    results = write_results(tmp_path / "teacher" / "results.jsonl", [episode(held[2].id)])
    assert {(o.by, o.eval_item.task_id) for o in check_files([results], dataset).overlaps} == {("task id", held[2].id)}


def test_unreadable_training_rows_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "rows.jsonl"
    bad.write_text(json.dumps({"text": "no messages, no id"}) + "\n")
    with pytest.raises(JsonlError, match=r"rows.jsonl:1"):
        read_items(bad, train_only=True)
    with pytest.raises(FileNotFoundError):
        check_files([], tmp_path / "missing")


def test_leakage_cli_exit_codes(tmp_path: Path) -> None:
    tasks = suite_tasks()
    dataset = tmp_path / "tasks.jsonl"
    write_jsonl(dataset, tasks)
    ok = CliRunner().invoke(app, ["eval", "leakage", "--train", str(dataset), "--tasks", str(dataset)],
                            env={"COLUMNS": "300"})
    assert ok.exit_code == 0 and "leakage check passed" in ok.output
    held = next(t for t in tasks if t.split != "train")
    sft = tmp_path / "sft.jsonl"
    write_jsonl(sft, [_sft_row(None, held.prompt)])
    leak = CliRunner().invoke(app, ["eval", "leakage", "--train", str(sft), "--tasks", str(dataset)],
                              env={"COLUMNS": "300"})
    assert leak.exit_code == 1 and f"prompt of eval task '{held.id}'" in leak.output
    settings = tmp_path / "leakage.yaml"
    settings.write_text(f"train: [{sft}]\ntasks: {dataset}\n")
    from_file = CliRunner().invoke(app, ["eval", "leakage", "--config", str(settings)], env={"COLUMNS": "300"})
    assert from_file.exit_code == 1 and f"prompt of eval task '{held.id}'" in from_file.output
    one_side = CliRunner().invoke(app, ["eval", "leakage", "--train", str(sft)], env={"COLUMNS": "300"})
    assert one_side.exit_code == 2 and "needs training data" in one_side.output


def test_check_leakage_reports_both_kinds_for_one_task() -> None:
    from toolgym.eval.leakage import PromptItem

    report = check_leakage([PromptItem("a", "Hello there", "train:1")], [PromptItem("a", "hello, there.", "eval:1")])
    assert [o.by for o in report.overlaps] == ["task id", "prompt"]
    assert report.headline().startswith("LEAKAGE: 1/1 eval task(s)")
