"""Turn-level credit (advantage.credit: turn): each agent turn's advantage from its episode's outcome and
the progress the turn made; the formula and why it has this form are the registered `turn` option's
docstring (registry.py) and docs/credit.md. Here: the arithmetic, the checks that progress lines up with
the turns, and the step's credit metrics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from toolgym.algorithms.advantages import ZERO_VARIANCE, Group
from toolgym.schema import Episode

ZERO_GAIN = 1e-12  # a progress change smaller than this is float noise of weighted sums, not a gain


class TurnCreditError(ValueError):
    """An episode's progress does not line up with its turns: turn credit would land on the wrong tokens."""


def progress_gains(episode: Episode) -> list[float]:
    """δ_t = progress[t] − progress[t−1], one per sampled turn; raises when progress is missing or misaligned."""
    name = f"task {episode.task_id!r} sample {episode.sample_index}"
    if episode.progress is None:
        raise TurnCreditError(f"{name}: no per-turn progress recorded (its rollout ran without turn_progress)")
    progress, turns = episode.progress, len(episode.token_turns)
    if len(progress) != turns + 1 or episode.turns != turns:
        raise TurnCreditError(f"{name}: {len(progress)} progress values for {turns} sampled turns "
                              f"({episode.turns} counted); want one per turn plus the seed's")
    return [progress[t] - progress[t - 1] for t in range(1, len(progress))]


def smear(gains: Sequence[float], discount: float) -> list[float]:
    """c_t = Σ_{k≥t} δ_k · γ^(k−t) / Σ_{j≤k} γ^(k−j): each gain shared over its turn and the earlier ones
    (shares summing to 1, so Σ c = Σ δ); γ = 0 leaves each gain on its own turn."""
    credit = [0.0] * len(gains)
    for k, gain in enumerate(gains):
        shares = [discount ** (k - j) for j in range(k + 1)]
        total = sum(shares)
        for j, share in enumerate(shares):
            credit[j] += gain * share / total
    return credit


def turn_advantages(outcomes: Sequence[float], gains: Sequence[Sequence[float]], tokens: Sequence[Sequence[int]], *,
                    weight: float, discount: float, std_normalize: bool) -> list[list[float]]:
    """a_i,t = A_i + w · u_i,t / s for one group (see the `turn` option): outcomes A_i, each episode's gains
    δ_i,t and trained tokens n_i,t per turn."""
    if not len(outcomes) == len(gains) == len(tokens):
        raise TurnCreditError(f"{len(outcomes)} outcomes, {len(gains)} gain lists, {len(tokens)} token lists")
    centred: list[list[float]] = []
    for episode_gains, counts in zip(gains, tokens, strict=True):
        if len(episode_gains) != len(counts):
            raise TurnCreditError(f"{len(episode_gains)} gains for {len(counts)} turns")
        credit = smear(episode_gains, discount)
        total = sum(counts)
        mean = sum(n * c for n, c in zip(counts, credit, strict=True)) / total if total else 0.0
        centred.append([c - mean for c in credit])
    turns = sum(len(u) for u in centred)
    scale = 1.0
    if std_normalize:
        scale = math.sqrt(sum(x * x for u in centred for x in u) / turns) if turns else 0.0
    if scale <= ZERO_VARIANCE:  # no turn of the group differs from its episode's mean: outcome credit alone
        return [[a] * len(u) for a, u in zip(outcomes, centred, strict=True)]
    return [[a + weight * x / scale for x in u] for a, u in zip(outcomes, centred, strict=True)]


def turn_tokens(episode: Episode) -> list[int]:
    """Trained tokens per sampled turn: every sampled id is trained (loss_mask 1), none of the prompt's."""
    return [len(turn.completion_ids) for turn in episode.token_turns]


def group_turn_advantages(group: Group, advantage: Any) -> list[list[float]]:
    """The `turn` option on one group with signal: its episodes' turn advantages (AdvantageSettings)."""
    gains = [progress_gains(e) for e in group.episodes]
    return turn_advantages(group.advantages, gains, [turn_tokens(e) for e in group.episodes],
                           weight=advantage.turn_weight, discount=advantage.turn_discount,
                           std_normalize=advantage.std_normalize)


def assign_credit(groups: Sequence[Group], advantage: Any) -> None:
    """Give each group with signal its per-turn advantages by the registered `advantage.credit` (episode:
    none, and every group is left exactly as it was)."""
    from toolgym.algorithms.registry import lookup

    option = lookup("credit", advantage.credit)
    for group in groups:
        if group.has_signal:
            group.turn_advantages = option.fn(group, advantage)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def credit_metrics(episodes: Sequence[Episode], groups: Sequence[Group]) -> dict[str, Any]:
    """The step's turn-credit numbers: progress over the scored episodes' turns, and what turn credit did to
    the trained advantages (its share of their token mass, and turns whose sign it turned against A)."""
    progresses = [list(e.progress) for e in episodes if e.status != "error" and e.progress is not None]
    per_episode = [[p[t] - p[t - 1] for t in range(1, len(p))] for p in progresses]
    levels = [value for p in progresses for value in p[1:]]
    gains = [g for episode_gains in per_episode for g in episode_gains]
    moved = total = 0.0
    flips = 0
    for group in groups:
        if group.turn_advantages is None:
            continue
        for episode, outcome, per_turn in zip(group.episodes, group.advantages, group.turn_advantages, strict=True):
            for n, value in zip(turn_tokens(episode), per_turn, strict=True):
                moved += n * abs(value - outcome)
                total += n * abs(value)
                flips += int(value * outcome < 0)
    return {
        "progress_mean": _mean(levels),
        "progress_gain_per_turn": _mean(gains),
        "turns_with_gain": sum(g > ZERO_GAIN for g in gains),
        "turns_with_loss": sum(g < -ZERO_GAIN for g in gains),
        "episodes_with_loss": sum(any(g < -ZERO_GAIN for g in episode_gains) for episode_gains in per_episode),
        "turn_credit_share": moved / total if total else None,
        "turn_sign_flips": flips,
    }
