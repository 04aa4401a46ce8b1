"""Checkpoint sweeps: the on-disk layout, Checkpoint 0 vs best step per env, evaluating missing checkpoints."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from test_eval_support import episode, suite_tasks, write_results
from test_rollout_support import tiny_model_dir
from toolgym.cli.main import app
from toolgym.eval.evaluate import EvalConfig
from toolgym.eval.sweep import evaluate_missing, find_checkpoints, find_evals, sweep, sweep_tables
from toolgym.policy.base import Policy
from toolgym.policy.oracle import OraclePolicy


def _step(run: Path, step: int, outcomes: dict[tuple[str, str, str], list[str]], trials: bool = False) -> None:
    """outcomes: (env, split, task) → one outcome per sample."""
    episodes = [episode(task, env=env, split=split, outcome=o, sample_index=i)
                for (env, split, task), values in outcomes.items() for i, o in enumerate(values)]
    folder = run / "evals" / f"step-{step}"
    if trials:  # the same episodes split over two trial folders
        write_results(folder / "trial-1" / "results.jsonl", [e for e in episodes if e.sample_index == 0])
        write_results(folder / "trial-2" / "results.jsonl", [e for e in episodes if e.sample_index == 1])
    else:
        write_results(folder / "results.jsonl", episodes)


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "grpo"
    mail, held, train = ("mail", "heldout_env"), ("booking", "heldout_tasks"), "train"
    _step(run, 0, {
        (*mail, "M1"): ["fail", "fail"], (*mail, "M2"): ["fail", "fail"],
        (*held, "B1"): ["pass", "fail"], (*held, "B2"): ["fail", "fail"],
        ("booking", train, "K1"): ["pass", "fail"], ("booking", train, "K2"): ["fail", "pass"],
        ("forum", train, "F1"): ["fail", "fail"],
    })
    _step(run, 10, {
        (*mail, "M1"): ["pass", "pass"], (*mail, "M2"): ["fail", "fail"],
        (*held, "B1"): ["pass", "fail"], (*held, "B2"): ["fail", "error"],
        ("booking", train, "K1"): ["pass", "pass"], ("booking", train, "K2"): ["pass", "pass"],
        ("forum", train, "F1"): ["pass", "fail"],
    }, trials=True)
    _step(run, 20, {
        (*mail, "M1"): ["pass", "fail"], (*mail, "M2"): ["pass", "fail"],  # ties step 10: the earlier wins
        (*held, "B1"): ["pass", "pass"], (*held, "B2"): ["pass", "fail"],
        ("booking", train, "K1"): ["pass", "fail"], ("booking", train, "K2"): ["pass", "pass"],
        ("forum", train, "F1"): ["pass", "pass"],
    })
    return run


def test_sweep_reads_the_layout_and_picks_best_steps(tmp_path: Path) -> None:
    run = _run(tmp_path)
    (run / "evals" / "notes").mkdir()  # not a step folder: ignored
    assert sorted(find_evals(run)) == [0, 10, 20]
    result = sweep(run, k=1)
    assert result.steps == [0, 10, 20]
    table = {split: {r.env: (r.first.expected, r.best.expected, r.best.tasks, r.best_step) for r in rows}
             for split, rows in result.tables.items()}
    assert table["heldout_env"] == {"mail": (0.0, 1.0, 2, 10)}
    # step 10: B2 has one errored sample, left out: B1 0.5 + B2 0.0; step 20: 1.0 + 0.5
    assert table["heldout_tasks"] == {"booking": (0.5, 1.5, 2, 20)}
    assert table["train"]["booking"] == (1.0, 2.0, 2, 10)
    assert table["train"]["forum"] == (0.0, 1.0, 1, 20)
    assert table["train"]["All environments"][1:] == (2.5, 3, 10)  # 2.5/3 at steps 10 and 20: the earlier
    tables = sweep_tables(result)
    assert [t.title for t in tables] == ["Held-out environment", "Held-out tasks (from training environments)",
                                         "Training environments (train tasks)"]
    assert tables[0].header == ["Environment", "Checkpoint 0 pass@1", "Best pass@1", "Best Step", "p (best vs 0)"]
    assert tables[0].rows[0][:4] == ["mail", "0.0/2 · 0.0% [0.0–65.8]", "1.0/2 · 50.0% [9.5–90.5]", "10"]
    assert tables[1].rows[0][2].startswith("1.5/2 · 75.0%")
    # the p-value pairs the two steps over the same 2 mail tasks (0/4 vs 2/4 episodes): with one task
    # improved, a paired test over tasks cannot be significant (an unpaired test on episodes said 0.10)
    mail = result.tables["heldout_env"][0].paired
    assert mail is not None and mail.test.startswith("Wilcoxon signed-rank over 2 tasks")
    assert float(tables[0].rows[0][4]) == pytest.approx(1.0)
    assert any("favours luck" in n for n in tables[-1].notes)


def test_first_evaluated_step_is_labelled_when_not_zero(tmp_path: Path) -> None:
    run = _run(tmp_path)
    shutil.rmtree(run / "evals" / "step-0")
    tables = sweep_tables(sweep(run, k=2))
    assert tables[0].header[1] == "Checkpoint 0 (step 10) pass@2"
    assert tables[0].rows[0][1].startswith("1.0/2")  # M1 passes at k=2, M2 does not


def test_evaluate_missing_checkpoints_into_the_layout(tmp_path: Path) -> None:
    run = tmp_path / "run"
    base = tmp_path / "base-model"
    base.mkdir()
    (run / "checkpoints" / "checkpoint-0").mkdir(parents=True)
    (run / "checkpoints" / "checkpoint-0" / "adapter_config.json").write_text(
        json.dumps({"base_model_name_or_path": str(base)}))
    (run / "checkpoint-5").mkdir()
    (run / "checkpoint-5" / "config.json").write_text("{}")
    (run / "checkpoint-7").mkdir()  # neither a model nor an adapter: not a checkpoint
    assert sorted(find_checkpoints(run)) == [0, 5]
    made: list[tuple[Path, Path | None]] = []

    def maker(model: Path, lora: Path | None) -> Policy:
        made.append((model, lora))
        return OraclePolicy()

    tasks = suite_tasks()[:3]
    config = EvalConfig(samples_per_task=1, trials=1, ks=[1], greedy=False, concurrency=2, max_turns=8)
    done = asyncio.run(evaluate_missing(run, tasks, config, policy_maker=maker))
    assert done == [0, 5]
    assert made == [(base, run / "checkpoints" / "checkpoint-0"), (run / "checkpoint-5", None)]
    assert (run / "evals" / "step-5" / "trial-1" / "results.jsonl").is_file()
    assert asyncio.run(evaluate_missing(run, tasks, config, policy_maker=maker)) == []  # nothing left to do
    result = sweep(run)
    assert result.steps == [0, 5] and result.tables["train"][0].best_step == 0


def test_lora_checkpoint_without_a_known_base_is_an_error(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "checkpoint-3").mkdir(parents=True)
    (run / "checkpoint-3" / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "Qwen/Qwen3-8B"}))
    with pytest.raises(ValueError, match="base model is unknown; pass --base-model"):
        asyncio.run(evaluate_missing(run, suite_tasks()[:1], EvalConfig(greedy=False), policy_maker=lambda m, a: OraclePolicy()))


@pytest.mark.slow
def test_sweep_cli_evaluates_a_real_checkpoint(tmp_path: Path) -> None:
    """The tiny model as checkpoint-0, evaluated through HFPolicy by `toolgym eval sweep --tasks`."""
    from toolgym.schema.jsonl import write_jsonl

    run = tmp_path / "run"
    shutil.copytree(tiny_model_dir(), run / "checkpoint-0")
    write_jsonl(tmp_path / "tasks.jsonl", suite_tasks()[:2])
    result = CliRunner().invoke(app, [
        "eval", "sweep", str(run), "--tasks", str(tmp_path / "tasks.jsonl"), "--split", "train",
        "--max-new-tokens", "8", "--max-turns", "2", "--concurrency", "2",
    ], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert "evaluated 1 checkpoint(s): steps [0]" in result.output
    rows = (run / "evals" / "step-0" / "trial-1" / "results.jsonl").read_text().splitlines()
    assert len(rows) == 2 and all(json.loads(r)["checkpoint"] for r in rows)
    assert "| Environment | Checkpoint 0 pass@1 | Best pass@1 | Best Step |" in (run / "sweep.md").read_text()
    assert json.loads((run / "sweep.json").read_text())["steps"] == [0]
    empty = CliRunner().invoke(app, ["eval", "sweep", str(tmp_path)], env={"COLUMNS": "300"})
    assert empty.exit_code == 2 and "no evals/step-<N>/ folders" in empty.output
