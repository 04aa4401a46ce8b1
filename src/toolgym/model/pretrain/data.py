"""Packed training rows and padded evaluation batches from tokenized corpus episodes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from toolgym.chat.render import Renderer
from toolgym.model.pretrain.corpus import generate_episode
from toolgym.model.pretrain.render import TokenizedEpisode, tokenize_episode


@dataclass
class PackedBatch:
    """`rows` × `seq_len` ids; `targets` (already shifted by one) is -100 wherever no loss is taken.

    `weights` is the loss weight of each target: 1 on assistant tokens, `context_weight` on the
    rest of an episode (its system prompt, requests and tool results), 0 on padding.
    """

    input_ids: torch.Tensor
    targets: torch.Tensor
    weights: torch.Tensor
    episodes: int
    next_index: int

    @property
    def supervised_tokens(self) -> int:
        """Assistant-token targets (weight 1)."""
        return int((self.weights == 1.0).sum())


def episode_stream(seed: int, renderer: Renderer, start: int, max_len: int,
                   weights: dict[str, float] | None = None, curriculum_episodes: int = 0
                   ) -> Iterator[tuple[int, TokenizedEpisode]]:
    """(index, tokenized episode) from `start` on; episodes longer than `max_len` are skipped."""
    index = start
    while True:
        episode = tokenize_episode(generate_episode(seed, index, weights, curriculum_episodes), renderer)
        if len(episode.input_ids) <= max_len:
            yield index, episode
        index += 1


def pack_batch(stream: Iterator[tuple[int, TokenizedEpisode]], rows: int, seq_len: int, pad_id: int,
               separator_id: int, carry: list[tuple[int, TokenizedEpisode]], context_weight: float = 0.0) -> PackedBatch:
    """Fill `rows` rows greedily with whole episodes (separated by `separator_id`); leftovers carry over.

    Episodes may attend to earlier episodes in their row: that costs nothing on CPU and teaches the
    model to copy from the current episode only.
    """
    ids = torch.full((rows, seq_len), pad_id, dtype=torch.long)
    targets = torch.full((rows, seq_len), -100, dtype=torch.long)
    weights = torch.zeros((rows, seq_len), dtype=torch.float32)
    count = 0
    last_index = -1
    for row in range(rows):
        used = 0
        while True:
            if not carry:
                carry.append(next(stream))
            index, episode = carry[0]
            length = len(episode.input_ids) + 1
            if used + length > seq_len:
                if used == 0:
                    raise ValueError(f"episode {index} has {length} tokens, more than seq_len {seq_len}")
                break
            carry.pop(0)
            piece = torch.tensor([*episode.input_ids, separator_id], dtype=torch.long)
            ids[row, used : used + length] = piece
            mask = torch.tensor([*episode.loss_mask, 0], dtype=torch.bool)
            # position t predicts token t+1: a target sits one position before each token
            weight = torch.where(mask[1:], torch.tensor(1.0), torch.tensor(context_weight))
            shifted = torch.full((length,), -100, dtype=torch.long)
            shifted[:-1] = torch.where(weight > 0, piece[1:], torch.tensor(-100))
            targets[row, used : used + length] = shifted
            weights[row, used : used + length - 1] = weight
            used += length
            count += 1
            last_index = index
    return PackedBatch(ids, targets, weights, count, last_index + 1)


def padded_batch(episodes: list[TokenizedEpisode], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids and a length mask for evaluation (one episode per row, like inference)."""
    width = max(len(e.input_ids) for e in episodes)
    ids = torch.full((len(episodes), width), pad_id, dtype=torch.long)
    lengths = torch.zeros(len(episodes), dtype=torch.long)
    for i, episode in enumerate(episodes):
        ids[i, : len(episode.input_ids)] = torch.tensor(episode.input_ids)
        lengths[i] = len(episode.input_ids)
    return ids, lengths
