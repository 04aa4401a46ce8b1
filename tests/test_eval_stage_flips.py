"""Greedy-only runs in the trace diff, and the stage-by-stage flips by task family in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_eval_support import episode
from toolgym.eval.records import load_run
from toolgym.eval.report import write_report
from toolgym.eval.stage_flips import stage_flips, stage_flips_table
from toolgym.eval.traces import diff_runs
from toolgym.pipeline.summary import (
    acceptance,
    comparisons,
    load_stage_runs,
    paired_tests,
    stage_results,
    task_flips,
)
from toolgym.rollout.results import episode_to_row

FAMILY = {"T1": "assign", "T2": "assign", "T3": "count", "T4": "count", "T5": "close"}


def _greedy_run(folder: Path, passing: set[str]) -> Path:
    """A greedy-only eval folder (what `toolgym eval --trials 0` writes) over T1..T5 with each task's family."""
    path = folder / "greedy" / "results.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for task_id, family in FAMILY.items():
            row = episode_to_row(episode(task_id, env="code_host", split="heldout_tasks",
                                         outcome="pass" if task_id in passing else "fail"))
            row["info"]["family"] = family
            handle.write(json.dumps(row) + "\n")
    return folder


def test_greedy_only_runs_are_compared_on_their_greedy_passes(tmp_path: Path) -> None:
    a = load_run(_greedy_run(tmp_path / "a", {"T1"}), name="a")
    b = load_run(_greedy_run(tmp_path / "b", {"T2", "T3"}), name="b")
    diff = diff_runs(a, b)
    assert diff.measure == "greedy" and len(diff.pairs) == 5
    assert sorted((f.task_id, f.direction) for f in diff.flips) == [
        ("T1", "pass→fail"), ("T2", "fail→pass"), ("T3", "fail→pass")]
    assert diff.same_denominator is not None and (diff.same_denominator.a.successes,
                                                  diff.same_denominator.b.successes) == (1, 2)
    assert diff_runs(a, b, greedy=False).pairs == []  # asked for the trials: there are none


def test_stage_flips_count_wins_and_losses_per_family_and_skip_runs_on_other_tasks(tmp_path: Path) -> None:
    untrained = load_run(_greedy_run(tmp_path / "untrained", set()), name="untrained")
    rollout_dir = tmp_path / "rollout"  # sampled episodes of other (train) tasks: nothing to pair with
    rollout_dir.mkdir()
    (rollout_dir / "results.jsonl").write_text(json.dumps(episode_to_row(episode("X9"))) + "\n")
    rollout = load_run(rollout_dir, name="rollout")
    sft = load_run(_greedy_run(tmp_path / "sft", {"T1", "T2", "T3"}), name="sft")
    grpo = load_run(_greedy_run(tmp_path / "grpo", {"T3", "T4", "T5"}), name="grpo")
    chain = stage_flips([untrained, rollout, sft, grpo])
    assert [(c.before, c.after) for c in chain] == [("untrained", "sft"), ("sft", "grpo")]
    first, second = chain
    assert dict(first.won) == {"code_host/assign": 2, "code_host/count": 1} and not first.lost
    assert dict(second.won) == {"code_host/count": 1, "code_host/close": 1}
    assert dict(second.lost) == {"code_host/assign": 2}
    row = stage_flips_table(chain).rows[1]
    assert row[3:6] == ["2", "2", "+0"]
    assert row[7] == "code_host/assign −2; code_host/close +1; code_host/count +1"


def test_pipeline_report_has_the_stage_by_stage_section_without_the_control(tmp_path: Path) -> None:
    root = tmp_path / "run"
    _greedy_run(root / "eval" / "untrained", set())
    _greedy_run(root / "eval" / "random_init", {"T5"})
    _greedy_run(root / "eval" / "sft", {"T1", "T2"})
    _greedy_run(root / "eval" / "grpo", {"T1", "T3"})
    write_report(root)
    text = (root / "report.md").read_text()
    section = text.split("## Stage by stage", 1)[1].split("\n## ", 1)[0]
    assert "eval/untrained → eval/sft | greedy | 5 | 2 | 0 | +2" in section
    assert "eval/sft → eval/grpo | greedy | 5 | 1 | 1 | +0" in section
    assert "random_init" not in section
    trace = text.split("## Trace diff", 1)[1].split("\n## ", 1)[0]
    assert "(their greedy passes)" in trace and "no scored pairs" not in trace


def test_summary_comparisons_carry_the_tasks_won_and_lost_and_the_paired_test(tmp_path: Path) -> None:
    dirs = {"untrained": _greedy_run(tmp_path / "untrained", set()),
            "sft": _greedy_run(tmp_path / "sft", {"T1", "T2", "T3"}),
            "grpo": _greedy_run(tmp_path / "grpo", {"T1", "T2", "T3", "T4", "T5"})}
    runs = load_stage_runs(dirs)
    results = stage_results(runs, [1])
    flips = task_flips(runs)
    paired = paired_tests(runs)
    found = {(c["from"], c["to"]): c for c in comparisons(results, flips, paired) if c["split"] == "heldout_tasks"}
    gain = found[("sft", "grpo")]
    assert (gain["tasks_won"], gain["tasks_lost"]) == (2, 0)
    assert gain["by_family"] == {"code_host/close": {"won": 1, "lost": 0}, "code_host/count": {"won": 1, "lost": 0}}
    assert gain["paired_p_value"] == pytest.approx(0.5)  # exact binomial: 2 discordant pairs, both one way
    assert gain["test"] == "McNemar exact (2 only-B vs 0 only-A)" and gain["p_value"] == pytest.approx(0.5)
    verdict = acceptance(results, "heldout_tasks", 0.3, 5.0, flips, paired)
    assert (verdict["grpo_tasks_won"], verdict["grpo_tasks_lost"]) == (2, 0)
    assert verdict["grpo_gain_paired_p_value"] == pytest.approx(0.5) and verdict["grpo_meets_gain"]
