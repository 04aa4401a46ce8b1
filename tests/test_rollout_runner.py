"""run_rollout: oracle rewards, infrastructure errors as rows, resume after a torn write, row round-trip."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from test_rollout_support import broken_tasks, env_factory, suite_tasks, tiny_model_dir, toy_tasks
from toolgym.agent.limits import EpisodeLimits
from toolgym.agent.users import ScriptedUserSimulator
from toolgym.policy.base import SamplingParams
from toolgym.policy.oracle import OraclePolicy
from toolgym.policy.spec import make_policy
from toolgym.rollout.results import (
    RESULTS_FILE,
    episode_to_row,
    read_rows,
    repair_torn_tail,
    row_key,
    row_to_episode,
)
from toolgym.rollout.runner import RolloutError, run_rollout
from toolgym.rollout.worker import episode_seed
from toolgym.schema import Task

VERIFIERS_FIELDS = {
    "example_id", "prompt", "completion", "reward", "metrics", "timing", "is_completed", "is_truncated",
    "stop_condition", "error", "info", "tool_defs", "token_usage",
}
TOOLGYM_FIELDS = {
    "task_id", "env", "split", "sample_index", "status", "partial_score", "checks", "policy", "checkpoint",
    "sampling", "token_samples", "episode",
}


def _run(tasks: list[Task], out: Path, policy=None, **kwargs):  # type: ignore[no-untyped-def]
    kwargs.setdefault("env_factory", env_factory)
    return asyncio.run(run_rollout(tasks, policy or OraclePolicy(), out_dir=out, **kwargs))


def test_oracle_scores_one_on_every_validated_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every registered app (dual-control ones through the scripted user) and the toy app."""
    from toolgym.envs import registry

    monkeypatch.setitem(registry.APP_MODULES, "toy", "toolgym.envs.examples.toy")  # the oracle looks apps up by name
    tasks = toy_tasks() + suite_tasks()
    assert len(tasks) > 20, "too few registered app tasks replay to reward 1"
    summary = _run(tasks, tmp_path, make_policy("oracle"), concurrency=4, user_simulator=ScriptedUserSimulator())
    rows = read_rows(tmp_path / RESULTS_FILE)
    assert len(rows) == len(tasks) == summary.episodes
    failing = [(r["task_id"], r["status"], r["error"], [c for c in r["checks"] if not c["passed"]])
               for r in rows if r["reward"] != 1.0]
    assert failing == []
    assert summary.passed == len(tasks) and summary.error == 0
    # the oracle makes one call per turn, then answers (a simulated user may end the talk first)
    by_id = {t.id: t for t in tasks}
    for row in rows:
        task = by_id[row["task_id"]]
        if task.user_scenario is None:
            assert row["metrics"]["turns"] == len(task.reference_solution) + 1
            assert row["final_answer"] == task.expected_answer
        else:
            assert row["stop_condition"] in ("answer", "user_stop", "user_transfer")


def test_env_and_verifier_failures_become_error_rows_and_the_run_completes(tmp_path: Path) -> None:
    good, broken = toy_tasks(), broken_tasks()
    bad_env = Task(id="nowhere/0", env="no_such_app", env_version="1", prompt="hi")
    summary = _run([*good[:1], *broken, bad_env, *good[1:]], tmp_path, concurrency=2)
    rows = {r["task_id"]: r for r in read_rows(tmp_path / RESULTS_FILE)}
    assert len(rows) == 6
    crash, verifier, nowhere = rows["toy/crash/0"], rows["toy/bad_verifier/0"], rows["nowhere/0"]
    assert crash["status"] == "error" and "crashed: ZeroDivisionError: bug in tool" in crash["error"]
    assert verifier["status"] == "error" and "verifier bug: no such table" in verifier["error"]
    assert nowhere["status"] == "error" and "no_such_app" in nowhere["error"]
    for row in (crash, verifier, nowhere):
        assert row["reward"] is None and row["partial_score"] is None and row["is_completed"] is False
    assert all(rows[t.id]["reward"] == 1.0 for t in good)
    assert (summary.error, summary.passed, summary.scored) == (3, 3, 3)


def test_rows_have_the_verifiers_shape_and_round_trip_to_the_episode(tmp_path: Path) -> None:
    from toolgym.policy.hf import HFPolicy

    policy = HFPolicy(tiny_model_dir())
    try:
        _run(toy_tasks()[:2], tmp_path, policy, samples_per_task=2,
             sampling=SamplingParams(temperature=1.0, max_new_tokens=24, seed=3),
             limits=EpisodeLimits(max_turns=2))
    finally:
        asyncio.run(policy.close())
    rows = read_rows(tmp_path / RESULTS_FILE)
    assert len(rows) == 4
    for row in rows:
        assert set(row) >= VERIFIERS_FIELDS | TOOLGYM_FIELDS
        episode = row_to_episode(row)
        assert episode_to_row(episode) == {**row, "info": episode_to_row(episode)["info"]}
        assert episode.samples and episode.token_turns
        assert row["token_usage"]["output_tokens"] == sum(len(t.completion_ids) for t in episode.token_turns)
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert row["completion"][0]["role"] == "assistant"
        assert row["policy"] == policy.name and row["checkpoint"] == policy.checkpoint
    # each (task, sample) sampled with its own seed derived from the run seed
    seeds = {row_key(r): r["sampling"]["seed"] for r in rows}
    assert seeds == {(t, s): episode_seed(3, t, s) for t, s in seeds}
    assert len(set(seeds.values())) == 4


def test_resume_skips_done_pairs_and_drops_a_torn_last_line(tmp_path: Path) -> None:
    tasks = toy_tasks()
    first = _run(tasks[:2], tmp_path, samples_per_task=2)
    assert first.ran == 4
    results = tmp_path / RESULTS_FILE
    with open(results, "a", encoding="utf-8") as handle:
        handle.write('{"task_id": "toy/complete/0", "sample_index": 0, "status": "o')  # killed mid-write
    second = _run(tasks, tmp_path, samples_per_task=3)
    assert second.skipped == 4 and second.ran == 5 and second.repaired_bytes > 0
    rows = read_rows(results)
    keys = [row_key(r) for r in rows]
    assert len(keys) == len(set(keys)) == 9
    assert set(keys) == {(t.id, s) for t in tasks for s in range(3)}
    third = _run(tasks, tmp_path, samples_per_task=3)
    assert third.ran == 0 and len(read_rows(results)) == 9


def test_resume_refuses_a_run_folder_with_other_settings(tmp_path: Path) -> None:
    _run(toy_tasks()[:1], tmp_path, sampling=SamplingParams(temperature=0.0))
    with pytest.raises(RolloutError, match="sampling"):
        _run(toy_tasks()[:1], tmp_path, sampling=SamplingParams(temperature=0.7))


def test_resume_refuses_new_weights_written_to_the_same_checkpoint_path(tmp_path: Path) -> None:
    """A model retrained into the folder an earlier eval read must not append to that eval's rows."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    from toolgym.policy.hf import HFPolicy

    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir(), model)
    sampling = SamplingParams(temperature=0.0, max_new_tokens=8)

    def run(out: Path):  # type: ignore[no-untyped-def]
        policy = HFPolicy(model)
        try:
            summary = _run(toy_tasks()[:1], out, policy, sampling=sampling, limits=EpisodeLimits(max_turns=1))
            return summary, policy.weights
        finally:
            asyncio.run(policy.close())

    _, before = run(tmp_path / "eval")
    assert run(tmp_path / "eval")[0].skipped == 1  # same weights: resumes
    weights = load_file(model / "model.safetensors")
    name = next(iter(weights))
    weights[name] = weights[name] + torch.full_like(weights[name], 1e-3)
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(RolloutError, match="weights: was"):
        run(tmp_path / "eval")
    _, after = run(tmp_path / "other")
    assert before and after and before != after


def test_retry_errors_reruns_only_error_rows(tmp_path: Path) -> None:
    tasks = [*toy_tasks()[:1], broken_tasks()[0]]
    _run(tasks, tmp_path)
    summary = _run(tasks, tmp_path, retry_errors=True)
    assert summary.ran == 1 and summary.episodes == 2 and summary.error == 1


def test_repair_torn_tail_keeps_complete_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"a": 1}) + "\n" + json.dumps({"b": 2}) + "\n" + '{"c":')
    assert repair_torn_tail(path) == len('{"c":')
    assert path.read_text().splitlines() == ['{"a": 1}', '{"b": 2}']
    assert repair_torn_tail(path) == 0


def test_a_corrupt_middle_line_is_reported_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / RESULTS_FILE
    path.write_text('{"task_id": "a", "sample_index": 0}\nnot json\n{"task_id": "b", "sample_index": 0}\n')
    with pytest.raises(ValueError, match=r"results.jsonl:2"):
        read_rows(path)


def test_duplicate_task_ids_are_refused(tmp_path: Path) -> None:
    task = toy_tasks()[0]
    with pytest.raises(RolloutError, match="appears twice"):
        _run([task, task], tmp_path)
