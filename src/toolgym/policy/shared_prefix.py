"""Decode attention that reads a prompt prefix shared by several rows once per step, not once per row.

Episodes of one app share a long system prompt, so a decode batch holds a few long prefixes many
times over; at each step attention reads every row's keys and values, and on CPU that memory
traffic is most of a batched step. Here rows that share a prefix form a group whose buffer holds
the prefix once, then the rest of each member's prompt, then the tokens its members decode; each
row's queries are masked to the prefix and its own columns. The same attention over the same keys,
with the prefix read once per group per step (`GroupedDecodeBatch`); a batch with nothing worth
sharing (one row, say) keeps one left-padded row per prompt (`PaddedDecodeBatch`). Both layouts run
torch's fused `scaled_dot_product_attention` with a mask (the grouped one: a group's rows are its
query lines), and both take their buffers from `DecodeBuffers`, reused from batch to batch.

A `DecodeBatch` is passed to the model as both the cache (`update` stores each step's key/value)
and the attention mask, an `AttentionLayout` (see `toolgym.policy.attention`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from toolgym.policy.attention import AttentionLayout
from toolgym.policy.decode_buffers import DecodeBuffers
from toolgym.policy.prefix_cache import LayerStates, common_prefix_length

# Rows share a prefix only if it is at least this long: shorter ones save less than the gathers cost.
MIN_SHARED_TOKENS = 32
# Attention masks are allocated this many columns at a time: SDPA's memory-efficient CUDA kernel copies a
# mask whose rows do not start at such a multiple, on every call.
MASK_ALIGNMENT = 16


def _aligned(columns: int) -> int:
    return -(-columns // MASK_ALIGNMENT) * MASK_ALIGNMENT


@dataclass
class RowPrompt:
    """One row's prompt and the states of all its tokens but the last ([kv_heads, tokens, dim] per layer)."""

    token_ids: list[int]
    states: LayerStates


@dataclass
class Group:
    """Rows (batch indexes) whose prompts start with the same `prefix_length` tokens."""

    rows: list[int]
    prefix_length: int


def plan_groups(prompts: Sequence[list[int]]) -> list[Group]:
    """Rows grouped by a shared prompt prefix of at least MIN_SHARED_TOKENS (a row alone is its own group).

    Rows are sorted by their ids, so prompts with a long common prefix are neighbours; a group's
    prefix stops one token before any member's last prompt token (that token is decoded)."""
    order = sorted(range(len(prompts)), key=lambda i: prompts[i])
    tensors = {i: torch.tensor(prompts[i], dtype=torch.long) for i in order}
    groups: list[Group] = []
    for index in order:
        limit = len(prompts[index]) - 1
        if groups:
            group = groups[-1]
            shared = min(common_prefix_length(tensors[group.rows[0]], tensors[index]), limit)
            if len(group.rows) > 1:
                shared = min(shared, group.prefix_length)
            if shared >= MIN_SHARED_TOKENS:
                group.rows.append(index)
                group.prefix_length = min(shared, len(prompts[group.rows[0]]) - 1)
                continue
        groups.append(Group([index], limit))
    return groups


def worth_sharing(groups: list[Group], lengths: Sequence[int]) -> bool:
    """Whether the grouped layout reads fewer prompt states per step than one padded row per prompt."""
    if all(len(g.rows) == 1 for g in groups):
        return False
    widest_group = max(g.prefix_length + sum(lengths[r] - 1 - g.prefix_length for r in g.rows) for g in groups)
    return len(groups) * widest_group < len(lengths) * (max(lengths) - 1)


class DecodeBatch(AttentionLayout):
    """The states of a decode batch, written one token per row per step, and attention over them."""

    keys: list[torch.Tensor]  # per layer, in the dtype the prompt states came in
    values: list[torch.Tensor]

    steps: int  # tokens decoded so far (each row has been fed this many since its prompt)
    budget: int  # the most steps the buffers hold

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Store this step's key/value of every row (the model calls it; `attend` reads the stored states)."""
        if key_states.shape[-2] != 1:
            raise ValueError(f"{type(self).__name__} decodes one token per row per step, got {key_states.shape[-2]}")
        if self.steps >= self.budget:
            raise ValueError(f"{type(self).__name__} is full: more steps than its token budget ({self.budget})")
        self._write(layer_idx, key_states[:, :, 0], value_states[:, :, 0])
        return key_states, value_states

    def advance(self) -> None:
        """After a forward step: every layer has written this step's token."""
        self.steps += 1

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Cache protocol; the model only asks when it is not given position ids (we always give them)."""
        return self.steps

    def _write(self, layer: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        raise NotImplementedError

    def attention(self, layer: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                  scaling: float) -> torch.Tensor:
        # This step's key/value are already stored (`update`); the math runs in the states' dtype.
        states_dtype = self.keys[layer].dtype
        return self.attend(layer, query.to(states_dtype), scaling).to(query.dtype)

    def attend(self, layer: int, query: torch.Tensor, scaling: float) -> torch.Tensor:
        """Attention of one query token per row over all its states: [rows, 1, heads, dim]."""
        raise NotImplementedError

    def row_states(self, row: int, tokens: int, copy: bool = True) -> LayerStates:
        """States of the first `tokens` tokens of a row (its prompt, then what it was fed while decoding).

        `copy=False` may return views of this batch's buffers: only for use before they are reused."""
        raise NotImplementedError


def new_decode_batch(rows: list[RowPrompt], groups: list[Group] | None, budget: int,
                     buffers: DecodeBuffers | None = None) -> DecodeBatch:
    """Grouped layout when `groups` is given, else one padded row per prompt; buffers from `buffers` (or new)."""
    buffers = buffers if buffers is not None else DecodeBuffers()
    return GroupedDecodeBatch(rows, groups, budget, buffers) if groups is not None else \
        PaddedDecodeBatch(rows, budget, buffers)


def _layer_count_and_shapes(rows: list[RowPrompt]) -> tuple[int, int, int, int, torch.dtype, torch.device]:
    keys, values = rows[0].states[0]
    return len(rows[0].states), keys.shape[0], keys.shape[-1], values.shape[-1], keys.dtype, keys.device


def _per_layer(buffers: DecodeBuffers, name: str, layers: int, shape: tuple[int, ...], dtype: torch.dtype,
               device: torch.device) -> list[torch.Tensor]:
    """One reused buffer of [layers, *shape], as a view per layer."""
    return list(buffers.take(name, (layers, *shape), dtype, device).unbind(0))


class PaddedDecodeBatch(DecodeBatch):
    """Every row's whole history, left-padded to a common column: attention is one fused SDPA call."""

    def __init__(self, rows: list[RowPrompt], budget: int, buffers: DecodeBuffers | None = None) -> None:
        self.rows, self.size, self.budget, self.steps = rows, len(rows), max(budget, 1), 0
        buffers = buffers if buffers is not None else DecodeBuffers()
        layers, kv_heads, key_dim, value_dim, dtype, device = _layer_count_and_shapes(rows)
        self.history = [len(r.token_ids) - 1 for r in rows]
        self.start = max(self.history)  # column of every row's last prompt token
        capacity = self.start + self.budget
        self.keys = _per_layer(buffers, "keys", layers, (self.size, kv_heads, capacity, key_dim), dtype, device)
        self.values = _per_layer(buffers, "values", layers, (self.size, kv_heads, capacity, value_dim), dtype, device)
        for layer in range(layers):
            for index, row in enumerate(rows):
                width = self.history[index]
                if width:
                    row_keys, row_values = row.states[layer]
                    self.keys[layer][index, :, self.start - width : self.start] = row_keys[:, :width]
                    self.values[layer][index, :, self.start - width : self.start] = row_values[:, :width]
        self.mask = torch.zeros((self.size, 1, 1, _aligned(capacity)), dtype=dtype, device=device)
        for index, width in enumerate(self.history):
            self.mask[index, ..., : self.start - width] = float("-inf")
        self.padded = any(width != self.start for width in self.history)

    def _write(self, layer: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        self.keys[layer][:, :, self.start + self.steps] = keys.to(self.keys[layer].dtype)
        self.values[layer][:, :, self.start + self.steps] = values.to(self.values[layer].dtype)

    def attend(self, layer: int, query: torch.Tensor, scaling: float) -> torch.Tensor:
        batch, heads, _, dim = query.shape
        end = self.start + self.steps + 1
        keys, values = self.keys[layer][:, :, :end], self.values[layer][:, :, :end]
        # Query head h reads kv head h // repeats (transformers' repeat_kv layout).
        packed = query.reshape(batch, keys.shape[1], heads // keys.shape[1], dim)
        mask = self.mask[..., :end] if self.padded else None
        out = torch.nn.functional.scaled_dot_product_attention(packed, keys, values, attn_mask=mask, scale=scaling)
        return out.reshape(batch, heads, -1)[:, None]

    def row_states(self, row: int, tokens: int, copy: bool = True) -> LayerStates:
        columns = slice(self.start - self.history[row], self.start - self.history[row] + tokens)
        states = [(keys[row, :, columns], values[row, :, columns]) for keys, values in zip(self.keys, self.values,
                                                                                             strict=True)]
        return [(k.clone(), v.clone()) for k, v in states] if copy else states


class GroupedDecodeBatch(DecodeBatch):
    """One buffer per group: its shared prefix once, each row's prompt tail, then the decoded tokens.

    A group's columns hold [prefix | rest of slot 0's prompt | rest of slot 1's prompt | ...] packed
    from column 0, and from column `decoded_from` (the longest such packing over groups) the tokens
    fed while decoding, interleaved by slot (step t of slot s at decoded_from + t * slots + s), so a
    step reads only the columns written so far. A group's rows (times the query heads of one kv head)
    are the query lines of one SDPA call over the group's columns, each line masked to the prefix, its
    own prompt tail and its own decoded columns: the prefix is read once per group per step."""

    def __init__(self, rows: list[RowPrompt], groups: list[Group], budget: int,
                 buffers: DecodeBuffers | None = None) -> None:
        self.rows, self.size, self.budget, self.steps, self.groups = rows, len(rows), max(budget, 1), 0, groups
        buffers = buffers if buffers is not None else DecodeBuffers()
        layers, kv_heads, key_dim, value_dim, dtype, device = _layer_count_and_shapes(rows)
        self.kv_heads, self.dtype, self.device = kv_heads, dtype, device
        self.slots = max(len(g.rows) for g in groups)
        self.prefix_of, self.group_of, self.slot_of = [0] * self.size, [0] * self.size, [0] * self.size
        self.first_column = [0] * self.size  # where the rest of the row's prompt starts
        packed = []
        for g, group in enumerate(groups):
            column = group.prefix_length
            for slot, row in enumerate(group.rows):
                self.prefix_of[row], self.group_of[row], self.slot_of[row] = group.prefix_length, g, slot
                self.first_column[row] = column
                column += len(rows[row].token_ids) - 1 - group.prefix_length
            packed.append(column)
        self.tail_prompt = [len(r.token_ids) - 1 - p for r, p in zip(rows, self.prefix_of, strict=True)]
        self.decoded_from = max(packed)
        self.width = self.decoded_from + self.budget * self.slots
        shape = (len(groups), kv_heads, self.width)
        self.keys = _per_layer(buffers, "keys", layers, (*shape, key_dim), dtype, device)
        self.values = _per_layer(buffers, "values", layers, (*shape, value_dim), dtype, device)
        for layer in range(layers):
            keys, values = self.keys[layer], self.values[layer]
            for g, group in enumerate(groups):
                donor_keys, donor_values = rows[group.rows[0]].states[layer]
                keys[g, :, : group.prefix_length] = donor_keys[:, : group.prefix_length]
                values[g, :, : group.prefix_length] = donor_values[:, : group.prefix_length]
            for row in range(self.size):
                start, tail, first = self.prefix_of[row], self.tail_prompt[row], self.first_column[row]
                if tail:
                    row_keys, row_values = rows[row].states[layer]
                    group = self.group_of[row]
                    keys[group, :, first : first + tail] = row_keys[:, start : start + tail]
                    values[group, :, first : first + tail] = row_values[:, start : start + tail]
        self.row_group = torch.tensor(self.group_of, dtype=torch.long, device=device)
        self.row_slot = torch.tensor(self.slot_of, dtype=torch.long, device=device)
        self._masks: dict[int, torch.Tensor] = {}
        self._indexes: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def _layout(self, repeats: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(group-layout index of each query head, row-layout index of each, each row's mask lines)."""
        if repeats not in self._indexes:
            groups, slots, kv_heads, device = len(self.groups), self.slots, self.kv_heads, self.device
            slot_rows = torch.zeros((groups, slots), dtype=torch.long, device=device)
            slot_rows[self.row_group, self.row_slot] = torch.arange(self.size, device=device)
            head = torch.arange(kv_heads, device=device)
            repeat = torch.arange(repeats, device=device)
            group_index = ((slot_rows.view(groups, 1, slots, 1) * kv_heads + head.view(1, kv_heads, 1, 1)) * repeats
                           + repeat.view(1, 1, 1, repeats)).reshape(-1)
            group, slot = self.row_group.view(-1, 1, 1), self.row_slot.view(-1, 1, 1)
            row_index = ((group * kv_heads + head.view(1, kv_heads, 1)) * slots * repeats + slot * repeats
                         + repeat.view(1, 1, repeats)).reshape(-1)
            mask_lines = (group * slots * repeats + slot * repeats + repeat.view(1, 1, repeats))[:, 0]
            mask = torch.full((groups, slots * repeats, _aligned(self.width)), float("-inf"), dtype=self.dtype,
                              device=device)
            for g, group_spec in enumerate(self.groups):
                mask[g, :, : group_spec.prefix_length] = 0.0
                # a group with fewer rows than `slots` has unused query lines: one open column keeps them finite
                mask[g, len(group_spec.rows) * repeats :, 0] = 0.0
            for row in range(self.size):
                lines = slice(self.slot_of[row] * repeats, (self.slot_of[row] + 1) * repeats)
                first = self.first_column[row]
                mask[self.group_of[row], lines, first : first + self.tail_prompt[row]] = 0.0
                mask[self.group_of[row], lines, self.decoded_from + self.slot_of[row] :
                     self.decoded_from + self.steps * self.slots : self.slots] = 0.0
            self._indexes[repeats] = (group_index, row_index, mask_lines)
            self._masks[repeats] = mask
        return self._indexes[repeats]

    def _write(self, layer: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        columns = self.row_slot + (self.decoded_from + self.steps * self.slots)
        # under autocast the new step's states come out bf16 while the prompt's are fp32; index_put wants one dtype
        self.keys[layer][self.row_group, :, columns] = keys.to(self.keys[layer].dtype)
        self.values[layer][self.row_group, :, columns] = values.to(self.values[layer].dtype)

    def attend(self, layer: int, query: torch.Tensor, scaling: float) -> torch.Tensor:
        batch, heads, _, dim = query.shape
        repeats = heads // self.kv_heads
        group_index, row_index, mask_lines = self._layout(repeats)
        mask = self._masks[repeats]
        if layer == 0:  # open this step's column to its own row's queries
            columns = self.row_slot + (self.decoded_from + self.steps * self.slots)
            mask.view(-1, mask.shape[-1])[mask_lines, columns[:, None]] = 0.0
        end = self.decoded_from + (self.steps + 1) * self.slots
        grouped = query.reshape(-1, dim)[group_index].view(len(self.groups), self.kv_heads, -1, dim)
        out = torch.nn.functional.scaled_dot_product_attention(
            grouped, self.keys[layer][:, :, :end], self.values[layer][:, :, :end], attn_mask=mask[:, None, :, :end],
            scale=scaling)
        return out.reshape(-1, out.shape[-1])[row_index].view(batch, heads, -1)[:, None]

    def row_states(self, row: int, tokens: int, copy: bool = True) -> LayerStates:
        start, group, first, tail = self.prefix_of[row], self.group_of[row], self.first_column[row], self.tail_prompt[row]
        decoded = tokens - start - tail
        if decoded < 0:
            raise ValueError(f"row {row} has {start + tail} prompt states; asked for the first {tokens} only")
        spans = [slice(0, start), slice(first, first + tail),
                 slice(self.decoded_from + self.slot_of[row], self.decoded_from + decoded * self.slots, self.slots)]
        return [  # a row's columns are not contiguous: always a copy
            (torch.cat([keys[group, :, span] for span in spans], dim=1),
             torch.cat([values[group, :, span] for span in spans], dim=1))
            for keys, values in zip(self.keys, self.values, strict=True)
        ]
