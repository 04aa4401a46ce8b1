"""Turn-level credit (advantage.credit: turn): advantages computed by hand for a group of real episodes, matched
against what the trainer puts on every trained token; episode credit left exactly as it was."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from test_agent_support import call_text
from test_credit_support import complete_task, play
from test_grpo_support import read_jsonl, run_toy, toy_config
from toolgym.agent.samples import build_samples
from toolgym.algorithms.advantages import Group, build_groups
from toolgym.algorithms.registry import names
from toolgym.algorithms.turn_credit import TurnCreditError, assign_credit, credit_metrics, smear
from toolgym.config.base import ConfigError
from toolgym.config.grpo import GRPOSettings
from toolgym.schema import Episode, TokenTurn
from toolgym.train.batching import collate
from toolgym.train.grpo.config import grpo_config_from_dict
from toolgym.train.grpo.turn_tokens import token_advantages
from toolgym.train.grpo.update import _aligned, train_items, with_weights

ALPHA = 0.5
# float32 keeps 24 significant bits: an advantage below 4 in magnitude lands within 2^-22 ≈ 2.4e-7 of its float64
FLOAT32 = 2.0 ** -22
# the hand computation and the trainer's add the same O(1) terms in other orders: a few float64 ulps apart
FLOAT64 = 1e-12
MALFORMED = '<tool_call>\n{"name": "add_note", "arguments": {"title": }}\n</tool_call>'


def group_episodes() -> list[Episode]:
    """One task, five real episodes: a success that reads first, a write undone, a turn with no tool call, an
    answer alone, and an infrastructure error (the toy app's crashing tool)."""
    task = complete_task()
    scripts = [
        [call_text("list_my_notes"), call_text("complete_note", note_id=1), "Note 1 is done."],
        [call_text("complete_note", note_id=1), call_text("reopen_note", note_id=1), "Note 1 is done."],
        [MALFORMED, call_text("complete_note", note_id=1), "Finished."],
        ["Done."],
        [call_text("crash")],
    ]
    return [play(task, script, sample_index=i) for i, script in enumerate(scripts)]


def settings(**advantage: object) -> GRPOSettings:
    return GRPOSettings.model_validate({"reward": {"alpha": ALPHA},
                                        "advantage": {"credit": "turn", **advantage}})


def trainer_groups(episodes: list[Episode], config: GRPOSettings) -> list[Group]:
    """What the trainer's step does before its update: build the groups, then assign their credit."""
    groups, _ = build_groups(episodes, config.reward.alpha_for, std_normalize=config.advantage.std_normalize,
                             baseline=config.advantage.baseline)
    assign_credit(groups, config.advantage)
    return groups


def trained_advantages(groups: list[Group], config: GRPOSettings) -> list[list[float]]:
    """Per trained episode, the advantage the update's loss gives each trained token, in order."""
    items = with_weights(train_items(groups), config.loss.aggregation, None)
    per_episode: dict[int, list[float]] = {}
    for item in items:
        aligned = _aligned([item], collate([item.sample], pad_id=0))
        per_episode.setdefault(item.episode, []).extend(aligned.advantages.tolist())
    return [per_episode[k] for k in sorted(per_episode)]


def outcome_by_hand(shaped: list[float]) -> list[float]:
    mean = sum(shaped) / len(shaped)
    std = math.sqrt(sum((r - mean) ** 2 for r in shaped) / (len(shaped) - 1))
    return [(r - mean) / (std + 1e-6) for r in shaped]


def turn_by_hand(outcomes: list[float], credits: list[list[float]], tokens: list[list[int]], weight: float,
                 ) -> list[list[float]]:
    """a_i,t = A_i + w · (c_i,t − token-weighted mean of c_i) / RMS over all the group's turns."""
    centred = []
    for c, n in zip(credits, tokens, strict=True):
        mean = sum(ci * ni for ci, ni in zip(c, n, strict=True)) / sum(n)
        centred.append([ci - mean for ci in c])
    scale = math.sqrt(sum(u * u for us in centred for u in us) / sum(len(us) for us in centred))
    return [[a + weight * u / scale for u in us] for a, us in zip(outcomes, centred, strict=True)]


@pytest.fixture(scope="module")
def episodes() -> list[Episode]:
    return group_episodes()


def test_the_group_holds_the_progress_the_hand_computation_starts_from(episodes: list[Episode]) -> None:
    assert [e.progress for e in episodes[:4]] == [[0.0, 0.0, 0.75, 1.0], [0.0, 0.75, 0.0, 0.25],
                                                  [0.0, 0.0, 0.75, 0.75], [0.0, 0.25]]
    assert [e.reward for e in episodes[:4]] == [1.0, 0.0, 0.0, 0.0]
    assert episodes[2].format_errors == 1 and episodes[3].tool_calls_by_tool == {}
    assert episodes[4].status == "error" and episodes[4].error.startswith("env error")


@pytest.mark.parametrize("discount", [0.0, 0.5])
def test_turn_advantages_by_hand_match_every_trained_token(episodes: list[Episode], discount: float) -> None:
    config = settings(turn_weight=0.5, turn_discount=discount)
    [group] = trainer_groups(episodes, config)
    assert group.errored == 1 and len(group.episodes) == 4  # the infrastructure error is never scored
    # shaped rewards: reward + 0.5 · partial_score
    outcomes = outcome_by_hand([1.0 + 0.5 * 1.0, 0.5 * 0.25, 0.5 * 0.75, 0.5 * 0.25])
    assert group.advantages == pytest.approx(outcomes, abs=FLOAT64)
    gains = [[0.0, 0.75, 0.25], [0.75, -0.75, 0.25], [0.0, 0.75, 0.0], [0.25]]
    if discount == 0.0:
        credits = gains
    else:  # each gain shared back with weights 0.5^distance over its turn and the ones before, summing to 1
        credits = [[0.75 * 0.5 / 1.5 + 0.25 * 0.25 / 1.75, 0.75 / 1.5 + 0.25 * 0.5 / 1.75, 0.25 / 1.75],
                   [0.75 - 0.75 * 0.5 / 1.5 + 0.25 * 0.25 / 1.75, -0.75 / 1.5 + 0.25 * 0.5 / 1.75, 0.25 / 1.75],
                   [0.75 * 0.5 / 1.5, 0.75 / 1.5, 0.0],
                   [0.25]]
    tokens = [[len(t.completion_ids) for t in e.token_turns] for e in group.episodes]
    expected = turn_by_hand(group.advantages, credits, tokens, 0.5)
    assert group.turn_advantages is not None
    for got, want in zip(group.turn_advantages, expected, strict=True):
        assert got == pytest.approx(want, abs=FLOAT64)
    # an episode of one turn has nothing to move between turns: its advantage is its outcome, exactly
    assert group.turn_advantages[3] == [group.advantages[3]]
    # the shift is zero-sum over each episode's tokens: its total advantage stays A_i · tokens
    for a, per_turn, n in zip(group.advantages, group.turn_advantages, tokens, strict=True):
        assert sum(x * k for x, k in zip(per_turn, n, strict=True)) == pytest.approx(a * sum(n), abs=FLOAT64)
    # what the loss sees: every trained token of turn t carries a_i,t (float32)
    per_token = [[x for x, k in zip(per_turn, n, strict=True) for _ in range(k)] for per_turn, n in zip(expected, tokens, strict=True)]
    for got, want in zip(trained_advantages([group], config), per_token, strict=True):
        assert got == pytest.approx(want, abs=4 * FLOAT32)


def test_the_undone_write_takes_its_credit_back(episodes: list[Episode]) -> None:
    [group] = trainer_groups(episodes, settings(turn_weight=1.0))
    assert group.turn_advantages is not None
    write, undo, _ = group.turn_advantages[1]
    outcome = group.advantages[1]
    assert write > outcome > undo  # the write is credited, its undo pays it back
    read, success_write, success_answer = group.turn_advantages[0]
    assert success_write > success_answer > read  # the read made no progress: below the episode's mean


def test_weight_zero_and_episode_credit_give_every_token_its_episode_advantage(episodes: list[Episode]) -> None:
    episode_config = GRPOSettings.model_validate({"reward": {"alpha": ALPHA}})
    [flat] = trainer_groups(episodes, episode_config)
    assert flat.turn_advantages is None
    flat_tokens = trained_advantages([flat], episode_config)
    [zero] = trainer_groups(episodes, settings(turn_weight=0.0))
    assert zero.turn_advantages == [[a] * len(e.token_turns) for a, e in zip(zero.advantages, zero.episodes, strict=True)]
    assert trained_advantages([zero], settings(turn_weight=0.0)) == flat_tokens
    assert all(len(set(tokens)) == 1 for tokens in flat_tokens)


def test_step_metrics_of_turn_credit(episodes: list[Episode]) -> None:
    config = settings(turn_weight=0.5)
    groups = trainer_groups(episodes, config)
    row = credit_metrics(episodes, groups)
    levels = [0.0, 0.75, 1.0, 0.75, 0.0, 0.25, 0.0, 0.75, 0.75, 0.25]  # progress after each of the 10 scored turns
    gains = [0.0, 0.75, 0.25, 0.75, -0.75, 0.25, 0.0, 0.75, 0.0, 0.25]
    assert row["progress_mean"] == pytest.approx(sum(levels) / 10, abs=FLOAT64)
    assert row["progress_gain_per_turn"] == pytest.approx(sum(gains) / 10, abs=FLOAT64)
    assert (row["turns_with_gain"], row["turns_with_loss"], row["episodes_with_loss"]) == (6, 1, 1)
    [group] = groups
    assert group.turn_advantages is not None
    moved = total = 0.0
    flips = 0
    for e, a, per_turn in zip(group.episodes, group.advantages, group.turn_advantages, strict=True):
        for turn, x in zip(e.token_turns, per_turn, strict=True):
            moved += len(turn.completion_ids) * abs(x - a)
            total += len(turn.completion_ids) * abs(x)
            flips += x * a < 0
    assert row["turn_credit_share"] == pytest.approx(moved / total, abs=FLOAT64) and 0 < row["turn_credit_share"] < 1
    assert row["turn_sign_flips"] == flips


def test_missing_or_misaligned_progress_stops_the_run(episodes: list[Episode]) -> None:
    config = settings()
    untracked = [e.model_copy(update={"progress": None}) if e.sample_index == 1 else e for e in episodes]
    with pytest.raises(TurnCreditError, match="sample 1: no per-turn progress"):
        trainer_groups(untracked, config)
    short = [e.model_copy(update={"progress": e.progress[:-1]}) if e.sample_index == 2 else e  # type: ignore[index]
             for e in episodes]
    with pytest.raises(TurnCreditError, match="sample 2: 3 progress values for 3 sampled turns"):
        trainer_groups(short, config)


def test_turn_advantages_reach_the_right_tokens_when_a_rewritten_history_splits_the_episode() -> None:
    turns = [
        TokenTurn(prompt_ids=[1, 2, 3], completion_ids=[10, 11, 2], logprobs=[-0.1, -0.2, -0.3]),
        TokenTurn(prompt_ids=[1, 2, 3, 99, 2, 7], completion_ids=[12, 2], logprobs=[-0.4, -0.5]),  # rewritten
        TokenTurn(prompt_ids=[1, 2, 3, 99, 2, 7, 12, 2, 5], completion_ids=[13, 2], logprobs=[-0.6, -0.7]),
    ]
    episode = Episode(task_id="t", env="toy", token_turns=turns, samples=build_samples(turns), turns=3,
                      progress=[0.0, 0.5, 0.5, 1.0])
    first, second = token_advantages(episode, [0.25, -0.5, 1.5])
    assert first == [0.0, 0.0, 0.0, 0.25, 0.25, 0.25]
    assert second == [0.0] * 6 + [-0.5, -0.5, 0.0, 1.5, 1.5]
    with pytest.raises(TurnCreditError, match="2 turn advantages for 3 turns"):
        token_advantages(episode, [0.25, -0.5])
    foreign = episode.model_copy(update={"samples": build_samples(turns[:1])})
    with pytest.raises(TurnCreditError, match="chain into 2 samples, the episode holds 1"):
        token_advantages(foreign, [0.25, -0.5, 1.5])


def test_the_discount_shares_each_gain_back_and_keeps_the_total() -> None:
    credit = smear([0.75, -0.75, 0.25], 0.5)
    assert credit == pytest.approx([0.75 - 0.25 + 0.25 / 7, -0.5 + 0.5 / 7, 1 / 7], abs=FLOAT64)
    assert sum(credit) == pytest.approx(0.25, abs=FLOAT64)
    assert smear([0.75, -0.75, 0.25], 0.0) == [0.75, -0.75, 0.25]
    assert smear([0.0, 0.0, 0.9], 1.0) == pytest.approx([0.3, 0.3, 0.3], abs=FLOAT64)


def test_credit_is_a_registered_option_checked_by_the_config(tmp_path: Path) -> None:
    assert {"episode", "turn"} <= set(names("credit"))
    assert GRPOSettings().advantage.credit == "episode"
    with pytest.raises(ValueError, match="credit must be one of episode, turn"):
        GRPOSettings.model_validate({"advantage": {"credit": "token"}})
    with pytest.raises(ValueError, match="positive_only"):
        GRPOSettings.model_validate({"advantage": {"credit": "turn"}, "experimental": {"positive_only": True}})
    with pytest.raises(ConfigError, match="turn_discount"):
        grpo_config_from_dict({"tasks": "t", "model": "m", "out": "o", "advantage": {"turn_discount": 1.5}}, "cfg")


@pytest.mark.slow
def test_a_run_with_turn_credit_logs_progress_and_its_rollouts_carry_it(tmp_path: Path) -> None:
    config = toy_config(tmp_path, tmp_path / "run", steps=2, save_rollouts=True, eval={"enabled": False},
                        advantage={"credit": "turn", "turn_discount": 0.5})
    run_toy(config)
    rows = [r for r in read_jsonl(tmp_path / "run" / "metrics.jsonl") if r["kind"] == "train"]
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert row["progress_mean"] is not None and 0.0 <= row["progress_mean"] <= 1.0
        assert row["turns_with_gain"] >= 0 and row["turns_with_loss"] >= 0 and row["turn_sign_flips"] >= 0
        assert "progress_gain_per_turn" in row and "turn_credit_share" in row and "episodes_with_loss" in row
    episodes = read_jsonl(tmp_path / "run" / "rollouts" / "step-1.jsonl")
    scored = [r for r in episodes if r["status"] != "error"]
    assert scored and all(len(r["progress"]) == r["metrics"]["turns"] + 1 for r in scored)
    assert all(r["progress"][-1] == r["partial_score"] for r in scored)


@pytest.mark.slow
def test_turn_credit_at_weight_zero_trains_the_same_weights_as_episode_credit(tmp_path: Path) -> None:
    """The control: scoring every turn changes no episode, and w = 0 gives every token its episode's advantage."""
    finals = []
    for name, advantage in (("episode", {}), ("turn0", {"credit": "turn", "turn_weight": 0.0})):
        config = toy_config(tmp_path, tmp_path / name, steps=2, eval={"enabled": False}, advantage=advantage)
        finals.append(Path(run_toy(config).final_dir) / "model.safetensors")
        rows = [r for r in read_jsonl(tmp_path / name / "metrics.jsonl") if r["kind"] == "train"]
        assert sum(r["optimizer_steps"] for r in rows) > 0  # the runs trained, so equal weights mean equal updates
    assert finals[0].read_bytes() == finals[1].read_bytes()
