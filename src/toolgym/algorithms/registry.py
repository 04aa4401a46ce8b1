"""GRPO's algorithm options by name: losses, advantage baselines, loss aggregations, credit assignments.

Each option is one registered function; the config validates `loss.objective`, `advantage.baseline`,
`loss.aggregation` and `advantage.credit` against these names, and the trainer looks them up here. Adding an option means adding
a function here (or registering one from anywhere before the config is validated): the trainer stays as is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from toolgym.algorithms.losses import Surrogate, clipped_surrogate_of, sequence_ratio_per_token


@dataclass(frozen=True)
class LossInputs:
    """Per trained token: the trainer's and sampler's log-probs, the advantage, and (for losses that ask for
    them) the episode's sequence ratio."""

    logprobs: torch.Tensor
    sampler_logprobs: torch.Tensor
    advantages: torch.Tensor
    sequence_ratios: torch.Tensor | None = None


@dataclass(frozen=True)
class LossOption:
    """A registered loss: per-token surrogate from the inputs and the loss settings."""

    fn: Callable[[LossInputs, Any], Surrogate]
    sequence_ratios: bool = False  # needs each episode's ratio, computed in a pass before the micro-batches


@dataclass(frozen=True)
class CreditOption:
    """A registered credit assignment: a group with signal → each episode's advantage per agent turn (None:
    every token of an episode gets the episode's advantage)."""

    fn: Callable[[Any, Any], list[list[float]] | None]  # (Group, AdvantageSettings)
    turn_progress: bool = False  # needs each episode's per-turn progress (the loop's turn_progress)


LOSSES: dict[str, LossOption] = {}
BASELINES: dict[str, Callable[[list[float]], list[float]]] = {}  # rewards → rewards minus their baseline
AGGREGATIONS: dict[str, Callable[[list[int], int | None], list[float]]] = {}  # tokens per episode → weights
CREDITS: dict[str, CreditOption] = {}
_KINDS: dict[str, dict[str, Any]] = {"loss": LOSSES, "baseline": BASELINES, "aggregation": AGGREGATIONS,
                                     "credit": CREDITS}


def names(kind: str) -> list[str]:
    """The registered option names of one kind: loss | baseline | aggregation | credit."""
    return list(_KINDS[kind])


def _register(kind: str, name: str, value: Any) -> None:
    if name in _KINDS[kind]:
        raise ValueError(f"a {kind} named {name!r} is registered already")
    _KINDS[kind][name] = value


def register_loss(name: str, *, sequence_ratios: bool = False) -> Callable[[Callable[..., Surrogate]], Callable[..., Surrogate]]:
    """Register `fn(inputs: LossInputs, loss: LossSettings) -> Surrogate` as loss objective `name`."""
    def decorate(fn: Callable[..., Surrogate]) -> Callable[..., Surrogate]:
        _register("loss", name, LossOption(fn, sequence_ratios))
        return fn
    return decorate


def register_baseline(name: str) -> Callable[[Callable[[list[float]], list[float]]], Callable[[list[float]], list[float]]]:
    """Register `fn(rewards) -> centred rewards` as advantage baseline `name` (std normalisation follows)."""
    def decorate(fn: Callable[[list[float]], list[float]]) -> Callable[[list[float]], list[float]]:
        _register("baseline", name, fn)
        return fn
    return decorate


def register_aggregation(name: str) -> Callable[[Callable[[list[int], int | None], list[float]]],
                                                Callable[[list[int], int | None], list[float]]]:
    """Register `fn(tokens_per_episode, constant) -> per-token weight of each episode` as aggregation `name`."""
    def decorate(fn: Callable[[list[int], int | None], list[float]]) -> Callable[[list[int], int | None], list[float]]:
        _register("aggregation", name, fn)
        return fn
    return decorate


def register_credit(name: str, *, turn_progress: bool = False) -> Callable[[Callable[[Any, Any], list[list[float]] | None]],
                                                                      Callable[[Any, Any], list[list[float]] | None]]:
    """Register `fn(group, advantage: AdvantageSettings) -> per-episode per-turn advantages | None` as credit
    `name`; `turn_progress` asks the rollouts for each turn's progress."""
    def decorate(fn: Callable[[Any, Any], list[list[float]] | None]) -> Callable[[Any, Any], list[list[float]] | None]:
        _register("credit", name, CreditOption(fn, turn_progress))
        return fn
    return decorate


def unregister(kind: str, name: str) -> None:
    """Drop an option (tests that register their own clean up with this)."""
    _KINDS[kind].pop(name, None)


def lookup(kind: str, name: str) -> Any:
    """The registered option, or a ValueError listing the known names."""
    options = _KINDS[kind]
    if name not in options:
        raise ValueError(f"{kind} must be one of {', '.join(options)}; got {name!r}")
    return options[name]


# -- losses -------------------------------------------------------------------------------------------

@register_loss("token")
def token_clip(inputs: LossInputs, loss: Any) -> Surrogate:
    """PPO's clipped surrogate of each token's ratio exp(logp - logp_sampler), with DAPO's clip-higher."""
    ratio = torch.exp(inputs.logprobs - inputs.sampler_logprobs)
    return clipped_surrogate_of(ratio, inputs.advantages, loss.clip_low, loss.clip_high)


@register_loss("sequence", sequence_ratios=True)
def sequence_clip(inputs: LossInputs, loss: Any) -> Surrogate:
    """GSPO: one ratio per episode (the geometric mean of its token ratios), clipped as a whole."""
    assert inputs.sequence_ratios is not None
    ratio = sequence_ratio_per_token(inputs.logprobs, inputs.sequence_ratios)
    return clipped_surrogate_of(ratio, inputs.advantages, loss.clip_low, loss.clip_high)


# -- advantage baselines ----------------------------------------------------------------------------

@register_baseline("group_mean")
def group_mean(rewards: list[float]) -> list[float]:
    """r - mean(r): GRPO's baseline."""
    mean = sum(rewards) / len(rewards)
    return [r - mean for r in rewards]


@register_baseline("leave_one_out")
def leave_one_out(rewards: list[float]) -> list[float]:
    """RLOO: r - mean of the *other* episodes = n / (n - 1) · (r - mean)."""
    n = len(rewards)
    return [c * n / (n - 1) for c in group_mean(rewards)]


# -- aggregations -----------------------------------------------------------------------------------

@register_aggregation("token_mean")
def token_mean(tokens: list[int], constant: int | None) -> list[float]:
    """Every token of the step counts the same (DAPO): 1 / all tokens."""
    total = sum(n for n in tokens if n > 0)
    return [1.0 / total if n else 0.0 for n in tokens]


@register_aggregation("sequence_mean")
def sequence_mean(tokens: list[int], constant: int | None) -> list[float]:
    """Each episode's tokens are averaged, then episodes (GRPO): 1 / (len · episodes)."""
    episodes = sum(n > 0 for n in tokens)
    return [1.0 / (n * episodes) if n else 0.0 for n in tokens]


@register_aggregation("dr_grpo")
def dr_grpo(tokens: list[int], constant: int | None) -> list[float]:
    """No length normalisation (Dr. GRPO): 1 / (episodes · constant), a fixed token budget."""
    if not constant or constant < 1:
        raise ValueError("dr_grpo aggregation needs a positive constant (tokens per episode budget)")
    episodes = sum(n > 0 for n in tokens)
    return [1.0 / (episodes * constant) if n else 0.0 for n in tokens]


# -- credit assignment ------------------------------------------------------------------------------

@register_credit("episode")
def episode_credit(group: Any, advantage: Any) -> None:
    """Every token of an episode gets the episode's group advantage: GRPO as it always was."""
    return None


@register_credit("turn", turn_progress=True)
def turn_credit(group: Any, advantage: Any) -> list[list[float]]:
    """The episode's outcome advantage, shifted per agent turn by the progress that turn made.

    For episode i of a group with signal, with outcome advantage A_i (group-normalized, as with episode credit), turns
    t = 1..T_i, progress φ_i,0..T_i (φ_0: the seed state; φ_T: the verdict's partial_score) and n_i,t
    trained tokens in turn t; w = advantage.turn_weight, γ = advantage.turn_discount:

        δ_i,t = φ_i,t − φ_i,t−1                                      the turn's own progress gain
        c_i,t = Σ_{k≥t} δ_i,k · γ^(k−t) / Σ_{j≤k} γ^(k−j)             each gain shared back over its turn
                                                                       and the earlier ones, shares summing to 1
        u_i,t = c_i,t − c̄_i,  c̄_i = Σ_t n_i,t c_i,t / Σ_t n_i,t       centred within the episode, by tokens
        s     = sqrt(Σ_i Σ_t u_i,t² / Σ_i T_i)                         over every turn of the group's episodes
                                                                       (1 when advantage.std_normalize is off)
        a_i,t = A_i + w · u_i,t / s                                    (a_i,t = A_i where s ≤ 1e-12)

    Why this form: the baseline stays a whole-episode quantity (A_i, as with episode credit), never a per-turn-index mean
    (biased when the policy decides how many turns to take) nor one z-score over the pooled turns (which
    mixes early and late turns and lets long episodes weigh more). The turn term is zero-sum over each
    episode's tokens, so it only moves credit between the episode's own turns: the episode's total stays
    A_i, and which episodes the group reinforces is unchanged. "Normalized across the group's turns" is
    the scale s, one number per group: w is in units of the group's spread of turn credit, as A_i is in
    units of its spread of reward. Gains of a bounded state score telescope (Σ_t δ_t = φ_T − φ_0), so
    write-then-undo nets zero; w = 0 gives A_i to every token, exactly.

    Failure modes: only what the checks see is progress, so a write no check watches is neither credited
    nor punished (diff_only checks are what make collateral writes lost progress); the answer and a
    Python verifier not run every turn are judged at the last turn, which gets that credit; turns that
    change no checked state (reads, plain text, malformed calls) gain 0 and, centred, fall below the episode's mean in an
    episode that made progress (γ > 0 shares later gains back with the turns that prepared them); the
    shift can flip a turn's sign against A_i (the step's turn_sign_flips counts them). Episodes without
    recorded progress, or with one progress value too many or too few, stop the run (TurnCreditError):
    nothing falls back to episode credit silently. Only groups with signal are shifted (errored episodes
    left them before, never scored); anchored and KL-only episodes keep one advantage each.
    toolgym.algorithms.turn_credit computes it; docs/credit.md explains it at length.
    """
    from toolgym.algorithms.turn_credit import group_turn_advantages

    return group_turn_advantages(group, advantage)
