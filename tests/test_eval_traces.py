"""Trace diff numbers computed by hand, the seed's 24/180 vs 19/180 through the diff, and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy.stats import norm, wilcoxon
from typer.testing import CliRunner

from test_eval_support import episode, write_results
from toolgym.cli.main import app
from toolgym.eval.records import load_run
from toolgym.eval.traces import diff_runs, diff_tables, trace_stats


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    a = [
        episode("T1", outcome="pass", sample_index=0, tools={"search": 2}, turns=3, output_tokens=[10, 20]),
        episode("T1", outcome="fail", sample_index=1, tools={"search": 1}, turns=2, format_errors=1, output_tokens=[5]),
        episode("T2", outcome="fail", sample_index=0, turns=1, final_answer=None, output_tokens=[7]),
        episode("T2", outcome="fail", sample_index=1, tools={"search": 1}, turns=2, stop_reason="timeout",
                final_answer=None, output_tokens=[9]),
        episode("T3", outcome="error", sample_index=0),
        episode("T3", outcome="pass", sample_index=1, tools={"book": 1}, turns=2, output_tokens=[4]),
        episode("T4", outcome="pass", sample_index=0, tools={"search": 1, "book": 1}, turns=3, output_tokens=[6]),
    ]
    b = [
        episode("T1", outcome="fail", sample_index=0, tools={"search": 1}, turns=2, output_tokens=[3]),
        episode("T1", outcome="fail", sample_index=1, turns=1, output_tokens=[3]),
        episode("T2", outcome="pass", sample_index=0, tools={"search": 1, "book": 1}, turns=3, output_tokens=[8]),
        episode("T2", outcome="pass", sample_index=1, tools={"search": 1}, turns=2, output_tokens=[8]),
        episode("T3", outcome="pass", sample_index=0, tools={"book": 1}, turns=2, output_tokens=[2]),
        episode("T3", outcome="error", sample_index=1),
        episode("T4", outcome="pass", sample_index=0, tools={"search": 2}, turns=3, output_tokens=[4]),
        episode("T4", outcome="pass", sample_index=1, turns=1, output_tokens=[1]),
    ]
    write_results(tmp_path / "a" / "results.jsonl", a)
    write_results(tmp_path / "b" / "results.jsonl", b)
    return tmp_path / "a", tmp_path / "b"


def test_behaviour_numbers_by_hand(tmp_path: Path) -> None:
    path_a, _ = _runs(tmp_path)
    stats = trace_stats("a", load_run(path_a).sampled)
    assert (stats.episodes, stats.errored, stats.scored, stats.passes, stats.timeouts) == (7, 1, 6, 3, 1)
    assert stats.final_answers == 4  # the two T2 episodes never answered
    assert stats.with_tool_calls == 5 and stats.with_format_errors == 1
    assert sum(stats.turns) == 13 and sum(stats.tool_calls) == 7
    assert dict(stats.calls_by_tool) == {"search": 5, "book": 2}
    assert sum(stats.output_tokens) == 61 and sum(stats.input_tokens) == 70  # 7 turns × 10 prompt ids
    rates = {name.split(" (")[0]: (r.successes, r.total) for name, r in stats.rates().items()}
    assert rates == {"success": (3, 6), "error rate": (1, 7), "timeout rate": (1, 7), "final-answer rate": (4, 6),
                     "tool-call rate": (5, 6), "format-error rate": (1, 6)}


def test_same_denominator_tests_and_flips_by_hand(tmp_path: Path) -> None:
    path_a, path_b = _runs(tmp_path)
    diff = diff_runs(load_run(path_a, name="a"), load_run(path_b, name="b"))
    # 7 shared keys; T3's two pairs each have an errored side; T4 sample 1 exists only in B
    assert (len(diff.pairs), diff.errored_pairs, diff.unpaired_a, diff.unpaired_b) == (5, 2, 0, 1)
    same = diff.same_denominator
    assert same is not None and (same.a.successes, same.b.successes, same.a.total) == (2, 3, 5)
    z = 0.2 / (0.5 * 0.5 * (2 / 5)) ** 0.5
    assert same.p_value == pytest.approx(2 * norm.sf(z))
    # paired over tasks (several samples each): T1 1/2 → 0/2, T2 0/2 → 2/2, T4 1/1 → 1/1
    paired = diff.paired_test
    assert paired is not None and paired.test == "Wilcoxon signed-rank over 3 tasks (1 better, 1 worse)"
    assert paired.p_value == pytest.approx(wilcoxon([-0.5, 1.0]).pvalue) == pytest.approx(1.0)
    assert paired.difference == pytest.approx((-0.5 + 1.0 + 0.0) / 3)
    flips = {(f.task_id, f.direction, f.a_passes, f.b_passes, f.pairs) for f in diff.flips}
    assert flips == {("T1", "pass→fail", 1, 0, 2), ("T2", "fail→pass", 0, 2, 2)}
    t1 = next(f for f in diff.flips if f.task_id == "T1")
    assert [r.line for r in t1.a_records] == [1, 2] and [r.line for r in t1.b_records] == [1, 2]

    success, behaviour, calls, flipped = diff_tables(diff, root=tmp_path)
    assert len(success.rows) == 1  # the paired test only: no two-proportion test on the same tasks
    assert success.rows[0][1].startswith("2/5 · 40.0%") and success.rows[0][2].startswith("3/5 · 60.0%")
    assert success.rows[0][0] == "Wilcoxon signed-rank over 3 tasks (1 better, 1 worse)" and success.rows[0][4] == "1"
    rows = {r[0]: r for r in behaviour.rows}
    assert rows["success (passes / scored episodes)"][1].startswith("3/6 · 50.0%")
    assert rows["success (passes / scored episodes)"][2].startswith("5/7 · 71.4%")
    assert rows["tool-call rate (episodes with ≥1 call / scored)"][2].startswith("5/7")
    assert rows["turns per episode"][1] == "2.17 (n=6)"
    assert rows["output tokens per episode"][1] == "10.17 (n=6)"
    assert {r[0]: r[1] for r in calls.rows}["search"] == "5/6 · 0.83 per episode"
    assert {r[0]: r[2] for r in calls.rows}["search"] == "5/7 · 0.71 per episode"
    locations = {r[0]: (r[6], r[7]) for r in flipped.rows}
    assert locations["T1"] == ("a/results.jsonl:1, a/results.jsonl:2", "b/results.jsonl:1, b/results.jsonl:2")


def test_seed_comparison_through_the_trace_diff(tmp_path: Path) -> None:
    """60 tasks × 3 trials: baseline 19/180, SFT 24/180 → p ≈ 0.42, CI ≈ [−3.92, +9.47] pp (the seed)."""
    for run, passes in (("base", 19), ("sft", 24)):
        for trial in range(1, 4):
            episodes = []
            for task in range(60):
                index = (trial - 1) * 60 + task
                passed = index < passes if run == "base" else (index < 15 or 100 <= index < 109)
                episodes.append(episode(f"t{task:02d}", outcome="pass" if passed else "fail"))
            write_results(tmp_path / run / f"trial-{trial}" / "results.jsonl", episodes)
    diff = diff_runs(load_run(tmp_path / "base"), load_run(tmp_path / "sft"))
    same = diff.same_denominator
    assert same is not None and (same.a.successes, same.b.successes, same.a.total) == (19, 24, 180)
    assert same.p_value == pytest.approx(0.42, abs=0.005)
    assert 100 * same.interval[0] == pytest.approx(-3.92, abs=0.01)
    assert 100 * same.interval[1] == pytest.approx(9.47, abs=0.01)
    # paired over the 60 tasks (3 correlated trials each): tasks 15–18 lose 1/3, tasks 40–48 gain 1/3
    assert diff.paired_test is not None and diff.paired_test.test == "Wilcoxon signed-rank over 60 tasks (9 better, 4 worse)"
    assert diff.paired_test.p_value == pytest.approx(wilcoxon([-1 / 3] * 4 + [1 / 3] * 9).pvalue)
    assert diff.paired_test.difference == pytest.approx((9 - 4) / 3 / 60)


def test_traces_diff_cli(tmp_path: Path) -> None:
    path_a, path_b = _runs(tmp_path)
    out = tmp_path / "diff.md"
    result = CliRunner().invoke(app, ["traces", "diff", str(path_a), str(path_b), "--markdown", str(out)],
                                env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert "pass→fail" in result.output and "fail→pass" in result.output
    text = out.read_text()
    assert "| Wilcoxon signed-rank over 3 tasks (1 better, 1 worse) | 2/5 · 40.0%" in text and "| search |" in text
    assert "two-proportion z-test" not in text
    missing = CliRunner().invoke(app, ["traces", "diff", str(path_a), str(tmp_path / "nope")], env={"COLUMNS": "400"})
    assert missing.exit_code == 2 and "no such run folder" in missing.output
    no_greedy = CliRunner().invoke(app, ["traces", "diff", str(path_a), str(path_b), "--greedy"], env={"COLUMNS": "400"})
    assert no_greedy.exit_code == 2 and "greedy" in no_greedy.output
    settings = tmp_path / "diff.yaml"
    settings.write_text("greedy: true\n")
    from_file = CliRunner().invoke(app, ["traces", "diff", str(path_a), str(path_b), "--config", str(settings)],
                                   env={"COLUMNS": "400"})
    assert from_file.exit_code == 2 and "greedy" in from_file.output  # the file's greedy: true, as --greedy
    overridden = CliRunner().invoke(app, ["traces", "diff", str(path_a), str(path_b), "--config", str(settings),
                                          "--set", "greedy=false"], env={"COLUMNS": "400"})
    assert overridden.exit_code == 0, overridden.output


def test_newcombe_interval_matches_the_published_examples() -> None:
    """Newcombe (1998), Statistics in Medicine 17:873, Table II, method 10."""
    from toolgym.eval.stats import Rate, newcombe_interval

    low, high = newcombe_interval(Rate(48, 80), Rate(56, 70))
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)
    low, high = newcombe_interval(Rate(3, 10), Rate(9, 10))
    assert (round(low, 4), round(high, 4)) == (0.1705, 0.8090)
    low, high = newcombe_interval(Rate(0, 6), Rate(6, 6))  # Wald would say [1, 1]
    assert 0.4 < low < 0.5 and high == 1.0
