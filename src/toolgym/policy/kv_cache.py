"""A decode cache that writes into preallocated buffers instead of concatenating at every step.

transformers' DynamicLayer grows its key/value tensors with `torch.cat` once per generated token,
copying the whole cache each step: on CPU with long prompts that copy costs as much as the
attention itself. A batch knows its final length (prompt width + token budget), so the buffers
are allocated once and each step writes one slice in place.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


class ReservedLayer(DynamicLayer):
    """A DynamicLayer over buffers sized for the whole generation (grown by doubling if exceeded)."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = max(capacity, 1)
        self.length = 0
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self._key_buffer = self._allocate(key_states, self.capacity)
        self._value_buffer = self._allocate(value_states, self.capacity)

    @staticmethod
    def _allocate(like: torch.Tensor, capacity: int) -> torch.Tensor:
        batch, heads, _, dim = like.shape
        return torch.empty((batch, heads, capacity, dim), dtype=like.dtype, device=like.device)

    def _grow(self, needed: int) -> None:
        assert self._key_buffer is not None and self._value_buffer is not None
        capacity = max(needed, 2 * self.capacity)
        keys, values = self._allocate(self._key_buffer, capacity), self._allocate(self._value_buffer, capacity)
        keys[:, :, : self.length] = self._key_buffer[:, :, : self.length]
        values[:, :, : self.length] = self._value_buffer[:, :, : self.length]
        self._key_buffer, self._value_buffer, self.capacity = keys, values, capacity

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            self._grow(end)
        assert self._key_buffer is not None and self._value_buffer is not None
        self._key_buffer[:, :, self.length : end] = key_states
        self._value_buffer[:, :, self.length : end] = value_states
        self.length = end
        self.keys = self._key_buffer[:, :, :end]
        self.values = self._value_buffer[:, :, :end]
        return self.keys, self.values

    def crop(self, tokens_to_remove: int) -> None:
        super().crop(tokens_to_remove)
        self.length = self.keys.shape[-2] if self.keys is not None else 0

    def reset(self) -> None:
        super().reset()
        self.length = 0
        self._key_buffer = self._value_buffer = None

    def batch_repeat_interleave(self, repeats: int) -> None:
        raise NotImplementedError("ReservedLayer is built per batch; beam search and n>1 are not used here")

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        raise NotImplementedError("ReservedLayer is built per batch; beam search and n>1 are not used here")


def reserved_cache(config: Any, capacity: int) -> DynamicCache:
    """A DynamicCache for `config` whose layers hold `capacity` tokens without re-copying."""
    cache = DynamicCache(config=config)
    cache.layers = [ReservedLayer(capacity) for _ in cache.layers]
    return cache


def supports_reserved_layers(config: Any) -> bool:
    """Only plain full-attention models (no sliding windows, no linear-attention hybrids)."""
    return all(type(layer) is DynamicLayer for layer in DynamicCache(config=config).layers)
