"""Rejection sampling: the keep rule per task, and sample → select → convert → SFT with the real tiny model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from test_rollout_support import env_factory, tiny_model_dir
from test_train_sft_support import ReplayTokenPolicy, mixed_tasks, read_jsonl
from toolgym.cli.main import app
from toolgym.dataset.build import BuildConfig, build_tasks
from toolgym.schema.jsonl import write_jsonl
from toolgym.train.rft import (
    REASON_PARTIAL,
    REASON_REPLAY,
    REASON_REWARD,
    RFTConfig,
    RFTError,
    replay_rows,
    run_rft,
    sample_tasks,
    select_episodes,
)


def _row(task: str, index: int, reward: float | None, partial: float | None, status: str = "ok",
         env: str = "crm") -> dict[str, Any]:
    return {"task_id": task, "sample_index": index, "env": env, "status": status, "reward": reward,
            "partial_score": partial}


def test_successes_are_all_kept_else_the_best_partial_above_the_bar() -> None:
    rows = [
        _row("a", 0, 1.0, 1.0), _row("a", 1, 0.0, 0.9), _row("a", 2, 1.0, 1.0),  # two successes
        _row("b", 0, 0.0, 0.5), _row("b", 1, 0.0, 0.75), _row("b", 2, 0.0, 0.75),  # best partial, first of a tie
        _row("c", 0, 0.0, 0.59), _row("c", 1, None, None, status="error"),  # nothing good enough
        _row("d", 0, None, None, status="error", env="homes"),  # only errors: never kept
        _row("e", 0, 0.0, 0.8, status="truncated", env="homes"),
    ]
    kept, report = select_episodes(list(enumerate(rows, start=1)), min_reward=1.0, min_partial=0.6)
    assert [(line, reason) for line, _, reason in kept] == [
        (1, REASON_REWARD), (3, REASON_REWARD), (5, REASON_PARTIAL), (10, REASON_PARTIAL)]
    assert report.kept == {REASON_REWARD: 2, REASON_PARTIAL: 2}
    assert report.kept_by_env == {"crm": {REASON_REWARD: 2, REASON_PARTIAL: 1}, "homes": {REASON_PARTIAL: 1}}
    assert report.tasks_without_kept == {"crm": 1, "homes": 1}
    assert (report.tasks, report.episodes, report.errors) == (5, 10, 2)
    assert "crm: tasks 3 · kept reward 2, best_partial 1" in report.render()


def test_limit_draws_tasks_across_the_dataset_with_the_seed() -> None:
    """The first N tasks of a built dataset are one family; RFT's limit must not sample only that."""
    tasks = [t for t in build_tasks(BuildConfig(apps=["code_host"], tasks_per_family=6, heldout_envs=[],
                                                compositions=[])) if t.split == "train"]
    assert len({t.family for t in tasks[:8]}) <= 2  # why a plain head would be wrong
    chosen = sample_tasks(tasks, 8, seed=0)
    assert len(chosen) == 8 and len({t.id for t in chosen}) == 8
    assert len({t.family for t in chosen}) >= 4
    assert [t.id for t in chosen] == [t.id for t in sample_tasks(tasks, 8, seed=0)]  # reproducible
    assert [t.id for t in chosen] != [t.id for t in sample_tasks(tasks, 8, seed=1)]
    positions = {t.id: i for i, t in enumerate(tasks)}
    assert [positions[t.id] for t in chosen] == sorted(positions[t.id] for t in chosen)  # dataset order kept
    assert sample_tasks(tasks, None, seed=0) == tasks and sample_tasks(tasks, 10**6, seed=0) == tasks


def test_thresholds_are_configurable() -> None:
    rows = list(enumerate([_row("a", 0, 0.5, 0.5), _row("a", 1, 0.0, 0.4)], start=1))
    assert [r for _, r, _ in select_episodes(rows, min_reward=0.5)[0]] == [rows[0][1]]
    assert select_episodes(rows, min_reward=1.0, min_partial=0.6)[0] == []
    assert [reason for *_, reason in select_episodes(rows, min_reward=1.0, min_partial=0.5)[0]] == [REASON_PARTIAL]


@pytest.fixture(scope="module")
def homes_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tasks = [t for t in build_tasks(BuildConfig(apps=["homes"], tasks_per_family=1, heldout_envs=[]))
             if t.split == "train"][:2]
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    write_jsonl(path, tasks)
    return path


@pytest.mark.slow
def test_rft_samples_the_real_model_at_temperature_and_keeps_nothing_it_never_finished(
        homes_tasks: Path, tmp_path: Path) -> None:
    """The untrained tiny model rambles until the token budget: every turn is cut off, nothing is trainable."""
    out = tmp_path / "rft"
    result = CliRunner().invoke(app, [
        "train", "rft", "--tasks", str(homes_tasks), "--model", str(tiny_model_dir()), "--out", str(out),
        "--samples-per-task", "2", "--temperature", "0.8", "--max-new-tokens", "12", "--max-turns", "2",
        "--min-partial", "0.0", "--max-steps", "2", "--threads", "1", "--no-progress", "--seed", "1",
    ])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "no episode met the thresholds" in text or "nothing to train on" in text
    assert "kept rows: best_partial 2" in text  # selected by partial score ...
    assert "no trainable turn (every assistant turn was malformed or cut off): 2" in text  # ... but all cut off
    results = read_jsonl(out / "rollout/results.jsonl")
    assert len(results) == 4 and {r["sample_index"] for r in results} == {0, 1}
    assert all(r["sampling"]["temperature"] == 0.8 and r["token_samples"] for r in results)
    assert {r["stop_condition"] for r in results} == {"max_tokens"}
    assert json.loads((out / "manifest.json").read_text())["status"] == "nothing_kept"


def _toy_tasks_file(path: Path) -> Path:
    tasks = mixed_tasks()
    complete = tasks[2]
    vague = complete.model_copy(update={"id": "toy/complete/vague", "expected_answer": "Finished."})  # 2 of 3 checks
    chosen = [tasks[0], tasks[1], tasks[3], vague, tasks[-2]]  # success, success, reward 0 + partial 0, partial, error
    write_jsonl(path, chosen)
    return path


def _sft_row(task_id: str) -> dict:
    return {"messages": [{"role": "user", "content": f"do {task_id}"}, {"role": "assistant", "content": "Done."}],
            "tools": [], "task_id": task_id}


def test_replay_rows_are_a_seeded_draw_marked_replay(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, [_sft_row(f"t/{i}") for i in range(10)])
    drawn = replay_rows(path, 4, seed=1)
    assert len(drawn) == 4 and all(r["rft_reason"] == REASON_REPLAY for r in drawn)
    assert [r["task_id"] for r in drawn] == [r["task_id"] for r in replay_rows(path, 4, seed=1)]
    assert [r["task_id"] for r in drawn] != [r["task_id"] for r in replay_rows(path, 4, seed=2)]
    assert len(replay_rows(path, 50, seed=1)) == 10
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(RFTError, match=r"rows\.jsonl.*11"):
        replay_rows(path, 4, seed=1)


@pytest.mark.slow
def test_rft_keeps_successes_and_best_partials_converts_with_token_ids_and_trains(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir()))
    replay = tmp_path / "teacher_rows.jsonl"
    write_jsonl(replay, [_sft_row(f"teacher/{i}") for i in range(3)])
    config = RFTConfig(tasks=str(_toy_tasks_file(tmp_path / "tasks.jsonl")), model=str(tiny_model_dir()),
                       out=str(tmp_path / "rft"), split=None, samples_per_task=2, max_turns=4, concurrency=1,
                       replay=str(replay), replay_ratio=0.4,
                       sft={"max_steps": 3, "save_every": 3, "eval_fraction": 0.0, "threads": 1, "lr": 1e-3})
    result = run_rft(config, policy=ReplayTokenPolicy(tokenizer), env_factory=env_factory)
    selection = result.selection
    assert selection.kept == {REASON_REWARD: 4, REASON_PARTIAL: 1}  # 2 tasks × 2 successes + the vague one's best
    assert (selection.tasks, selection.episodes, selection.errors) == (5, 10, 2)
    assert selection.tasks_without_kept == {"toy": 2}  # the zero-partial task and the erroring one
    rows = read_jsonl(tmp_path / "rft/rft_rows.jsonl")
    replayed = [r for r in rows if r["rft_reason"] == REASON_REPLAY]
    assert len(replayed) == 2 and {r["task_id"] for r in replayed} < {"teacher/0", "teacher/1", "teacher/2"}
    rows = [r for r in rows if r["rft_reason"] != REASON_REPLAY]
    assert sorted((r["task_id"], r["rft_reason"]) for r in rows) == [
        ("toy/add/0", REASON_REWARD), ("toy/add/0", REASON_REWARD), ("toy/complete/vague", REASON_PARTIAL),
        ("toy/list/0", REASON_REWARD), ("toy/list/0", REASON_REWARD)]
    vague = next(r for r in rows if r["task_id"] == "toy/complete/vague")
    assert vague["sample_index"] == 0 and vague["partial_score"] == pytest.approx(2 / 3)
    assert result.sft is not None and result.sft.steps == 3
    sft_manifest = json.loads((tmp_path / "rft/sft/manifest.json").read_text())
    assert sft_manifest["data_report"]["from_token_samples"] == 5  # the sampler's own ids, not re-rendered
    assert sft_manifest["train_samples"] == 7  # and the 2 replayed teacher rows
    assert (tmp_path / "rft/sft/final/config.json").is_file()
    manifest = json.loads((tmp_path / "rft/manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["selection"]["kept_by_env"] == {
        "toy": {REASON_REWARD: 4, REASON_PARTIAL: 1}}



def test_a_hand_edited_results_file_is_named_by_file_line_and_field(tmp_path: Path) -> None:
    from test_rollout_support import suite_tasks
    from toolgym.data.convert import ConvertOptions
    from toolgym.train.rft import selected_sft_rows

    tasks = [t for t in suite_tasks(apps=["code_host"]) if t.env == "code_host"][:2]
    write_jsonl(tmp_path / "tasks.jsonl", tasks)
    result = CliRunner().invoke(app, ["rollout", "--tasks", str(tmp_path / "tasks.jsonl"), "--policy", "oracle",
                                      "--out", str(tmp_path / "run"), "--no-progress"])
    assert result.exit_code == 0, result.output
    results = tmp_path / "run" / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows[1]["reward"] = "high"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(RFTError, match=r"results\.jsonl:2: field 'reward'"):
        selected_sft_rows(results, min_reward=1.0, min_partial=0.6, options=ConvertOptions())
