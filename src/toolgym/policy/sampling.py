"""Per-row sampling and stopping for one batched `generate` call.

`transformers.generate` samples every row of a batch with one global RNG and one set of warpers.
Episodes in a batch need their own temperature, top-p, top-k, seed, stop strings and token budget,
and the rollout needs the log-prob of each sampled token under the distribution actually used.
So generation runs greedy over scores from `RowSampler`, which draws each row's token itself
(inverse-CDF with the row's own generator) and returns a one-hot score; `RowStopper` ends each row
at its own eos / stop string / budget.

A row with a grammar matcher (`toolgym.policy.grammar`) has every token the grammar forbids masked
before its temperature, top-k and top-p apply, and its recorded log-prob is under that masked
distribution: the one its token was drawn from. Rows without one skip all of it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import torch
from llguidance import LLMatcher
from transformers import LogitsProcessor, StoppingCriteria

from toolgym.policy.base import SamplingParams
from toolgym.policy.grammar import advance, allowed_tokens


@dataclass
class RowState:
    """What one row of a batch has produced so far, and why it ended (None while running)."""

    sampling: SamplingParams
    generator: torch.Generator
    matcher: LLMatcher | None = None  # the row's grammar state, when its output is constrained
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    length: int | None = None  # tokens kept once the row has finished
    finish_reason: str | None = None

    @property
    def done(self) -> bool:
        return self.length is not None


def row_generator(sampling: SamplingParams, fallback: random.Random) -> torch.Generator:
    """A private RNG per request: seeded requests reproduce whatever batch they land in."""
    seed = sampling.seed if sampling.seed is not None else fallback.getrandbits(63)
    generator = torch.Generator(device="cpu")
    generator.manual_seed(int(seed) % (2**63))
    return generator


def _inverse_cdf(logp: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Index drawn from each row of `logp` (log-probabilities) given one uniform in [0, 1) per row."""
    cdf = logp.exp().cumsum(dim=-1)
    targets = (uniforms * cdf[:, -1]).unsqueeze(-1)
    # right=True: first index whose cdf exceeds the target, so a zero-probability token is never drawn.
    picks = torch.searchsorted(cdf, targets, right=True).squeeze(-1)
    return picks.clamp(max=logp.shape[-1] - 1)


class RowSampler(LogitsProcessor):
    """Chooses each row's next token and records it with its log-prob; returns one-hot scores."""

    def __init__(self, rows: list[RowState]) -> None:
        self.rows = rows
        temperatures = [r.sampling.temperature for r in rows]
        self.greedy = torch.tensor([t <= 0 for t in temperatures])
        self.temperature = torch.tensor([max(t, 1e-6) for t in temperatures], dtype=torch.float32).unsqueeze(-1)
        self.top_p = torch.tensor([r.sampling.top_p for r in rows], dtype=torch.float32).unsqueeze(-1)
        self.top_k = [r.sampling.top_k for r in rows]
        self.filtered = any(r.sampling.top_p < 1.0 or r.sampling.top_k > 0 for r in rows if r.sampling.temperature > 0)
        self.constrained = [index for index, row in enumerate(rows) if row.matcher is not None]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        logits = scores.float().cpu()
        if self.constrained:
            logits = self._masked(logits)
        batch, vocab = logits.shape
        chosen = torch.zeros(batch, dtype=torch.long)
        chosen_logprob = torch.zeros(batch, dtype=torch.float32)

        greedy_rows = self.greedy.nonzero().squeeze(-1)
        if greedy_rows.numel():
            raw = torch.log_softmax(logits[greedy_rows], dim=-1)
            picks = raw.argmax(dim=-1)
            chosen[greedy_rows] = picks
            chosen_logprob[greedy_rows] = raw.gather(-1, picks.unsqueeze(-1)).squeeze(-1)

        sample_rows = (~self.greedy).nonzero().squeeze(-1)
        if sample_rows.numel():
            scaled = logits[sample_rows] / self.temperature[sample_rows]
            uniforms = torch.cat([torch.rand(1, generator=self.rows[i].generator) for i in sample_rows.tolist()])
            if self.filtered:
                values, order = scaled.sort(dim=-1, descending=True)
                ranks = torch.arange(vocab).unsqueeze(0)
                limits = torch.tensor([self.top_k[i] or vocab for i in sample_rows.tolist()]).unsqueeze(-1)
                keep = ranks < limits
                probs = torch.softmax(values.masked_fill(~keep, float("-inf")), dim=-1)
                mass_before = probs.cumsum(dim=-1) - probs
                keep &= mass_before < self.top_p[sample_rows]
                keep[:, 0] = True
                logp = torch.log_softmax(values.masked_fill(~keep, float("-inf")), dim=-1)
                positions = _inverse_cdf(logp, uniforms)
                picks = order.gather(-1, positions.unsqueeze(-1)).squeeze(-1)
                picked_logprob = logp.gather(-1, positions.unsqueeze(-1)).squeeze(-1)
            else:
                logp = torch.log_softmax(scaled, dim=-1)
                picks = _inverse_cdf(logp, uniforms)
                picked_logprob = logp.gather(-1, picks.unsqueeze(-1)).squeeze(-1)
            chosen[sample_rows] = picks
            chosen_logprob[sample_rows] = picked_logprob

        for index, row in enumerate(self.rows):
            if not row.done:
                row.token_ids.append(int(chosen[index]))
                row.logprobs.append(float(chosen_logprob[index]))
                if row.matcher is not None:
                    advance(row.matcher, int(chosen[index]))
        one_hot = torch.full_like(scores, float("-inf"))
        one_hot[torch.arange(batch, device=scores.device), chosen.to(scores.device)] = 0.0
        return one_hot

    def _masked(self, logits: torch.Tensor) -> torch.Tensor:
        """`logits` (a copy) with each running constrained row's forbidden tokens at -inf."""
        live = [(index, matcher) for index in self.constrained
                if not self.rows[index].done and (matcher := self.rows[index].matcher) is not None]
        if not live:
            return logits
        allowed = torch.ones_like(logits, dtype=torch.bool)
        allowed[[index for index, _ in live]] = allowed_tokens([matcher for _, matcher in live], logits.shape[-1])
        return logits.masked_fill(~allowed, float("-inf"))


class RowStopper(StoppingCriteria):
    """Ends each row at an eos token, its first stop string, or its own max_new_tokens."""

    def __init__(self, rows: list[RowState], tokenizer: Any, eos_token_ids: set[int]) -> None:
        self.rows = rows
        self.tokenizer = tokenizer
        self.eos_token_ids = eos_token_ids
        # A stop string of n characters is completed within the last n + a few tokens.
        self.windows = [max((len(s) for s in r.sampling.stop), default=0) + 4 for r in rows]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: Any) -> torch.BoolTensor:
        for index, row in enumerate(self.rows):
            if row.done:
                continue
            produced = len(row.token_ids)
            last = row.token_ids[-1]
            if last in self.eos_token_ids or (row.sampling.stop and self._hit_stop_string(row, self.windows[index])):
                row.length, row.finish_reason = produced, "stop"
            elif produced >= row.sampling.max_new_tokens:
                row.length, row.finish_reason = produced, "length"
        return torch.tensor([r.done for r in self.rows], dtype=torch.bool, device=input_ids.device)

    def _hit_stop_string(self, row: RowState, window: int) -> bool:
        tail = self.tokenizer.decode(row.token_ids[-window:], skip_special_tokens=False)
        return any(stop in tail for stop in row.sampling.stop)
