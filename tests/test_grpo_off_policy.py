"""One-step-off-policy GRPO on the toy app: each step trains on episodes sampled by the previous step's
weights, the versions are recorded, pending rollouts survive a restart, and the staleness bound holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from test_grpo_support import first_token_parity, read_jsonl, run_toy, toy_config
from toolgym.config.base import ConfigError
from toolgym.schema import Episode
from toolgym.train.grpo.config import GRPOConfig, grpo_config_from_dict
from toolgym.train.grpo.off_policy import SampledStep, within_staleness

pytestmark = pytest.mark.slow

OFF_POLICY = {"steps": 3, "samples_per_task": 4, "save_rollouts": True, "optim": {"lr": 5e-2},
              "loss": {"mismatch": {"kind": "tis", "cap": 2.0}}, "off_policy": {"enabled": True, "max_staleness": 1},
              "checkpoint": {"save_every": 1}, "eval": {"every": 2, "concurrency": 4, "limit": 1}}
TIMING = {"elapsed_s", "cpu_s", "seconds_rollout", "seconds_update", "seconds_rollout_wait"}


def train_rows(out: Path) -> list[dict[str, Any]]:
    return [r for r in read_jsonl(out / "metrics.jsonl") if r["kind"] == "train"]


def off_policy_config(root: Path, out: Path, **overrides: Any) -> GRPOConfig:
    return toy_config(root, out, **{**OFF_POLICY, **overrides})


class StopAtStep3(Exception):
    """Raised by the reward of the interrupted run when step 3's episodes are scored."""


def reward_until_step_3(episode: Episode) -> float:
    """first_token_parity, except that it fails on the episodes sampled by version 1: step 3's, off-policy."""
    if (episode.checkpoint or "").endswith("@step-1"):
        raise StopAtStep3("the run stops here")
    return first_token_parity(episode)


def assert_same_rows(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    assert len(a) == len(b)
    for row_a, row_b in zip(a, b, strict=True):
        for key in set(row_a) - TIMING:
            if isinstance(row_a[key], float):
                assert row_b[key] == pytest.approx(row_a[key], rel=1e-5, abs=1e-7), (row_a["step"], key)
            else:
                assert row_b[key] == row_a[key], (row_a["step"], key)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An unbroken off-policy run, an on-policy run of the same seed, and an off-policy run stopped while
    scoring step 3 (its last checkpoint: step 2, with step 3's rollouts pending)."""
    root = tmp_path_factory.mktemp("off_policy")
    run_toy(off_policy_config(root, root / "unbroken"))
    run_toy(toy_config(root, root / "on_policy", **{**OFF_POLICY, "off_policy": {"enabled": False}}))
    with pytest.raises(StopAtStep3):
        run_toy(off_policy_config(root, root / "stopped"), reward_fn=reward_until_step_3)
    return {"root": root, "unbroken": root / "unbroken", "on_policy": root / "on_policy", "stopped": root / "stopped"}


def test_each_step_trains_on_the_previous_steps_weights(runs: dict[str, Path]) -> None:
    rows = train_rows(runs["unbroken"])
    assert [r["step"] for r in rows] == [1, 2, 3]
    # step 1 samples the initial weights itself; step N ≥ 2 trains on what version N-2 sampled during step N-1
    assert [r["policy_version"] for r in rows] == [0, 0, 1]
    assert [r["staleness"] for r in rows] == [0, 1, 1]
    assert all(r["episodes_too_stale"] == 0 and r["seconds_rollout_wait"] >= 0 for r in rows)
    for row in rows:
        episodes = read_jsonl(runs["unbroken"] / "rollouts" / f"step-{row['step']}.jsonl")
        assert len(episodes) == row["episodes"] == 8
        assert {(e["policy_version"], e["staleness"]) for e in episodes} == {(row["policy_version"], row["staleness"])}
    assert rows[0]["updated"]  # so the later steps' samplers are really older than the trained weights
    # the importance weights see the stale sampler: trainer and sampler log-probs differ from step 2 on
    assert rows[0]["mismatch_abs_log_ratio"] < 1e-5 < rows[1]["mismatch_abs_log_ratio"]
    # evals (steps 2 and 3) waited for the prefetch and ran on the weights of their step
    assert sorted(p.name for p in (runs["unbroken"] / "evals").iterdir()) == ["step-0", "step-2", "step-3"]


def test_the_first_step_is_the_on_policy_step_and_on_policy_rows_say_staleness_0(runs: dict[str, Path]) -> None:
    off, on = train_rows(runs["unbroken"]), train_rows(runs["on_policy"])
    off_first = {k: v for k, v in off[0].items() if k not in {"seconds_rollout_wait", "episodes_too_stale"}}
    assert_same_rows([on[0]], [off_first])  # same weights, same seed: the snapshot engine samples the same episodes
    assert [r["policy_version"] for r in on] == [0, 1, 2] and {r["staleness"] for r in on} == {0}
    assert "seconds_rollout_wait" not in on[0]
    assert on[1]["reward_mean"] != off[1]["reward_mean"]  # step 2 differs: off-policy sampled the older weights


def test_a_stopped_run_resumes_with_its_pending_rollouts(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "stopped"
    shutil.copytree(runs["stopped"], out)
    state = json.loads((out / "checkpoints" / "step-00000002" / "trainer_state.json").read_text())
    assert state["pending_rollouts"]["step"] == 2 and set(state["pending_rollouts"]["versions"]) == {1}
    result = run_toy(off_policy_config(runs["root"], out))
    assert result.resumed_from_step == 2 and result.steps == 3
    assert_same_rows(train_rows(runs["unbroken"]), train_rows(out))
    assert sampled_ids(out / "rollouts" / "step-3.jsonl") == sampled_ids(runs["unbroken"] / "rollouts" / "step-3.jsonl")


def sampled_ids(path: Path) -> list[tuple[str, int, list[list[int]]]]:
    """Per rollout row: task, weights version and the sampled token ids of each turn."""
    return [(row["episode"]["task_id"], row["policy_version"],
             [turn["completion_ids"] for turn in row["episode"]["token_turns"]]) for row in read_jsonl(path)]


def test_episodes_past_the_staleness_bound_are_never_trained_on(runs: dict[str, Path], tmp_path: Path) -> None:
    # by hand: step 4 with max_staleness 1 keeps only what version 3 sampled
    episodes = [Episode(task_id=f"t/{i}", env="toy") for i in range(4)]
    sampled = SampledStep(step=4, tasks=[], episodes=episodes, rounds=1, versions=[3, 2, 1, 3])
    kept = within_staleness(sampled, max_staleness=1)
    assert [e.task_id for e in kept.episodes] == ["t/0", "t/3"] and kept.versions == [3, 3] and kept.too_stale == 2
    assert within_staleness(sampled, max_staleness=3) is sampled
    # in a run: the checkpoint's pending rollouts made older by hand are dropped and step 3 samples afresh
    out = tmp_path / "stale"
    shutil.copytree(runs["stopped"], out)
    state_file = out / "checkpoints" / "step-00000002" / "trainer_state.json"
    state = json.loads(state_file.read_text())
    state["pending_rollouts"]["versions"] = [0] * len(state["pending_rollouts"]["versions"])  # staleness 2
    state_file.write_text(json.dumps(state))
    run_toy(off_policy_config(runs["root"], out))
    last = train_rows(out)[-1]
    assert last["step"] == 3 and last["episodes_too_stale"] == 8
    assert (last["policy_version"], last["staleness"]) == (2, 0)
    assert {e["policy_version"] for e in read_jsonl(out / "rollouts" / "step-3.jsonl")} == {2}


def test_off_policy_needs_a_mismatch_correction_and_off_keeps_the_fingerprint(tmp_path: Path) -> None:
    base = {"tasks": "t", "model": "m", "out": "o"}
    with pytest.raises(ConfigError, match=r"off_policy.*loss.mismatch.kind"):
        grpo_config_from_dict({**base, "off_policy": {"enabled": True}}, "test config")
    with pytest.raises(ConfigError, match=r"max_staleness"):
        grpo_config_from_dict({**base, "off_policy": {"max_staleness": 0}}, "test config")
    plain = grpo_config_from_dict(base, "test config")
    off = grpo_config_from_dict({**base, "off_policy": {"enabled": False, "max_staleness": 3}}, "test config")
    on = grpo_config_from_dict({**base, "off_policy": {"enabled": True}, "loss": {"mismatch": {"kind": "tis"}}},
                               "test config")
    assert plain.fingerprint() == off.fingerprint() != on.fingerprint()
