"""Shaped rewards and honest groups: who gets an advantage, and who is only counted.

A group is the G episodes of one task in one step. Episodes with status "error" failed because
infrastructure broke (env, verifier, server, timeout): they leave the group and are counted, never
scored 0 (docs/architecture.md, "infrastructure errors are not rewards"). A group left with fewer than 2 episodes, or whose rewards are
all equal, has no relative signal: it gives no gradient and is counted too.

Except, optionally, a *solved* group (every episode succeeded): with `solved_anchor` > 0 its first
`anchor_episodes` episodes get that advantage. GRPO otherwise trains only on contexts where the
policy is undecided, and an update that fixes those drifts freely on the ones it already gets
right (a choice flipped everywhere instead of learned where it applies); the anchor pushes back
there. It is off by default: on the tiny model it did not stop such a flip.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from toolgym.schema import Episode

ZERO_VARIANCE = 1e-12
MIN_GROUP_SIZE = 2


def shaped_reward(task_reward: float, partial_score: float, alpha: float) -> float:
    """task_reward + alpha · partial_score (the tau2 RL pipeline's shaping; alpha 0 turns it off)."""
    return task_reward + alpha * partial_score


def group_advantages(rewards: Sequence[float], std_normalize: bool = True, eps: float = 1e-6,
                     positive_only: bool = False, baseline: str = "group_mean") -> list[float]:
    """(r - mean) / (std + eps) with the sample std (n - 1), or just r - mean (Dr. GRPO).

    `baseline` names a registered baseline (registry.py): group_mean, or leave_one_out (RLOO), which
    subtracts the mean of the *other* episodes so the baseline no longer contains the episode it judges.

    `positive_only` zeroes the negative ones: episodes above their group's mean are reinforced, the
    rest are left alone (rejection sampling with the group mean as baseline). Callers skip groups of
    < 2 rewards or zero variance (`build_groups`); here they give zeros.
    """
    n = len(rewards)
    if n < MIN_GROUP_SIZE:
        return [0.0] * n
    from toolgym.algorithms.registry import lookup

    try:
        centre = lookup("baseline", baseline)
    except ValueError as exc:
        raise ValueError(f"advantage {exc}") from None
    centred = centre(list(rewards))
    if std_normalize:
        std = math.sqrt(sum(c * c for c in centred) / (n - 1))
        centred = [c / (std + eps) for c in centred]
    return [max(c, 0.0) for c in centred] if positive_only else centred


@dataclass
class Group:
    """One task's episodes of one step, after errored episodes left it."""

    task_id: str
    env: str
    episodes: list[Episode]  # scored episodes only (status ok or truncated)
    rewards: list[float]  # shaped
    advantages: list[float]
    errored: int = 0
    reason: str = "signal"  # signal | too_small | zero_variance | anchor (solved, trained by solved_anchor)
    # advantage.credit turn: each episode's advantage per agent turn (turn_credit.py); None: one per episode
    turn_advantages: list[list[float]] | None = None

    @property
    def has_signal(self) -> bool:
        return self.reason == "signal"


@dataclass
class GroupStats:
    """What the step's groups held: the counts metrics.jsonl reports."""

    groups: int = 0
    groups_with_signal: int = 0
    groups_too_small: int = 0
    groups_zero_variance: int = 0
    groups_anchored: int = 0  # solved groups trained with `solved_anchor` (counted in zero_variance too)
    episodes: int = 0
    episodes_errored: int = 0
    errors_by_cause: dict[str, int] = field(default_factory=dict)
    error_examples: dict[str, str] = field(default_factory=dict)  # cause -> its first full message


def build_groups(episodes: Sequence[Episode], alpha_for_env: Callable[[str], float], *, std_normalize: bool = True,
                 positive_only: bool = False, baseline: str = "group_mean", solved_anchor: float = 0.0,
                 anchor_episodes: int = 2,
                 reward_fn: Callable[[Episode], float] | None = None) -> tuple[list[Group], GroupStats]:
    """Group episodes by task (first-seen order), drop errored ones, compute shaped rewards and advantages.

    `reward_fn` replaces the shaped reward (a custom reward); errored episodes never reach it.
    """
    by_task: dict[str, list[Episode]] = {}
    for episode in episodes:
        by_task.setdefault(episode.task_id, []).append(episode)
    stats = GroupStats()
    groups: list[Group] = []
    for task_id, members in by_task.items():
        stats.groups += 1
        stats.episodes += len(members)
        scored = [e for e in members if e.status != "error"]
        errored = len(members) - len(scored)
        stats.episodes_errored += errored
        for episode in members:
            if episode.status == "error":
                message = str(episode.error or "unknown")
                cause = message.split(":", 1)[0]
                stats.errors_by_cause[cause] = stats.errors_by_cause.get(cause, 0) + 1
                stats.error_examples.setdefault(cause, message[:500])
        rewards = [reward_fn(e) if reward_fn is not None
                   else shaped_reward(e.reward, e.partial_score, alpha_for_env(e.env)) for e in scored]
        group = Group(task_id=task_id, env=members[0].env, episodes=scored, rewards=rewards,
                      advantages=[0.0] * len(scored), errored=errored)
        if len(scored) < MIN_GROUP_SIZE:
            group.reason = "too_small"
            stats.groups_too_small += 1
        elif max(rewards) - min(rewards) <= ZERO_VARIANCE:
            group.reason = "zero_variance"
            stats.groups_zero_variance += 1
            if solved_anchor > 0 and all(e.succeeded for e in scored):
                group.reason = "anchor"
                stats.groups_anchored += 1
                k = min(anchor_episodes, len(scored))
                group.advantages = [solved_anchor] * k + [0.0] * (len(scored) - k)
        else:
            group.advantages = group_advantages(rewards, std_normalize, positive_only=positive_only,
                                                baseline=baseline)
            stats.groups_with_signal += 1
        groups.append(group)
    return groups, stats
