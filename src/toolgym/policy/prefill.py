"""Prompt states for the decode loop: computing, in one forward, what the prefix cache does not hold.

A batch's prompts each need the states of all their tokens but the last. Most of those are often
cached already (an app's system prompt, an episode's earlier turns), and what is left, the rest of
each prompt, differs in length and follows a different cached prefix per row. The rests are packed
into one sequence without padding, so the model's projections and MLPs run once over exactly the
new tokens, and attention runs per row (`PackedPrefill`): the row's queries over its cached states
followed by its own new states, causal. On CPU a small model's forward costs about the same for
one row as for thirty, and padding rows to a common width would make attention over the cached
columns most of the work; packing avoids both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from toolgym.policy.attention import AttentionLayout, layout_attention, layout_masks
from toolgym.policy.prefix_cache import LayerStates, PrefixEntry

# Rest tokens per forward: bounds the activations of one packed prefill.
PREFILL_CHUNK_TOKENS = 8192


@dataclass
class PrefillRow:
    """One prompt to compute states for: its tokens, and the states of its first `reused` (None: nothing)."""

    token_ids: list[int]
    reused: int = 0
    cached: LayerStates | None = None


class PackedPrefill(AttentionLayout):
    """The attention layout of one packed forward: row r's new tokens at `spans[r]` of the sequence.

    While the model runs, each layer's attention appends every row's complete states (cached, then
    new) to `states`, so the forward leaves behind exactly what the prefix cache stores."""

    def __init__(self, rows: list[PrefillRow], dtype: torch.dtype, device: torch.device) -> None:
        self.rows, self.dtype = rows, dtype  # states are kept in `dtype` (the model's weights' dtype)
        self.spans: list[tuple[int, int]] = []
        self.masks: list[torch.Tensor | None] = []
        offset = 0
        for row in rows:
            width = len(row.token_ids) - row.reused
            self.spans.append((offset, offset + width))
            offset += width
            # Query j of the rest sees every cached state and the rest up to itself (None: plain causal).
            self.masks.append(torch.ones((width, row.reused + width), dtype=torch.bool, device=device)
                              .tril(diagonal=row.reused) if row.reused else None)
        self.tokens = offset
        self.states: list[LayerStates] = [[] for _ in rows]

    def attention(self, layer: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                  scaling: float) -> torch.Tensor:
        output = query.new_empty((1, self.tokens, query.shape[1], query.shape[-1]))
        for index, row in enumerate(self.rows):
            start, end = self.spans[index]
            keys, values = key[0, :, start:end].to(self.dtype), value[0, :, start:end].to(self.dtype)
            if row.reused and row.cached is not None:
                cached_keys, cached_values = row.cached[layer]
                keys = torch.cat([cached_keys[:, : row.reused].to(self.dtype), keys], dim=1)
                values = torch.cat([cached_values[:, : row.reused].to(self.dtype), values], dim=1)
            self.states[index].append((keys, values))
            mask = self.masks[index]
            out = torch.nn.functional.scaled_dot_product_attention(
                query[:, :, start:end].to(keys.dtype), keys[None], values[None],
                attn_mask=mask, is_causal=mask is None, scale=scaling,
                enable_gqa=True)
            output[0, start:end] = out[0].transpose(0, 1).to(output.dtype)
        return output


def prefill(model: Any, rows: list[PrefillRow]) -> list[PrefixEntry]:
    """States of every row's tokens, the rests computed in packed forwards of at most PREFILL_CHUNK_TOKENS."""
    entries: list[PrefixEntry | None] = [None] * len(rows)
    weight = model.get_input_embeddings().weight
    device = weight.device
    for chunk in _chunks([len(r.token_ids) - r.reused for r in rows]):
        layout = PackedPrefill([rows[i] for i in chunk], weight.dtype, device)
        input_ids = torch.tensor([[t for i in chunk for t in rows[i].token_ids[rows[i].reused:]]], dtype=torch.long)
        positions = torch.tensor([[p for i in chunk for p in range(rows[i].reused, len(rows[i].token_ids))]],
                                 dtype=torch.long)
        with torch.inference_mode(), layout_attention(model):
            model(input_ids=input_ids.to(device), position_ids=positions.to(device),
                  attention_mask=layout_masks(model, layout), use_cache=False, logits_to_keep=1)
        for index, states in zip(chunk, layout.states, strict=True):
            entries[index] = PrefixEntry(torch.tensor(rows[index].token_ids, dtype=torch.long), states)
    return [entry for entry in entries if entry is not None]


def _chunks(widths: list[int]) -> list[list[int]]:
    """Consecutive rows, at most PREFILL_CHUNK_TOKENS rest tokens per chunk (a longer rest goes alone)."""
    chunks: list[list[int]] = [[]]
    total = 0
    for index, width in enumerate(widths):
        if chunks[-1] and total + width > PREFILL_CHUNK_TOKENS:
            chunks.append([])
            total = 0
        chunks[-1].append(index)
        total += width
    return [chunk for chunk in chunks if chunk]
