"""GRPO's algorithm options by name: losses, advantage baselines, loss aggregations.

Each option is one registered function; the config validates `loss.objective`, `advantage.baseline` and
`loss.aggregation` against these names, and the trainer looks them up here. Adding an option means adding
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


LOSSES: dict[str, LossOption] = {}
BASELINES: dict[str, Callable[[list[float]], list[float]]] = {}  # rewards → rewards minus their baseline
AGGREGATIONS: dict[str, Callable[[list[int], int | None], list[float]]] = {}  # tokens per episode → weights
_KINDS: dict[str, dict[str, Any]] = {"loss": LOSSES, "baseline": BASELINES, "aggregation": AGGREGATIONS}


def names(kind: str) -> list[str]:
    """The registered option names of one kind: loss | baseline | aggregation."""
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
