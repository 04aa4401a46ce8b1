"""GRPO losses as small tensor functions, one job each (read in one screen, test each alone).

Every function works on flat per-token tensors: one entry per trained token of a step's
micro-batch (the positions where `loss_mask` is 1), so masking happens once, when the tokens are
selected, and never again here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F


def sampled_token_logprobs(logits: torch.Tensor, targets: torch.Tensor, *, temperature: float = 1.0,
                           top_p: float = 1.0, top_k: int = 0) -> torch.Tensor:
    """log p(target) under the distribution the sampler drew from: logits / T, then top-k / top-p.

    The sampler recorded its log-probs under the tempered, truncated distribution; computing the
    trainer's side the same way makes the ratio exactly 1 for an unchanged policy. The target is
    always kept (it was sampled, so it was in the nucleus; float noise must not make it -inf).
    """
    scaled = logits.float() / max(temperature, 1e-6) if temperature > 0 else logits.float()
    if top_p >= 1.0 and top_k <= 0:
        return torch.log_softmax(scaled, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    values, order = scaled.sort(dim=-1, descending=True)
    ranks = torch.arange(scaled.shape[-1], device=scaled.device).unsqueeze(0)
    keep = (ranks < (top_k if top_k > 0 else scaled.shape[-1])).expand_as(values).clone()
    with torch.no_grad():
        probs = torch.softmax(values.masked_fill(~keep, float("-inf")), dim=-1)
        keep &= (probs.cumsum(dim=-1) - probs) < top_p
        keep[:, 0] = True
        keep |= order == targets.unsqueeze(-1)
    logp = torch.log_softmax(values.masked_fill(~keep, float("-inf")), dim=-1)
    position = (order == targets.unsqueeze(-1)).float().argmax(dim=-1)
    return logp.gather(-1, position.unsqueeze(-1)).squeeze(-1)


def entropy(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Per-token entropy (nats) of the tempered distribution: logged, to see exploration collapse."""
    logp = torch.log_softmax(logits.float() / max(temperature, 1e-6), dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


@dataclass
class Surrogate:
    """Per-token clipped surrogate loss and what the clip did."""

    loss: torch.Tensor  # per token, to be weighted and summed
    ratio: torch.Tensor
    clipped_low: torch.Tensor  # bool: ratio < 1 - clip_low with a negative advantage (no gradient)
    clipped_high: torch.Tensor  # bool: ratio > 1 + clip_high with a positive advantage (no gradient)


def clipped_surrogate(logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, advantages: torch.Tensor,
                      clip_low: float = 0.2, clip_high: float = 0.28) -> Surrogate:
    """-min(r·A, clip(r, 1 - clip_low, 1 + clip_high)·A) with r = exp(logp - logp_sampler).

    Separate low/high bounds (DAPO's clip-higher): a larger upper bound lets unlikely tokens with a
    positive advantage grow, which keeps exploration alive.
    """
    return clipped_surrogate_of(torch.exp(logprobs - sampler_logprobs), advantages, clip_low, clip_high)


def sequence_ratio_per_token(logprobs: torch.Tensor, sequence_ratios: torch.Tensor) -> torch.Tensor:
    """GSPO-token's ratio: the value is the token's episode ratio s = exp(mean over the episode of
    logp - logp_sampler), computed beforehand, and the gradient is s · ∇logp of this token. Summed over an
    episode's tokens with equal weights it is GSPO's gradient, so the clip acts on whole episodes."""
    return sequence_ratios * torch.exp(logprobs - logprobs.detach())


def clipped_surrogate_of(ratio: torch.Tensor, advantages: torch.Tensor, clip_low: float = 0.2,
                         clip_high: float = 0.28) -> Surrogate:
    """The clipped surrogate of given ratios (per token, or GSPO's per episode spread over its tokens)."""
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * advantages
    loss = -torch.minimum(unclipped, clipped)
    with torch.no_grad():
        clipped_low = (ratio < 1.0 - clip_low) & (advantages < 0)
        clipped_high = (ratio > 1.0 + clip_high) & (advantages > 0)
    return Surrogate(loss=loss, ratio=ratio, clipped_low=clipped_low, clipped_high=clipped_high)


def kl_k3(logprobs: torch.Tensor, reference_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(policy ‖ reference): exp(q - p) - (q - p) - 1, ≥ 0, unbiased."""
    log_ratio = reference_logprobs - logprobs
    return torch.exp(log_ratio) - log_ratio - 1.0


def token_weights(tokens_per_episode: list[int], aggregation: str, constant: int | None = None) -> list[float]:
    """The weight of each token of each episode in the step's loss (Σ weight · per-token loss), by the
    registered aggregation (token_mean, sequence_mean, dr_grpo, …; see registry.py). Computing weights for
    the whole step up front keeps gradient accumulation exact.
    """
    from toolgym.algorithms.registry import lookup

    try:
        aggregate = lookup("aggregation", aggregation)
    except ValueError as exc:
        raise ValueError(f"loss {exc}") from None
    if not any(n > 0 for n in tokens_per_episode):
        return [0.0 for _ in tokens_per_episode]
    return aggregate(tokens_per_episode, constant)


def masked_sum(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Σ weights · values (weights already carry the mask and the normalisation)."""
    return (values * weights).sum()


def policy_loss(logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, advantages: torch.Tensor,
                weights: torch.Tensor, *, clip_low: float = 0.2, clip_high: float = 0.28,
                kl_coef: float = 0.0, reference_logprobs: torch.Tensor | None = None,
                kl_logprobs: torch.Tensor | None = None, sequence_ratios: torch.Tensor | None = None,
                objective: str | None = None, settings: Any | None = None) -> tuple[torch.Tensor, Surrogate, torch.Tensor | None]:
    """The step's loss contribution of these tokens: Σ weight · (surrogate + kl_coef · k3).

    `objective` names a registered loss (default: sequence when `sequence_ratios`, each token's episode
    ratio, are given, else token). `kl_logprobs` are the policy's log-probs the KL compares with the
    reference's (default `logprobs`; the trainer passes temperature-1 ones so the KL is between the models).
    """
    from toolgym.algorithms.registry import LossInputs, lookup

    option = lookup("loss", objective or ("sequence" if sequence_ratios is not None else "token"))
    # the registered loss reads the run's LossSettings (or, called alone, just the clip range)
    surrogate = option.fn(LossInputs(logprobs, sampler_logprobs, advantages, sequence_ratios),
                          settings if settings is not None else _Clip(clip_low, clip_high))
    per_token = surrogate.loss
    kl = None
    if reference_logprobs is not None:
        kl = kl_k3(kl_logprobs if kl_logprobs is not None else logprobs, reference_logprobs)
        if kl_coef:
            per_token = per_token + kl_coef * kl
    return masked_sum(per_token, weights), surrogate, kl


@dataclass(frozen=True)
class _Clip:
    """The clip range a registered loss reads (the fields of LossSettings it needs)."""

    clip_low: float
    clip_high: float


def cross_entropy_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(target) at temperature 1 (for the KL to the reference)."""
    return -F.cross_entropy(logits.float(), targets, reduction="none")
