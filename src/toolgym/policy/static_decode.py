"""Decoding on transformers' own StaticCache, where every step has the same shapes and can be compiled.

The default decode layouts (`toolgym.policy.shared_prefix`) attend over exactly the columns written so
far, so their shapes change every step; that suits eager CPU decoding but not `torch.compile` with CUDA
graphs, which replays one captured step. Here a batch's rows are left-padded into a `StaticCache`
(rows and columns rounded up to powers of two, kept across batches while they fit), attention is the
model's own configured implementation over all the cache's columns with a boolean mask (a row sees
its own prompt and what it has fed so far), and the step, optionally compiled, takes and returns
tensors of fixed shapes. Rows stay in the batch until it ends (no compaction: that would change the
shapes). Prompt states still come from the prefix cache and the packed prefill, so they are shared
with the default path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from transformers import StaticCache

from toolgym.policy.cache_arg import cache_keyword
from toolgym.policy.prefix_cache import LayerStates
from toolgym.policy.shared_prefix import RowPrompt

MIN_COLUMNS = 256  # the smallest cache: short prompts share one shape (one compiled step)


def bucket(count: int, minimum: int = 1) -> int:
    """The power of two at or above `count` (and `minimum`): a few shapes serve every batch."""
    size = max(minimum, 1)
    while size < count:
        size *= 2
    return size


class StaticDecoder:
    """A StaticCache and the decode step over it, kept by a policy across batches (and across compilations)."""

    def __init__(self, model: Any, compile_step: bool = False) -> None:
        self.model, self.compile_step = model, compile_step
        self.cache: StaticCache | None = None
        self.rows = self.columns = 0
        self.allocations = 0  # caches built so far: it stops growing once batches fit
        self._keyword = cache_keyword(model)
        self._step: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor] | None = None
        self._history: list[int] = []
        self._dtype: torch.dtype | None = None
        self._columns = torch.zeros(0)
        self._first_visible = torch.zeros(0)
        self.start = 0

    def _fit(self, rows: int, columns: int, dtype: torch.dtype, device: torch.device) -> StaticCache:
        """The kept cache if the batch fits it, else a new one (and a new step to compile)."""
        if self.cache is None or self.rows < rows or self.columns < columns or self._dtype != dtype:
            self.cache = None  # free the old one before allocating
            self.rows, self.columns, self._dtype = bucket(rows), bucket(columns, MIN_COLUMNS), dtype
            config = self.model.config
            heads = int(getattr(config, "num_key_value_heads", None) or config.num_attention_heads)
            dim = int(getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)
            cache = StaticCache(config=config, max_cache_len=self.columns)
            cache.early_initialization(self.rows, heads, dim, dtype, device)
            self.cache, self._step = cache, None
            self.allocations += 1
            self._columns = torch.arange(self.columns, device=device).view(1, 1, 1, -1)
        return self.cache

    def start_batch(self, prompts: list[RowPrompt], budget: int) -> int:
        """Copy each row's prompt states into the cache, ending at one column; the cache's row count."""
        keys, _ = prompts[0].states[0]
        self._history = [len(p.token_ids) - 1 for p in prompts]
        self.start = max(self._history)
        cache = self._fit(len(prompts), self.start + max(budget, 1), keys.dtype, keys.device)
        for layer, cached in enumerate(cache.layers):
            for row, prompt in enumerate(prompts):
                width = self._history[row]
                if width:
                    row_keys, row_values = prompt.states[layer]
                    cached.keys[row, :, self.start - width : self.start] = row_keys[:, :width]
                    cached.values[row, :, self.start - width : self.start] = row_values[:, :width]
            cached.cumulative_length.fill_(self.start)  # the next update writes column `start`
        # a row sees its own columns only; rows past the batch (padding) see just what they feed
        first = [self.start - width for width in self._history] + [self.start] * (self.rows - len(prompts))
        self._first_visible = torch.tensor(first, device=keys.device).view(-1, 1, 1, 1)
        return self.rows

    def _forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor, first_visible: torch.Tensor) -> torch.Tensor:
        assert self.cache is not None
        written = self.cache.layers[0].cumulative_length  # this step's token goes to this column
        mask = (self._columns >= first_visible) & (self._columns <= written)
        output = self.model(input_ids=input_ids, position_ids=position_ids, attention_mask={"full_attention": mask},
                            use_cache=True, logits_to_keep=1, **{self._keyword: self.cache})
        return output.logits[:, -1]

    def step(self, input_ids: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        """Logits [cache rows, vocab] of one decode step; ids and positions are [cache rows, 1]."""
        if self._step is None:
            self._step = (torch.compile(self._forward, mode="reduce-overhead", dynamic=False)
                          if self.compile_step else self._forward)
        return self._step(input_ids, position_ids, self._first_visible)

    def row_states(self, row: int, tokens: int) -> LayerStates:
        """A copy of the states of a row's first `tokens` tokens (its prompt, then what it was fed)."""
        assert self.cache is not None
        columns = slice(self.start - self._history[row], self.start - self._history[row] + tokens)
        return [(layer.keys[row, :, columns].clone(), layer.values[row, :, columns].clone())
                for layer in self.cache.layers]

    def release(self) -> None:
        self.cache, self._step, self.rows, self.columns = None, None, 0, 0
