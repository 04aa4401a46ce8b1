"""Eval tables from results.jsonl written through episode_to_row: errors counted and out of denominators."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from test_eval_support import episode, suite_tasks, write_results
from toolgym.cli.main import app
from toolgym.eval.evaluate import EvalConfig, run_eval
from toolgym.eval.passk import pass_at_k, pass_hat_k
from toolgym.eval.records import load_run, read_records
from toolgym.eval.summary import summarize
from toolgym.eval.tables import format_estimate, format_rate, summary_markdown, summary_tables
from toolgym.policy.oracle import OraclePolicy
from toolgym.schema.jsonl import JsonlError, write_jsonl


def _mixed_run(path: Path) -> Path:
    """Task A: pass, fail, error. Task B: three passes. Task C: three errors. All train / booking."""
    episodes = [
        episode("A", outcome="pass", sample_index=0), episode("A", outcome="fail", sample_index=1),
        episode("A", outcome="error", sample_index=2),
        *[episode("B", outcome="pass", sample_index=i) for i in range(3)],
        *[episode("C", outcome="error", sample_index=i) for i in range(3)],
    ]
    return write_results(path / "results.jsonl", episodes)


def test_errored_rows_are_counted_and_left_out_of_denominators(tmp_path: Path) -> None:
    _mixed_run(tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in rows if r["status"] == "error"] == [None] * 4  # never a 0
    summary = summarize(load_run(tmp_path), ks=[1, 2, 3])
    group = summary.group("train")
    assert group is not None and len(group.rows) == 1
    cell = group.rows[0]
    assert (cell.tasks, cell.episodes, cell.errored, cell.scored, cell.passes) == (3, 9, 4, 5, 4)
    assert cell.unscored_tasks == 1  # task C: every episode errored
    assert format_rate(cell.pass_rate).startswith("4/5 · 80.0%")
    # pass@1 over scored tasks: A = 1/2, B = 1 → 1.5 of 2 tasks (C is in no denominator)
    assert cell.pass_at[1].expected == pytest.approx(1.5) and cell.pass_at[1].tasks == 2
    assert format_estimate(cell.pass_at[1]).startswith("1.5/2 · 75.0%")
    # pass@2: A (n=2, c=1) → 1, B → 1; pass^2: A → 0, B → 1
    assert (cell.pass_at[2].expected, cell.pass_at[2].tasks) == (pytest.approx(2.0), 2)
    assert (cell.pass_hat[2].expected, cell.pass_hat[2].tasks) == (pytest.approx(1.0), 2)
    # pass@3: A has only 2 scored samples → left out and counted (†1); B → 1
    assert (cell.pass_at[3].tasks, cell.pass_at[3].short_tasks) == (1, 1)
    assert format_estimate(cell.pass_at[3]).endswith("†1")
    markdown = summary_markdown(summary)
    assert "| 3 (1 all errored) | 9 | 4/9 | 4/5 · 80.0% [37.6–96.4] |" in markdown
    assert "†: tasks with fewer than k scored samples" in markdown


def test_estimates_match_the_estimators_on_uneven_samples(tmp_path: Path) -> None:
    """Tasks with n = 4, 3 (one errored) and 4 samples: per-task estimators, averaged."""
    outcomes = {"T1": ["pass", "fail", "fail", "pass"], "T2": ["fail", "error", "pass", "fail"],
                "T3": ["fail", "fail", "fail", "fail"]}
    episodes = [episode(t, outcome=o, sample_index=i, split="heldout_tasks")
                for t, values in outcomes.items() for i, o in enumerate(values)]
    write_results(tmp_path / "results.jsonl", episodes)
    cell = summarize(load_run(tmp_path), ks=[1, 2, 4]).group("heldout_tasks").total  # type: ignore[union-attr]
    expected_2 = pass_at_k(4, 2, 2) + pass_at_k(3, 1, 2) + pass_at_k(4, 0, 2)
    assert cell.pass_at[2].expected == pytest.approx(expected_2)
    assert cell.pass_hat[2].expected == pytest.approx(pass_hat_k(4, 2, 2) + pass_hat_k(3, 1, 2))
    assert (cell.pass_at[4].tasks, cell.pass_at[4].short_tasks) == (2, 1)  # T2 has 3 scored samples
    assert cell.pass_rate.successes == 3 and cell.pass_rate.total == 11


def test_k_beyond_every_task_says_so_instead_of_estimating(tmp_path: Path) -> None:
    write_results(tmp_path / "results.jsonl", [episode("A"), episode("B", outcome="fail")])
    cell = summarize(load_run(tmp_path), ks=[1, 4]).group("train").total  # type: ignore[union-attr]
    assert not cell.pass_at[4].available
    assert format_estimate(cell.pass_at[4]) == "n/a (n=1 < k=4)"
    assert "n/a (n=m < k)" in summary_markdown(summarize(load_run(tmp_path), ks=[1, 4]))


def test_every_rate_in_the_tables_has_numerator_and_denominator(tmp_path: Path) -> None:
    _mixed_run(tmp_path)
    for table in summary_tables(summarize(load_run(tmp_path), ks=[1, 2])):
        for row in table.rows:
            for cell in row:
                if "%" in cell:
                    assert re.match(r"^\d+(\.\d)?/\d+ · \d+\.\d% \[\d+\.\d–\d+\.\d\]", cell), cell


def test_trials_and_greedy_from_an_eval_folder(tmp_path: Path) -> None:
    write_results(tmp_path / "trial-1" / "results.jsonl",
                  [episode("A", split="heldout_env", env="mail"), episode("B", split="heldout_env", env="mail")])
    write_results(tmp_path / "trial-2" / "results.jsonl",
                  [episode("A", split="heldout_env", env="mail"),
                   episode("B", outcome="fail", split="heldout_env", env="mail")])
    write_results(tmp_path / "greedy" / "results.jsonl",
                  [episode("A", split="heldout_env", env="mail"),
                   episode("B", outcome="error", split="heldout_env", env="mail")])
    summary = summarize(load_run(tmp_path), ks=[1, 2])
    group = summary.group("heldout_env")
    assert group is not None and group.greedy is not None
    assert (group.total.passes, group.total.scored) == (3, 4)  # trials pooled: n = 2 per task
    assert group.total.pass_at[2].expected == pytest.approx(2.0)
    assert (group.greedy.passes, group.greedy.scored, group.greedy.errored) == (1, 1, 1)
    trials = {(t.trial, t.split): (t.stats.passes, t.stats.scored) for t in summary.trials}
    assert trials == {("trial-1", "heldout_env"): (2, 2), ("trial-2", "heldout_env"): (1, 2)}
    markdown = summary_markdown(summary)
    assert "| greedy pass@1 (T=0, 1 sample) | 2 (1 all errored) | 2 | 1/2 | 1/1 · 100.0%" in markdown
    assert "| trial-2 | held-out env | 2 | 2 | 0/2 | 1/2 · 50.0%" in markdown


def test_tasks_by_sampled_success_cross_the_greedy_pass(tmp_path: Path) -> None:
    outcomes = {"A": ("pass", "pass", "pass"), "B": ("pass", "fail", "error"), "C": ("fail", "fail", "fail"),
                "D": ("fail", "pass", "fail"), "E": ("pass", "error", "error")}
    sampled = [episode(task, outcome=o, sample_index=i) for task, row in outcomes.items() for i, o in enumerate(row)]
    greedy = {"A": "pass", "B": "pass", "C": "fail", "D": "fail", "E": "fail"}
    write_results(tmp_path / "trial-1" / "results.jsonl", sampled)
    write_results(tmp_path / "greedy" / "results.jsonl", [episode(t, outcome=o) for t, o in greedy.items()])
    group = summarize(load_run(tmp_path)).group("train")
    assert group is not None
    assert group.spread is None  # E has one scored sample: "sometimes" cannot be told from it
    write_results(tmp_path / "trial-1" / "results.jsonl", [e for e in sampled if e.task_id != "E"])
    summary = summarize(load_run(tmp_path))
    spread = summary.group("train").spread  # type: ignore[union-attr]
    assert spread is not None and spread.tasks == 4
    assert spread.counts == {"never": 1, "sometimes": 2, "always": 1}  # B: 1 of 2 scored (its error left out)
    assert spread.by_greedy == {"fails": {"never": 1, "sometimes": 1, "always": 0},
                                "passes": {"never": 0, "sometimes": 1, "always": 1}}
    markdown = summary_markdown(summary)
    assert "| train | 4 | 1/4 | 2/4 | 1/4 | 1 | 1 |" in markdown


def test_bad_rows_are_named_by_file_and_line(tmp_path: Path) -> None:
    path = write_results(tmp_path / "results.jsonl", [episode("A")])
    with open(path, "a") as handle:
        handle.write('{"task_id": "B", "sample_index": 0}\n')
    with pytest.raises(JsonlError, match=r"results.jsonl:2:? field 'env'"):
        read_records(path)
    write_results(path, [episode("A", split="train")])
    row = json.loads(path.read_text())
    row["split"] = "validation"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match="unknown split"):
        summarize(load_run(tmp_path))


def test_run_eval_with_the_oracle_writes_trials_greedy_and_tables(tmp_path: Path) -> None:
    tasks = suite_tasks()
    config = EvalConfig(samples_per_task=2, trials=2, ks=[1, 2, 4, 5], concurrency=4, max_turns=8)
    assert config.warnings() == ["pass@5 needs n ≥ 5 samples per task but this eval draws 4 (2 × 2 trials): "
                                 "it will be reported as n/a"]
    result = asyncio.run(run_eval(tasks, OraclePolicy(), out_dir=tmp_path, config=config))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["kind"] == "eval" and manifest["trial_layout"] == "sub-run"
    assert [(t["dir"], t["seed"]) for t in manifest["trials"]] == [("trial-1", 0), ("trial-2", 1)]
    assert manifest["greedy"] == {"dir": "greedy", "temperature": 0.0}
    assert json.loads((tmp_path / "greedy" / "manifest.json").read_text())["sampling"]["temperature"] == 0.0
    held_out = result.summary.group("heldout_tasks")
    assert held_out is not None
    # the crashing-verifier task errors in every sample; the unreachable one fails; the rest pass
    total = held_out.total
    assert total.errored == 4 and total.unscored_tasks == 1
    assert total.scored == total.episodes - 4
    assert total.passes == total.scored - 4
    assert not total.pass_at[5].available
    saved = json.loads((tmp_path / "eval.json").read_text())
    assert saved["groups"][1]["total"]["errored"] == 4
    assert (tmp_path / "eval.md").read_text().count("| greedy pass@1 (T=0") == 3  # one row per split


def test_eval_cli_runs_and_prints_tables(tmp_path: Path) -> None:
    tasks = suite_tasks()[:4]
    write_jsonl(tmp_path / "data" / "tasks.jsonl", tasks)
    result = CliRunner().invoke(app, [
        "eval", "--tasks", str(tmp_path / "data"), "--policy", "oracle", "--samples", "2", "--trials", "1",
        "--k", "1,2", "--out", str(tmp_path / "out"), "--no-progress",
    ], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert "Training environments (train tasks)" in result.output
    assert (tmp_path / "out" / "trial-1" / "results.jsonl").is_file()
    shown = CliRunner().invoke(app, ["eval", "show", str(tmp_path / "out"), "--k", "2"], env={"COLUMNS": "240"})
    assert shown.exit_code == 0 and "pass@2" in shown.output
    missing = CliRunner().invoke(app, ["eval", "--policy", "oracle"])
    assert missing.exit_code == 2 and "needs --tasks, --policy and --out" in missing.output
    bad_k = CliRunner().invoke(app, ["eval", "show", str(tmp_path / "out"), "--k", "two"])
    assert bad_k.exit_code != 0 and "comma-separated integers" in bad_k.output


def test_greedy_only_eval_has_tables_from_its_greedy_pass(tmp_path: Path) -> None:
    """trials 0: one greedy pass and no sampled trials (the cheap eval of the quickstart)."""
    tasks = suite_tasks()
    with pytest.raises(ValueError, match="greedy only"):
        EvalConfig(trials=0, greedy=False)
    config = EvalConfig(trials=0, ks=[1], concurrency=4, max_turns=8)
    assert config.samples_in_total == 1 and config.warnings() == []
    result = asyncio.run(run_eval(tasks, OraclePolicy(), out_dir=tmp_path, config=config))
    assert not list(tmp_path.glob("trial-*")) and (tmp_path / "greedy" / "results.jsonl").is_file()
    run = load_run(tmp_path)
    assert run.sampled == [] and len(run.greedy) == len(tasks)  # no episode counted twice
    held_out = result.summary.group("heldout_tasks")
    assert held_out is not None and held_out.greedy is not None
    assert (held_out.total.passes, held_out.total.scored) == (held_out.greedy.passes, held_out.greedy.scored)
    assert held_out.total.errored == 1  # the crashing verifier, once
    assert held_out.total.pass_at[1].available
