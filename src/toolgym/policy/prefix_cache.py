"""Prefix cache: key/value states of recent prompts, reused by prompts that start the same way.

Episodes of one app share a long system prompt (policy, context, tools), and every later turn of
an episode extends its previous prompt. Attention is causal, so the KV of a prompt's first n
tokens depends on those n tokens only: a new prompt may reuse the KV of its longest common prefix
with any stored prompt and compute just the rest. Entries are evicted least-recently-used once
the stored token count passes the budget.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch

LayerStates = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values): [kv_heads, tokens, head_dim]


@dataclass
class PrefixEntry:
    token_ids: torch.Tensor  # 1-D, the prompt these states belong to
    states: LayerStates

    @property
    def length(self) -> int:
        return int(self.token_ids.shape[0])


def common_prefix_length(a: torch.Tensor, b: torch.Tensor) -> int:
    n = min(a.shape[0], b.shape[0])
    if n == 0:
        return 0
    differ = (a[:n] != b[:n]).nonzero()
    return int(differ[0, 0]) if differ.numel() else n


class PrefixCache:
    """LRU of prompt states; `lookup` finds the longest reusable prefix of a new prompt."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.entries: OrderedDict[int, PrefixEntry] = OrderedDict()
        self.stored_tokens = 0
        self.reused_tokens = 0  # prompt tokens not recomputed thanks to the cache
        self._next_key = 0

    def lookup(self, prompt: list[int], count: bool = True) -> tuple[int, PrefixEntry | None]:
        """(tokens to reuse, entry); always leaves at least one prompt token to compute.

        `count=False` only looks: no LRU refresh, no reuse counted."""
        if not self.entries or len(prompt) < 2:
            return 0, None
        ids = torch.tensor(prompt, dtype=torch.long)
        best_length, best_key = 0, None
        for key, entry in self.entries.items():
            length = common_prefix_length(entry.token_ids, ids)
            if length > best_length:
                best_length, best_key = length, key
        if best_key is None:
            return 0, None
        usable = min(best_length, len(prompt) - 1)
        if count:
            self.entries.move_to_end(best_key)
            self.reused_tokens += usable
        return usable, self.entries[best_key]

    def store(self, prompt: list[int] | torch.Tensor, states: LayerStates) -> None:
        """Keep a prompt's states; stored prompts it extends are dropped (it covers them)."""
        if self.max_tokens <= 0 or len(prompt) > self.max_tokens:
            return
        ids = torch.as_tensor(prompt, dtype=torch.long)
        covered = [
            key for key, entry in self.entries.items()
            # cheap checks first (length, last token) so most entries skip the full comparison
            if entry.length <= len(ids) and int(entry.token_ids[-1]) == int(ids[entry.length - 1])
            and common_prefix_length(entry.token_ids, ids) == entry.length
        ]
        for key in covered:
            self.stored_tokens -= self.entries.pop(key).length
        self.entries[self._next_key] = PrefixEntry(ids, states)
        self._next_key += 1
        self.stored_tokens += len(prompt)
        while self.stored_tokens > self.max_tokens and self.entries:
            _, evicted = self.entries.popitem(last=False)
            self.stored_tokens -= evicted.length

    def clear(self) -> None:
        self.entries.clear()
        self.stored_tokens = 0
