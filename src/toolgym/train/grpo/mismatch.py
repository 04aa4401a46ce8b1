"""Rollout/train mismatch correction: the sampler (vLLM) and the trainer compute slightly different
log-probs for the same weights (other kernels, bf16 rounding), so samples come from π_sampler, not π_old.

With a correction on, the PPO ratio compares the policy with the trainer's own log-probs at the start of
the step (π_old, from a pass without gradients) and each token's loss is weighted by the importance
ratio ρ = π_old / π_sampler:
- truncated IS (`tis`): weight min(ρ, cap), per token or per sequence (ρ of the whole sequence);
- masked IS (`mis`): weight 1 where ρ lies in [low, high], else 0 (the token / sequence is dropped).
Sequence level uses the product of the token ratios (`sequence`) or their geometric mean (`geometric`:
stays near 1 on long episodes, where a product masks nearly everything). Each function works on the
flat per-token tensors of losses.py; `episodes` gives each token's sequence index.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch

from toolgym.config.grpo import MismatchSettings

Level = Literal["token", "sequence", "geometric"]
__all__ = ["MismatchSettings", "MismatchStats", "StepCorrection", "correction_weights", "masked_is_weights",
           "step_correction", "truncated_is_weights"]


def log_ratios(old_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, episodes: torch.Tensor | None = None,
               level: Level = "token") -> torch.Tensor:
    """Per token: log ρ of the token (token level) or of its sequence (sum / mean over the sequence's tokens)."""
    log_ratio = (old_logprobs - sampler_logprobs).detach().double()
    if level == "token":
        return log_ratio
    if episodes is None:
        raise ValueError("sequence-level correction needs each token's episode index")
    count = int(episodes.max()) + 1 if episodes.numel() else 0
    sums = torch.zeros(count, dtype=torch.float64, device=log_ratio.device).index_add_(0, episodes, log_ratio)
    if level == "geometric":
        tokens = torch.zeros(count, dtype=torch.float64, device=log_ratio.device)
        tokens.index_add_(0, episodes, torch.ones_like(log_ratio))
        sums = sums / tokens.clamp(min=1.0)
    return sums[episodes]


def truncated_is_weights(old_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, cap: float,
                         episodes: torch.Tensor | None = None, level: Level = "token") -> torch.Tensor:
    """min(ρ, cap) per token (ρ of the token or of its sequence): unbiased up to the cap, bounded variance."""
    return torch.exp(log_ratios(old_logprobs, sampler_logprobs, episodes, level)).clamp(max=cap).float()


def masked_is_weights(old_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, low: float, high: float,
                      episodes: torch.Tensor | None = None, level: Level = "token") -> torch.Tensor:
    """1 where ρ (of the token or its sequence) lies in [low, high], 0 elsewhere: tokens the sampler and the
    trainer disagree on too much do not train at all."""
    ratio = torch.exp(log_ratios(old_logprobs, sampler_logprobs, episodes, level))
    return ((ratio >= low) & (ratio <= high)).float()


def correction_weights(settings: MismatchSettings, old_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor,
                       episodes: torch.Tensor | None = None) -> torch.Tensor:
    """The per-token weight the settings ask for (all ones for `none`)."""
    if settings.kind == "tis":
        return truncated_is_weights(old_logprobs, sampler_logprobs, settings.cap, episodes, settings.level)
    if settings.kind == "mis":
        return masked_is_weights(old_logprobs, sampler_logprobs, settings.low, settings.high, episodes,
                                 settings.level)
    return torch.ones_like(old_logprobs, dtype=torch.float32)


@dataclass
class MismatchStats:
    """Sums over a step's trained tokens: how far the sampler's log-probs were from the trainer's, and what
    the correction did."""

    tokens: int = 0
    abs_log_ratio_sum: float = 0.0
    max_ratio: float = 0.0
    masked: int = 0  # tokens with weight 0
    truncated: int = 0  # tokens whose weight the cap lowered

    def add(self, old_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, weights: torch.Tensor,
            settings: MismatchSettings, episodes: torch.Tensor | None = None) -> None:
        log_ratio = (old_logprobs - sampler_logprobs).detach().double()
        if not log_ratio.numel():
            return
        self.tokens += int(log_ratio.numel())
        self.abs_log_ratio_sum += float(log_ratio.abs().sum())
        level_ratio = torch.exp(log_ratios(old_logprobs, sampler_logprobs, episodes,
                                           settings.level if settings.kind != "none" else "token"))
        self.max_ratio = max(self.max_ratio, float(level_ratio.max()))
        self.masked += int((weights == 0).sum())
        if settings.kind == "tis":
            self.truncated += int((level_ratio > settings.cap).sum())

    def row(self) -> dict[str, Any]:
        if not self.tokens:
            return {}
        return {"mismatch_abs_log_ratio": self.abs_log_ratio_sum / self.tokens, "mismatch_max_ratio": self.max_ratio,
                "mismatch_masked_fraction": self.masked / self.tokens,
                "mismatch_truncated_fraction": self.truncated / self.tokens}


@dataclass
class StepCorrection:
    """Per trained sample (keyed by id of its TrainingSample): π_old at its trained positions and its weights."""

    old: dict[int, torch.Tensor]
    weights: dict[int, torch.Tensor]
    stats: MismatchStats

    def of(self, items: list[Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """(π_old, weights) of a micro-batch's items, flat in the order their trained positions are selected."""
        return (torch.cat([self.old[id(item.sample)] for item in items]),
                torch.cat([self.weights[id(item.sample)] for item in items]))


def step_correction(settings: MismatchSettings, items: list[Any],
                    logprobs_of: Callable[[list[Any]], tuple[torch.Tensor, torch.Tensor]],
                    chunk: int = 16) -> StepCorrection:
    """π_old and the correction weights of every trained sample of a step, before any optimizer step.

    `items` carry `.sample` (a TrainingSample) and `.episode`; `logprobs_of(chunk)` gives the trainer's and
    the sampler's log-probs at the chunk's trained positions without gradients. Sequence-level weights
    need every token of an episode, which may lie in several micro-batches: hence one pass up front.
    """
    olds, samplers = [], []
    for start in range(0, len(items), chunk):
        old, sampler = logprobs_of(items[start : start + chunk])
        olds.append(old.detach().float().cpu())
        samplers.append(sampler.detach().float().cpu())
    old_all, sampler_all = torch.cat(olds), torch.cat(samplers)
    counts = [sum(item.sample.loss_mask[1:]) for item in items]
    episodes = torch.cat([torch.full((n,), item.episode, dtype=torch.long) for item, n in zip(items, counts, strict=True)])
    weights = correction_weights(settings, old_all, sampler_all, episodes)
    stats = MismatchStats()
    stats.add(old_all, sampler_all, weights, settings, episodes)
    keys = [id(item.sample) for item in items]
    return StepCorrection(dict(zip(keys, old_all.split(counts), strict=True)),
                          dict(zip(keys, weights.split(counts), strict=True)), stats)
