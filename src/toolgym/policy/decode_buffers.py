"""Storage for a decode batch's key/value states, allocated once and reused by every later batch.

Each decode batch (and each compacted rebuild of one) needs per-layer key and value buffers of its
own shape. Allocating them per batch costs an allocation, page faults on CPU and a zero fill every
time; here each kind of buffer is one flat tensor that only grows, and a batch takes a view of it.
A view's unwritten columns hold zeros or an earlier batch's states: finite values that the batch's
attention mask keeps out, so they never change a result.
"""

from __future__ import annotations

import math

import torch

# Room added when a buffer grows, so a slightly larger next batch does not allocate again.
HEADROOM = 0.25


class DecodeBuffers:
    """Flat tensors by name; `take` hands out a view of the requested shape."""

    def __init__(self) -> None:
        self._flat: dict[str, torch.Tensor] = {}
        self.allocations = 0  # tensors allocated so far: it stops growing once batches fit

    def take(self, name: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
        """A [shape] view of the `name` buffer, which is reallocated (larger) only when it does not fit."""
        need = math.prod(shape)
        flat = self._flat.get(name)
        if flat is None or flat.numel() < need or flat.dtype != dtype or flat.device != torch.device(device):
            # zeros, not empty: columns a batch never writes must hold finite numbers (its mask adds -inf to them)
            flat = torch.zeros(need + int(need * HEADROOM), dtype=dtype, device=device)
            self._flat[name] = flat
            self.allocations += 1
        return flat[:need].view(shape)

    def release(self) -> None:
        """Drop every buffer (views taken earlier keep theirs alive until they go)."""
        self._flat.clear()

    @property
    def nbytes(self) -> int:
        return sum(flat.numel() * flat.element_size() for flat in self._flat.values())
