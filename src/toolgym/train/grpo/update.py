"""The policy update of one GRPO step: episodes with advantages → weighted token losses → one or more
optimizer steps, over length-bucketed micro-batches with gradient accumulation.

Training consumes each episode's `samples` as recorded (input_ids, loss_mask, sampler_logprobs):
nothing is re-rendered (docs/architecture.md). The ratio's denominator is the sampler's own
log-prob of each token. `update_epochs` > 1 passes over the same rollouts again (PPO's epochs, TRL's
`num_iterations`): rollouts cost far more than updates on a CPU, and the clipped ratio bounds how far
the later passes go. The loss is the registered objective `loss.objective` (registry.py); for one that
takes sequence ratios (GSPO) each episode's ratio is computed first, in a pass without gradients over
the optimizer step's episodes, and its tokens train with that one ratio. The settings are the run's
validated GRPOSettings, passed as they are. Under N processes every rank runs this same loop over the
same batch and trains its `Shard` of each optimizer step's micro-batches (grpo/distributed.py).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from toolgym.algorithms.advantages import Group
from toolgym.algorithms.losses import (
    cross_entropy_logprobs,
    entropy,
    policy_loss,
    sampled_token_logprobs,
    token_weights,
)
from toolgym.algorithms.registry import lookup
from toolgym.config.grpo import GRPOSettings
from toolgym.schema import TrainingSample
from toolgym.train.batching import IGNORE_INDEX, Batch, collate, micro_batches, prefix_keys, supervised_count
from toolgym.train.distributed import shard_step
from toolgym.train.grpo.mismatch import StepCorrection, step_correction
from toolgym.train.grpo.turn_tokens import token_advantages
from toolgym.train.loss import supervised_logits


@dataclass
class TrainItem:
    """One training sequence with the advantage of its episode and the loss weight of its tokens."""

    sample: TrainingSample
    advantage: float
    weight: float
    episode: int  # index of the episode among the step's trained episodes
    token_advantages: list[float] | None = None  # advantage.credit turn: one per input position (its turn's)


@dataclass
class UpdateStats:
    """Sums over the step's trained tokens; `row` turns them into the metrics of the step."""

    tokens: int = 0
    loss: float = 0.0
    entropy_sum: float = 0.0
    kl_sum: float = 0.0
    kl_tokens: int = 0
    ratio_sum: float = 0.0
    clipped_low: int = 0
    clipped_high: int = 0
    sampler_gap_sum: float = 0.0  # |logp_trainer - logp_sampler| before any update of this step
    sampler_gap_tokens: int = 0
    optimizer_steps: int = 0
    grad_norms: tuple[float, ...] = ()
    mismatch: dict[str, Any] | None = None  # the sampler-vs-trainer numbers of loss.mismatch (mismatch.py)

    def row(self) -> dict[str, Any]:
        n = max(self.tokens, 1)
        return {
            "trained_tokens": self.tokens,
            "loss": self.loss if self.tokens else None,
            "entropy": self.entropy_sum / n if self.tokens else None,
            "kl": self.kl_sum / self.kl_tokens if self.kl_tokens else None,
            "ratio_mean": self.ratio_sum / n if self.tokens else None,
            "clip_fraction": (self.clipped_low + self.clipped_high) / n if self.tokens else None,
            "clip_low_fraction": self.clipped_low / n if self.tokens else None,
            "clip_high_fraction": self.clipped_high / n if self.tokens else None,
            "sampler_logprob_gap": self.sampler_gap_sum / self.sampler_gap_tokens if self.sampler_gap_tokens else None,
            "optimizer_steps": self.optimizer_steps,
            "grad_norm": max(self.grad_norms) if self.grad_norms else None,
            **(self.mismatch or {}),
        }


@dataclass(frozen=True)
class Shard:
    """This process's part of each optimizer step: micro-batch k runs on rank k mod world (a rank short of
    one repeats a micro-batch with loss weight 0, train/distributed.shard_step), its loss scaled by the
    world size because DDP averages the gradients; `no_sync` holds back DDP's all-reduce until the rank's
    last micro-batch of the step. The default is one process: every micro-batch, loss as it is."""

    rank: int = 0
    world: int = 1
    no_sync: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext


def trained_episode_count(group: Group, kl_quiet_episodes: int = 0) -> int:
    """How many of the group's leading episodes the update trains: all of a group with signal, a solved
    group's anchored ones (the leading non-zero advantages), `kl_quiet_episodes` of a zero-variance group."""
    if group.reason == "signal":
        return len(group.episodes)
    if group.reason == "anchor":
        return sum(advantage != 0.0 for advantage in group.advantages)
    if group.reason == "zero_variance":
        return kl_quiet_episodes
    return 0


def train_items(groups: list[Group], kl_quiet_episodes: int = 0) -> list[list[TrainItem]]:
    """Per trained episode (see `trained_episode_count`), its samples with the episode's advantage (turn
    credit: and each token's, its turn's)."""
    episodes: list[list[TrainItem]] = []
    for group in groups:
        count = trained_episode_count(group, kl_quiet_episodes)
        for index, (episode, advantage) in enumerate(zip(group.episodes[:count], group.advantages[:count],
                                                         strict=True)):
            per_token: list[list[float] | None] = (
                list(token_advantages(episode, group.turn_advantages[index]))
                if group.turn_advantages is not None else [None] * len(episode.samples))
            items = [TrainItem(sample, advantage, 0.0, len(episodes), tokens)
                     for sample, tokens in zip(episode.samples, per_token, strict=True)
                     if supervised_count(sample) > 0]
            if items:
                episodes.append(items)
    return episodes


def with_weights(episodes: list[list[TrainItem]], aggregation: str, constant: int | None) -> list[TrainItem]:
    """Flatten, giving every token its episode's weight in this optimizer step's loss."""
    counts = [sum(supervised_count(item.sample) for item in items) for items in episodes]
    weights = token_weights(counts, aggregation, constant)
    flat: list[TrainItem] = []
    for items, weight in zip(episodes, weights, strict=True):
        flat.extend(TrainItem(item.sample, item.advantage, weight, item.episode, item.token_advantages)
                    for item in items)
    return flat


def split_mini_batches(episodes: list[list[TrainItem]], count: int, rng: random.Random) -> list[list[list[TrainItem]]]:
    """Episodes shuffled and dealt into `count` mini-batches (one optimizer step each)."""
    order = list(range(len(episodes)))
    rng.shuffle(order)
    count = max(1, min(count, len(episodes)))
    return [[episodes[i] for i in order[k::count]] for k in range(count)]


@dataclass
class Aligned:
    """Per trained position of a micro-batch (row-major order): what the loss needs besides the logits."""

    sampler: torch.Tensor  # the sampler's log-probs
    advantages: torch.Tensor
    weights: torch.Tensor
    episodes: torch.Tensor  # the episode index (TrainItem.episode) of each position


def _aligned(items: list[TrainItem], batch: Batch) -> Aligned:
    shape = batch.input_ids.shape
    sampler = torch.zeros(shape, dtype=torch.float32)
    advantages = torch.zeros(shape, dtype=torch.float32)
    weights = torch.zeros(shape, dtype=torch.float32)
    episodes = torch.zeros(shape, dtype=torch.long)
    for row, item in enumerate(items):
        n = len(item.sample.input_ids)
        sampler[row, : n - 1] = torch.tensor(item.sample.sampler_logprobs[1:], dtype=torch.float32)
        if item.token_advantages is None:
            advantages[row, : n - 1] = item.advantage
        else:  # position t predicts token t + 1: the advantage of the token it predicts
            advantages[row, : n - 1] = torch.tensor(item.token_advantages[1:], dtype=torch.float32)
        weights[row, : n - 1] = item.weight
        episodes[row, : n - 1] = item.episode
    selected = (batch.targets != IGNORE_INDEX).cpu()
    device = batch.input_ids.device
    return Aligned(sampler[selected].to(device), advantages[selected].to(device), weights[selected].to(device),
                   episodes[selected].to(device))


def _forward(model: Any, batch: Batch, settings: GRPOSettings,
             autocast: Callable[[], contextlib.AbstractContextManager[Any]]
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logits and targets at the trained positions, and the log-probs the sampler's ratio compares."""
    with autocast():
        logits, targets = supervised_logits(model, batch)
    return logits, targets, _token_logprobs(logits, targets, settings)


def _token_logprobs(logits: torch.Tensor, targets: torch.Tensor, settings: GRPOSettings) -> torch.Tensor:
    sampling = settings.sampling
    if settings.loss.match_sampler_truncation:
        return sampled_token_logprobs(logits, targets, temperature=sampling.temperature,
                                      top_p=sampling.top_p, top_k=sampling.top_k)
    return sampled_token_logprobs(logits, targets, temperature=sampling.temperature)


def sequence_ratios(model: Any, items: list[TrainItem], chunks: list[list[int]], episodes: int, *, pad_id: int,
                    device: torch.device | str, settings: GRPOSettings,
                    autocast: Callable[[], contextlib.AbstractContextManager[Any]]) -> torch.Tensor:
    """GSPO: each trained episode's ratio under the current weights, exp(mean over its tokens of
    logp - logp_sampler), from a forward without gradients (an episode's samples may lie in several
    micro-batches, so the mean cannot come from the micro-batch that trains them)."""
    sums = torch.zeros(episodes, dtype=torch.float64)
    counts = torch.zeros(episodes, dtype=torch.float64)
    with torch.no_grad():
        for indices in chunks:
            chosen = [items[i] for i in indices]
            batch = collate([item.sample for item in chosen], pad_id).to(device)
            aligned = _aligned(chosen, batch)
            log_ratio = (_forward(model, batch, settings, autocast)[2] - aligned.sampler).double().cpu()
            where = aligned.episodes.cpu()
            sums.index_add_(0, where, log_ratio)
            counts.index_add_(0, where, torch.ones_like(log_ratio))
    return torch.exp(sums / counts.clamp(min=1.0)).float()


def _no_grad_logprobs(model: Any, items: list[TrainItem], settings: GRPOSettings, *, pad_id: int,
                      device: torch.device | str, autocast: Callable[[], contextlib.AbstractContextManager[Any]]
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """The trainer's and the sampler's log-probs at these items' trained positions (for mismatch.py)."""
    batch = collate([item.sample for item in items], pad_id).to(device)
    with torch.no_grad():
        return _forward(model, batch, settings, autocast)[2], _aligned(items, batch).sampler


def policy_update(
    model: Any,
    optimizer: torch.optim.Optimizer,
    groups: list[Group],
    settings: GRPOSettings,
    *,
    pad_id: int,
    device: torch.device | str,
    rng: random.Random,
    backward: Callable[[torch.Tensor], None],
    clip_grad: Callable[[float], float],
    autocast: Callable[[], contextlib.AbstractContextManager[Any]],
    reference: Callable[[Batch], torch.Tensor] | None = None,
    shard: Shard | None = None,
) -> UpdateStats:
    """Run the step's optimizer step(s); returns token-level statistics of this process's micro-batches.

    `reference(batch)` gives the reference policy's log-probs at the batch's trained positions
    (LoRA: the adapter disabled; full weights: a frozen copy); None when no KL is wanted. Every rank
    holds the same groups, so the mini-batches, token weights and (GSPO) sequence ratios are the
    one-process ones whatever the `shard`; the ranks' statistics are summed afterwards
    (distributed.sum_stats).
    """
    shard = shard or Shard()
    stats = UpdateStats()
    optim = settings.optim
    episodes = train_items(groups, settings.experimental.kl_quiet_episodes if reference is not None else 0)
    if not episodes:
        return stats
    correction = None
    if settings.loss.mismatch.kind != "none":  # π_old of every sample, before any optimizer step of this step
        correction = step_correction(settings.loss.mismatch, [item for items in episodes for item in items],
                                     lambda chosen: _no_grad_logprobs(model, chosen, settings, pad_id=pad_id,
                                                                      device=device, autocast=autocast))
        stats.mismatch = correction.stats.row()
    passes = [mini for _ in range(optim.update_epochs)
              for mini in split_mini_batches(episodes, optim.mini_batches, rng)]
    for mini in passes:
        items = with_weights(mini, settings.loss.aggregation, settings.dr_grpo_constant)
        lengths = [len(item.sample.input_ids) for item in items]
        keys = prefix_keys([item.sample for item in items])
        chunks = micro_batches(lengths, list(range(len(items))), optim.batch_tokens, keys=keys)
        ratios = None
        if lookup("loss", settings.loss.objective).sequence_ratios:
            ratios = sequence_ratios(model, items, chunks, len(episodes), pad_id=pad_id, device=device,
                                     settings=settings, autocast=autocast)
        mine = shard_step(chunks, shard.rank, shard.world)
        for position, (indices, weight) in enumerate(mine):
            sync = contextlib.nullcontext() if position == len(mine) - 1 else shard.no_sync()
            with sync:
                _micro_step(model, [items[i] for i in indices], settings, stats if weight else UpdateStats(),
                            pad_id=pad_id, device=device, backward=_scaled(backward, weight * shard.world),
                            autocast=autocast, reference=reference, first=stats.optimizer_steps == 0,
                            episode_ratios=ratios, correction=correction)
        grad_norm = clip_grad(optim.max_grad_norm)
        stats.grad_norms = (*stats.grad_norms, grad_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        stats.optimizer_steps += 1
    return stats


def _scaled(backward: Callable[[torch.Tensor], None], scale: float) -> Callable[[torch.Tensor], None]:
    """`backward` of the loss times `scale` (the loss itself at scale 1, so one process computes as ever)."""
    if scale == 1.0:
        return backward
    return lambda loss: backward(loss * scale)


def _micro_step(model: Any, items: list[TrainItem], settings: GRPOSettings, stats: UpdateStats, *, pad_id: int,
                device: torch.device | str, backward: Callable[[torch.Tensor], None],
                autocast: Callable[[], contextlib.AbstractContextManager[Any]],
                reference: Callable[[Batch], torch.Tensor] | None, first: bool,
                episode_ratios: torch.Tensor | None = None, correction: StepCorrection | None = None) -> None:
    batch = collate([item.sample for item in items], pad_id).to(device)
    aligned = _aligned(items, batch)
    sampler = aligned.sampler
    denominator, weights = sampler, aligned.weights
    if correction is not None:  # ratio against the trainer's π_old; ρ = π_old / π_sampler weights each token
        old, rho = correction.of(items)
        denominator, weights = old.to(sampler.device), aligned.weights * rho.to(aligned.weights.device)
    reference_logprobs = reference(batch) if reference is not None else None
    logits, targets, logprobs = _forward(model, batch, settings, autocast)
    kl_logprobs = cross_entropy_logprobs(logits, targets) if reference_logprobs is not None else None
    per_token_ratios = episode_ratios.to(logprobs.device)[aligned.episodes] if episode_ratios is not None else None
    loss, surrogate, kl = policy_loss(logprobs, denominator, aligned.advantages, weights,
                                      kl_coef=settings.loss.kl_coef, reference_logprobs=reference_logprobs,
                                      kl_logprobs=kl_logprobs, sequence_ratios=per_token_ratios,
                                      objective=settings.loss.objective, settings=settings.loss)
    if kl is not None:
        stats.kl_sum += float(kl.detach().sum())
        stats.kl_tokens += int(kl.numel())
    backward(loss)
    with torch.no_grad():
        n = int(logprobs.numel())
        stats.tokens += n
        stats.loss += float(loss.detach())
        stats.entropy_sum += float(entropy(logits.detach(), settings.sampling.temperature).sum())
        stats.ratio_sum += float(surrogate.ratio.detach().sum())
        stats.clipped_low += int(surrogate.clipped_low.sum())
        stats.clipped_high += int(surrogate.clipped_high.sum())
        if first:
            stats.sampler_gap_sum += float((logprobs.detach() - sampler).abs().sum())
            stats.sampler_gap_tokens += n
