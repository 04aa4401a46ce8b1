"""Rollout/train mismatch correction on hand-computed examples: truncated and masked IS, token and sequence."""

from __future__ import annotations

import math

import pytest
import torch

from toolgym.train.grpo.mismatch import (
    MismatchSettings,
    MismatchStats,
    correction_weights,
    masked_is_weights,
    truncated_is_weights,
)

# Trainer log-probs 0; sampler log-probs chosen so that ρ = π_old / π_sampler = 0.5, 2, 4, 1 (float32, so
# the mask bounds keep a little room around 0.5 and 2).
OLD = torch.zeros(4)
SAMPLER = torch.tensor([math.log(2.0), -math.log(2.0), -math.log(4.0), 0.0])
EPISODES = torch.tensor([0, 0, 1, 1])  # sequence ρ: 0.5·2 = 1 and 4·1 = 4; geometric: 1 and 2


def test_truncated_is_by_hand() -> None:
    assert truncated_is_weights(OLD, SAMPLER, cap=2.0).tolist() == pytest.approx([0.5, 2.0, 2.0, 1.0])
    assert truncated_is_weights(OLD, SAMPLER, cap=2.0, episodes=EPISODES, level="sequence").tolist() == \
        pytest.approx([1.0, 1.0, 2.0, 2.0])
    assert truncated_is_weights(OLD, SAMPLER, cap=3.0, episodes=EPISODES, level="geometric").tolist() == \
        pytest.approx([1.0, 1.0, 2.0, 2.0])


def test_masked_is_by_hand() -> None:
    assert masked_is_weights(OLD, SAMPLER, low=0.45, high=2.1).tolist() == [1.0, 1.0, 0.0, 1.0]
    assert masked_is_weights(OLD, SAMPLER, low=0.6, high=2.1).tolist() == [0.0, 1.0, 0.0, 1.0]
    assert masked_is_weights(OLD, SAMPLER, low=0.45, high=2.1, episodes=EPISODES, level="sequence").tolist() == \
        [1.0, 1.0, 0.0, 0.0]
    assert masked_is_weights(OLD, SAMPLER, low=0.45, high=2.1, episodes=EPISODES, level="geometric").tolist() == \
        [1.0, 1.0, 1.0, 1.0]
    assert masked_is_weights(OLD, SAMPLER, low=0.45, high=1.9, episodes=EPISODES, level="geometric").tolist() == \
        [1.0, 1.0, 0.0, 0.0]


def test_settings_choose_the_weights_and_the_stats_report_them() -> None:
    none = MismatchSettings()
    assert correction_weights(none, OLD, SAMPLER).tolist() == [1.0] * 4
    mis = MismatchSettings(kind="mis", level="token", low=0.45, high=2.1)
    weights = correction_weights(mis, OLD, SAMPLER, EPISODES)
    stats = MismatchStats()
    stats.add(OLD, SAMPLER, weights, mis, EPISODES)
    row = stats.row()
    assert row["mismatch_abs_log_ratio"] == pytest.approx(math.log(2.0))  # (ln2 + ln2 + ln4 + 0) / 4
    assert row["mismatch_max_ratio"] == pytest.approx(4.0)
    assert row["mismatch_masked_fraction"] == 0.25
    tis = MismatchSettings(kind="tis", level="sequence", cap=2.0)
    stats = MismatchStats()
    stats.add(OLD, SAMPLER, correction_weights(tis, OLD, SAMPLER, EPISODES), tis, EPISODES)
    assert stats.row()["mismatch_truncated_fraction"] == 0.5  # the second sequence's two tokens
    assert stats.row()["mismatch_masked_fraction"] == 0.0
    with pytest.raises(ValueError, match="below"):
        MismatchSettings(kind="mis", low=2.0, high=1.0)
    with pytest.raises(ValueError, match="episode index"):
        truncated_is_weights(OLD, SAMPLER, cap=2.0, level="sequence")
