"""The seeds report: hand-made pipeline runs of 3 seeds × 2 stages, their pooled rates, intervals and paired tests
checked against independent computations (scipy, enumeration, the textbook formulas), and refused mismatches."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binomtest, norm, permutation_test
from scipy.stats import t as student_t
from typer.testing import CliRunner

from test_eval_support import episode, write_results
from toolgym.cli.main import app
from toolgym.eval.power import detectable_difference, paired_power
from toolgym.eval.report_seeds import comparison_pairs, write_seeds_report
from toolgym.eval.report_seeds_runs import StudyError, config_differences, load_study
from toolgym.eval.stats import (
    PairedOutcome,
    clustered_rate,
    sign_flip_p_value,
    stratified_paired_test,
)

TASKS = [f"code_host/fam/{i:04d}" for i in range(6)]
ENV_TASKS = ["mail/fam/0000", "mail/fam/0001"]
# seed → stage → outcome of each held-out task (1 pass, 0 fail)
OUTCOMES = {
    0: {"sft": [1, 0, 0, 1, 0, 0], "grpo": [1, 1, 0, 1, 1, 0]},
    1: {"sft": [1, 0, 1, 0, 0, 0], "grpo": [1, 1, 0, 1, 0, 0]},
    2: {"sft": [0, 0, 0, 1, 0, 1], "grpo": [1, 1, 0, 1, 0, 0]},
}


def _config(seed: int, **changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "out": f"runs/study/seed-{seed}", "seed": seed, "threads": 2,
        "teacher": {"policy": f"imperfect:premature_done=0.6,seed={seed}"},
        "sft": {"max_steps": 250}, "report": {"enabled": seed == 0},
    }
    for key, value in changes.items():
        config[key] = value
    return config


def make_run(folder: Path, seed: int, outcomes: dict[str, list[int]], *, config: dict[str, Any] | None = None,
             tasks: list[str] = TASKS, errored_env: bool = False) -> Path:
    """A pipeline run folder as the eval stage leaves it: manifest.json with the config, eval/<stage>/greedy."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps({"kind": "pipeline", "config": config or _config(seed)}))
    for stage, passed in outcomes.items():
        rows = [episode(task, split="heldout_tasks", env="code_host", outcome="pass" if ok else "fail")
                for task, ok in zip(tasks, passed, strict=True)]
        rows += [episode(task, split="heldout_env", env="mail",
                         outcome="error" if errored_env and stage == "grpo" and i == 0 else "fail")
                 for i, task in enumerate(ENV_TASKS)]
        write_results(folder / "eval" / stage / "greedy" / "results.jsonl", rows)
    return folder


def make_study(root: Path) -> list[Path]:
    return [make_run(root / f"seed-{seed}", seed, stages, errored_env=seed == 2) for seed, stages in OUTCOMES.items()]


# -- the statistics, against independent computations ------------------------------------------------------


def wilson(p: float, n: float, z: float = float(norm.ppf(0.975))) -> tuple[float, float]:
    """The textbook Wilson score interval, written out independently of toolgym's."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_clustered_rate_matches_the_design_effect_computed_by_hand() -> None:
    outcomes = {task: [bool(OUTCOMES[s]["sft"][i]) for s in OUTCOMES] for i, task in enumerate(TASKS)}
    rate = clustered_rate(outcomes)
    y = np.array([sum(v) for v in outcomes.values()], dtype=float)  # per task: 2, 0, 1, 2, 0, 1
    n = np.full(len(y), 3.0)
    p = y.sum() / n.sum()
    assert (rate.successes, rate.total, rate.tasks) == (6, 18, 6)
    # by hand: p = 1/3, p·n = 1, Σ(y − 1)² = 4; robust = 6/5 · 4 / 18² = 4.8/324, binomial = (1/3)(2/3)/18 = 4/324
    assert ((y - p * n) ** 2).sum() == pytest.approx(4.0, abs=1e-12)
    robust = 6 / 5 * ((y - p * n) ** 2).sum() / n.sum() ** 2
    assert rate.design_effect == pytest.approx(robust / (p * (1 - p) / 18), abs=1e-12) == pytest.approx(1.2, abs=1e-12)
    assert rate.effective_total == pytest.approx(15.0, abs=1e-12)
    low, high = rate.interval
    assert (low, high) == pytest.approx(wilson(1 / 3, 15.0), abs=1e-12)
    assert low < wilson(1 / 3, 18)[0] and high > wilson(1 / 3, 18)[1]  # wider than 18 independent episodes
    # grpo's tasks agree more across seeds: the formula gives 6/5 · (34/3) / 324 over 80/5832 = 3.06, over the
    # 3 seeds a task has, so one outcome per task is taken
    grpo = clustered_rate({task: [bool(OUTCOMES[s]["grpo"][i]) for s in OUTCOMES] for i, task in enumerate(TASKS)})
    y = np.array([3, 3, 0, 3, 1, 0], dtype=float)
    unclamped = 6 / 5 * ((y - 10 / 18 * 3) ** 2).sum() / 324 / (10 / 18 * 8 / 18 / 18)
    assert unclamped == pytest.approx(3.06, abs=1e-12)
    assert grpo.design_effect == 3.0 and grpo.interval == pytest.approx(wilson(10 / 18, 6.0), abs=1e-12)


def test_clustered_rate_at_its_two_bounds_is_scipys_wilson() -> None:
    # each task the same under every seed: fully correlated, the interval is Wilson's over the 6 tasks
    agreeing = {task: [i < 2] * 3 for i, task in enumerate(TASKS)}
    rate = clustered_rate(agreeing)
    assert rate.design_effect == pytest.approx(3.0)  # clamped: 1.2 × 3 from the formula, one outcome per task at most
    ci = binomtest(2, 6).proportion_ci(method="wilson")
    assert rate.interval == pytest.approx((ci.low, ci.high), abs=1e-12)
    # every task passes exactly once of 3: less spread than binomial, clamped to independent episodes
    spread = {task: [True, False, False] for task in TASKS}
    rate = clustered_rate(spread)
    assert rate.design_effect == 1.0
    ci = binomtest(6, 18).proportion_ci(method="wilson")
    assert rate.interval == pytest.approx((ci.low, ci.high), abs=1e-12)
    # 0/n: no information on the correlation, the widest (one outcome per task)
    none = clustered_rate({task: [False] * 3 for task in TASKS})
    ci = binomtest(0, 6).proportion_ci(method="wilson")
    assert none.design_effect == 3.0 and none.interval == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_sign_flip_p_value_is_the_enumeration_and_scipys_permutation_test() -> None:
    differences = [2, -1, 1, 0, 3, -2, 1]
    observed = abs(sum(differences))
    nonzero = [d for d in differences if d]
    flips = list(itertools.product((1, -1), repeat=len(nonzero)))
    by_hand = sum(abs(sum(s * d for s, d in zip(signs, nonzero, strict=True))) >= observed for signs in flips) / len(flips)
    assert sign_flip_p_value(differences) == pytest.approx(by_hand, abs=1e-15)
    scipy_p = permutation_test((np.array(differences),), np.sum, permutation_type="samples", n_resamples=np.inf,
                               alternative="two-sided").pvalue
    assert sign_flip_p_value(differences) == pytest.approx(scipy_p, abs=1e-12)
    assert sign_flip_p_value([0, 0]) == 1.0


def test_with_one_seed_the_test_is_mcnemars_exact_test() -> None:
    a = [1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 1, 1, 1, 0, 1, 0, 1, 1]
    pairs = [PairedOutcome(f"t{i}", "seed-0", bool(x), bool(y)) for i, (x, y) in enumerate(zip(a, b, strict=True))]
    test = stratified_paired_test(pairs)
    won, lost = 6, 1  # tasks 1, 2, 4, 5, 8, 11 won; task 3 lost
    assert (test.won, test.lost, test.pairs, test.tasks) == (won, lost, 12, 12)
    assert test.p_value == pytest.approx(binomtest(won, won + lost, 0.5).pvalue, abs=1e-15) == pytest.approx(
        16 / 128, abs=1e-15)  # P(|won − 3.5| ≥ 2.5) for 7 fair coins = 2 · (1 + 7) / 2^7
    assert test.difference == pytest.approx(5 / 12, abs=1e-15)


def test_stratified_test_pairs_within_seed_and_clusters_by_task() -> None:
    pairs = [PairedOutcome(task, f"seed-{seed}", bool(OUTCOMES[seed]["sft"][i]), bool(OUTCOMES[seed]["grpo"][i]))
             for seed in OUTCOMES for i, task in enumerate(TASKS)]
    test = stratified_paired_test(pairs)
    # per task, Σ over seeds of (grpo − sft): t0 1, t1 3, t2 −1, t3 1, t4 1, t5 −1
    d = np.array([1, 3, -1, 1, 1, -1], dtype=float)
    assert (test.won, test.lost, test.pairs, test.tasks) == (6, 2, 18, 6)
    assert test.by_seed == {"seed-0": (6, 2, 0), "seed-1": (6, 2, 1), "seed-2": (6, 2, 1)}
    mean = d.sum() / 18
    assert test.difference == pytest.approx(mean, abs=1e-15) == pytest.approx(4 / 18, abs=1e-15)
    robust = 6 / 5 * ((d - mean * 3) ** 2).sum() / 18**2
    half = student_t.ppf(0.975, 5) * math.sqrt(robust)
    assert test.interval == pytest.approx((mean - half, mean + half), abs=1e-12)
    independent = (8 / 18 - mean**2) / 18
    assert test.design_effect == pytest.approx(robust / independent, abs=1e-12)
    flips = list(itertools.product((1, -1), repeat=6))
    by_hand = sum(abs(np.dot(s, d)) >= 4 for s in flips) / 64
    assert test.p_value == pytest.approx(by_hand, abs=1e-15)
    # pooled pair-level McNemar (ignoring that a task's seeds share it) is a different, smaller number here
    assert binomtest(6, 8, 0.5).pvalue < test.p_value


def test_comparison_pairs_cover_the_chain_the_control_and_the_variants() -> None:
    stages = ["untrained", "random_init", "sft", "rft", "grpo", "grpo-turn"]
    assert comparison_pairs(stages) == [("untrained", "sft"), ("sft", "rft"), ("rft", "grpo"), ("sft", "grpo"),
                                        ("random_init", "sft"), ("grpo", "grpo-turn"), ("rft", "grpo-turn")]


# -- the report over runs ------------------------------------------------------------------------------------


def test_report_over_three_seeds(tmp_path: Path) -> None:
    runs = make_study(tmp_path / "study")
    markdown, html, numbers = write_seeds_report(runs, tmp_path / "out")
    data = json.loads(numbers.read_text())
    assert [r["seed"] for r in data["runs"]] == [0, 1, 2]
    held = data["splits"]["heldout_tasks"]
    assert {s: (v["successes"], v["scored"], v["tasks"]) for s, v in held["stages"].items()} == {
        "sft": (6, 18, 6), "grpo": (10, 18, 6)}
    assert held["stages"]["grpo"]["by_seed"] == {"0": {"successes": 4, "scored": 6}, "1": {"successes": 3, "scored": 6},
                                                  "2": {"successes": 3, "scored": 6}}
    grpo = clustered_rate({task: [bool(OUTCOMES[s]["grpo"][i]) for s in OUTCOMES] for i, task in enumerate(TASKS)})
    assert held["stages"]["grpo"]["ci95"] == pytest.approx(list(grpo.interval), abs=1e-6)
    (comparison,) = held["comparisons"]
    assert (comparison["from"], comparison["to"], comparison["won"], comparison["lost"]) == ("sft", "grpo", 6, 2)
    assert comparison["difference_pp"] == pytest.approx(100 * 4 / 18, abs=1e-4)
    assert comparison["p_value"] == pytest.approx(sign_flip_p_value([1, 3, -1, 1, 1, -1]), abs=1e-15)
    assert comparison["discordance"] == pytest.approx(8 / 18, abs=1e-6)
    # the held-out env: every episode fails; seed 2's errored grpo episode is counted and in no denominator
    env = data["splits"]["heldout_env"]
    assert env["stages"]["grpo"]["successes"] == 0 and env["stages"]["grpo"]["scored"] == 5
    assert env["stages"]["grpo"]["errored"] == 1
    (env_comparison,) = env["comparisons"]
    assert env_comparison["pairs"] == 5 and env_comparison["p_value"] == 1.0
    assert env_comparison["detectable_pp"] is None  # no pair differs: nothing to size the power on
    assert env_comparison["power_at_detect_points"] is None
    text = markdown.read_text()
    assert text.count("#### Success by stage, pooled over seeds") == 2  # one per split
    # design effect of the difference: 6/5 · (102/9) / 18² over (8/18 − (4/18)²) / 18 = 1.9125
    assert comparison["design_effect"] == pytest.approx(1.2 * 102 / 9 / 324 / ((8 / 18 - (4 / 18) ** 2) / 18), abs=1e-6)
    assert "| sft → grpo | 18 (6 tasks; design effect 1.91) | 6 / 2 | +22.2 [" in text
    # the power columns: this design (18 pairs) at the comparison's discordance and design effect
    assert comparison["power_at_detect_points"] == pytest.approx(
        paired_power(18, 0.05, 8 / 18, design_effect=comparison["design_effect"]), abs=1e-5)
    assert math.isnan(detectable_difference(18, 8 / 18, design_effect=comparison["design_effect"]))
    assert comparison["detectable_pp"] is None  # not even δ = ψ reaches power 0.8 with 18 pairs
    assert "| grpo | 10/18 · 55.6% [" in text
    assert "<h2>Held-out tasks (from training environments)</h2>" in html.read_text()


def test_the_cli_reports_a_study_folder_with_a_grpo_variant(tmp_path: Path) -> None:
    study = tmp_path / "study"
    make_study(study)
    turn = {0: [1, 1, 1, 1, 1, 0], 1: [1, 1, 0, 1, 1, 0], 2: [1, 1, 0, 1, 0, 1]}
    for seed, outcomes in turn.items():
        config = _config(seed, grpo={"settings": {"advantage": {"credit": "turn"}}}, eval={"stages": ["grpo"]})
        make_run(study / "variants" / "turn" / f"seed-{seed}", seed, {"grpo": outcomes}, config=config)
    result = CliRunner().invoke(app, ["report", str(study)])
    assert result.exit_code == 0, result.output
    data = json.loads((study / "study.json").read_text())
    held = data["splits"]["heldout_tasks"]
    assert list(held["stages"]) == ["sft", "grpo", "grpo-turn"]
    by_pair = {(c["from"], c["to"]): c for c in held["comparisons"]}
    assert set(by_pair) == {("sft", "grpo"), ("grpo", "grpo-turn"), ("sft", "grpo-turn")}
    pairs = [PairedOutcome(task, str(seed), bool(OUTCOMES[seed]["grpo"][i]), bool(turn[seed][i]))
             for seed in OUTCOMES for i, task in enumerate(TASKS)]
    expected = stratified_paired_test(pairs)
    assert (by_pair[("grpo", "grpo-turn")]["won"], by_pair[("grpo", "grpo-turn")]["lost"]) == (expected.won, expected.lost)
    assert by_pair[("grpo", "grpo-turn")]["p_value"] == pytest.approx(expected.p_value, abs=1e-15)
    assert (study / "report.html").is_file() and (study / "report.md").is_file()


def test_a_variant_that_changes_more_than_grpo_is_refused(tmp_path: Path) -> None:
    study = tmp_path / "study"
    make_study(study)
    config = _config(0, sft={"max_steps": 10})
    make_run(study / "variants" / "bad" / "seed-0", 0, {"grpo": [1] * 6}, config=config)
    with pytest.raises(StudyError, match=r"sft\.max_steps: 250 vs 10: variant bad must reuse"):
        load_study([study])


def test_runs_whose_config_differs_beyond_the_seed_are_refused(tmp_path: Path) -> None:
    runs = make_study(tmp_path / "study")
    make_run(runs[2], 2, OUTCOMES[2], config=_config(2, sft={"max_steps": 100}))
    result = CliRunner().invoke(app, ["report", *map(str, runs), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "differ in sft.max_steps: 250 vs 100" in result.output and "seed-2" in result.output
    assert not (tmp_path / "out").exists()


def test_runs_that_scored_other_tasks_are_refused(tmp_path: Path) -> None:
    runs = make_study(tmp_path / "study")
    other = [*TASKS[:5], "code_host/fam/0099"]
    make_run(runs[1], 1, OUTCOMES[1], tasks=other)
    with pytest.raises(StudyError, match=r"seed-1 scored other heldout_tasks tasks than .*seed-0: 1 only in the "
                                         r"first \(e\.g\. code_host/fam/0099\), 1 only in the second"):
        load_study(runs)


def test_other_refusals_name_the_file_or_runs(tmp_path: Path) -> None:
    runs = make_study(tmp_path / "study")
    with pytest.raises(StudyError, match="both ran with seed 0"):
        load_study([runs[0], make_run(tmp_path / "again", 0, OUTCOMES[0])])
    (runs[1] / "manifest.json").write_text(json.dumps({"kind": "eval"}))
    with pytest.raises(StudyError, match=r"seed-1/manifest\.json: no pipeline config recorded"):
        load_study(runs)
    with pytest.raises(StudyError, match="at least two runs"):
        load_study(runs[:1])
    result = CliRunner().invoke(app, ["report", str(runs[0]), str(runs[2])])
    assert result.exit_code == 2 and "--out" in result.output


def test_only_the_seed_and_what_follows_it_may_differ() -> None:
    a, b = _config(0), _config(1)
    assert config_differences(a, b) == []  # seed, out, seed=N in the teacher's spec, the report's own settings
    b["threads"] = 1
    b["tasks"] = {"build": {"tasks_per_family": 10}}
    assert config_differences(a, b) == ["tasks.build.tasks_per_family: '(not set)' vs 10", "threads: 2 vs 1"]


def test_a_bad_results_file_is_named_with_its_line(tmp_path: Path) -> None:
    runs = make_study(tmp_path / "study")
    results = runs[1] / "eval" / "grpo" / "greedy" / "results.jsonl"
    lines = results.read_text().splitlines()
    results.write_text("\n".join([lines[0], '{"task_id": "x", "sample_index": 0}', *lines[2:]]) + "\n")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "study")])
    assert result.exit_code == 2
    assert "seed-1/eval/grpo/greedy/results.jsonl" in result.output.replace("\n", "") and ":2" in result.output
    # a task twice in one greedy pass: both rows named
    results.write_text("\n".join([lines[0], lines[0], *lines[2:]]) + "\n")
    with pytest.raises(StudyError, match=r"results\.jsonl:2: task code_host/fam/0000 is in the greedy pass twice "
                                         r"\(also at .*results\.jsonl:1\)"):
        write_seeds_report([tmp_path / "study"])
