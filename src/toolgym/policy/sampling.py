"""Per-row sampling and stopping for a batched decode, computed where the logits are.

`transformers.generate` samples every row of a batch with one global RNG and one set of warpers.
Episodes in a batch need their own temperature, top-p, top-k, seed, stop strings and token budget,
and the rollout needs the log-prob of each sampled token under the distribution actually used.
So `RowSampler` draws each row's token itself with torch ops on the logits' device
(`sample_tokens`: tempered, top-k/top-p filtered, inverse-CDF), and only the chosen ids and their
log-probs (two numbers a row) come back to the host, in one copy per step. A row's randomness is its
own stream of uniforms, drawn once from its private generator (`RowState.draws`): the t-th token of
a row uses the t-th uniform, so a seeded row samples the same tokens in any batch. `RowStopper` ends
each row at its own eos / stop string / budget, on the host, from the ids already copied there.

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
    uniforms: torch.Tensor | None = None  # the row's draws (see `draws`), made on first use

    @property
    def done(self) -> bool:
        return self.length is not None

    def draws(self) -> torch.Tensor:
        """One uniform in [0, 1) per token the row may sample, drawn in one call from its generator.

        A CPU generator's stream does not depend on how it is cut, so these are the numbers one
        draw per step would give; a greedy row draws none."""
        if self.uniforms is None:
            count = max(self.sampling.max_new_tokens, 1) if self.sampling.temperature > 0 else 0
            self.uniforms = torch.rand(count, generator=self.generator)
        return self.uniforms


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


@dataclass
class RowSettings:
    """A batch's per-row sampling settings as tensors on one device ([rows] or [rows, 1])."""

    temperature: torch.Tensor  # float32 [rows, 1]; 1 on greedy rows (their sampled branch is discarded)
    top_p: torch.Tensor  # float32 [rows, 1]
    top_k: torch.Tensor  # int64 [rows, 1]; no limit is the largest int64
    greedy: torch.Tensor  # bool [rows]
    filtered: torch.Tensor  # bool [rows]: a sampled row with top-k or top-p
    any_greedy: bool
    all_greedy: bool
    any_filtered: bool
    any_plain: bool  # some sampled row without top-k or top-p


def row_settings(params: list[SamplingParams], device: torch.device | str) -> RowSettings:
    """The settings of `params` as tensors on `device` (built once per batch, not per step)."""
    greedy = [p.temperature <= 0 for p in params]
    filtered = [not g and (p.top_p < 1.0 or p.top_k > 0) for p, g in zip(params, greedy, strict=True)]
    no_limit = torch.iinfo(torch.long).max
    return RowSettings(
        temperature=torch.tensor([[1.0 if g else p.temperature] for p, g in zip(params, greedy, strict=True)],
                                 dtype=torch.float32, device=device),
        top_p=torch.tensor([[p.top_p] for p in params], dtype=torch.float32, device=device),
        top_k=torch.tensor([[p.top_k if p.top_k > 0 else no_limit] for p in params], dtype=torch.long, device=device),
        greedy=torch.tensor(greedy, dtype=torch.bool, device=device),
        filtered=torch.tensor(filtered, dtype=torch.bool, device=device),
        any_greedy=any(greedy), all_greedy=all(greedy), any_filtered=any(filtered),
        any_plain=any(not g and not f for g, f in zip(greedy, filtered, strict=True)),
    )


def sample_tokens(logits: torch.Tensor, settings: RowSettings,
                  uniforms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids [rows], log-probs [rows]) drawn from float `logits` [rows, vocab] on their own device.

    Greedy rows take the argmax with its log-prob under the raw softmax. Other rows draw by inverse
    CDF with their uniform from logits / T and record the log-prob under that tempered distribution
    (what the trainer recomputes): a row with top-k or top-p over its sorted, truncated distribution,
    a row without over the whole vocabulary in id order. Each row takes its own branch whatever the
    other rows need, so its token depends on its own settings and uniform only."""
    branches: list[tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]] = []  # (rows it is for, ids, logprobs)
    if settings.any_greedy:
        raw = torch.log_softmax(logits, dim=-1)
        picks = raw.argmax(dim=-1)
        branches.append((settings.greedy, picks, raw.gather(-1, picks.unsqueeze(-1)).squeeze(-1)))
    if settings.any_filtered:
        values, order = (logits / settings.temperature).sort(dim=-1, descending=True)
        keep = torch.arange(values.shape[-1], device=values.device).unsqueeze(0) < settings.top_k
        probs = torch.softmax(values.masked_fill(~keep, float("-inf")), dim=-1)
        keep &= (probs.cumsum(dim=-1) - probs) < settings.top_p
        keep[:, 0] = True
        logp = torch.log_softmax(values.masked_fill(~keep, float("-inf")), dim=-1)
        positions = _inverse_cdf(logp, uniforms).unsqueeze(-1)
        branches.append((settings.filtered, order.gather(-1, positions).squeeze(-1),
                         logp.gather(-1, positions).squeeze(-1)))
    if settings.any_plain:
        logp = torch.log_softmax(logits / settings.temperature, dim=-1)
        picks = _inverse_cdf(logp, uniforms)
        branches.append((None, picks, logp.gather(-1, picks.unsqueeze(-1)).squeeze(-1)))
    # the last branch is the default; each one before it takes its own rows
    _, ids, logprobs = branches[-1]
    for rows, branch_ids, branch_logprobs in reversed(branches[:-1]):
        assert rows is not None
        ids, logprobs = torch.where(rows, branch_ids, ids), torch.where(rows, branch_logprobs, logprobs)
    return ids, logprobs


class RowSampler(LogitsProcessor):
    """Chooses each row's next token on the logits' device and records it, with its log-prob, in its RowState.

    `step` is the decode loop's entry (returns the chosen ids, still on the device); calling the
    sampler as a logits processor returns one-hot scores instead, for `generate`."""

    def __init__(self, rows: list[RowState]) -> None:
        self.rows = rows
        self.constrained = [index for index, row in enumerate(rows) if row.matcher is not None]
        self._device: torch.device | None = None
        self._settings: RowSettings | None = None
        self._uniforms = torch.zeros(0)
        self._drawn = torch.zeros(0, dtype=torch.long)

    def _prepare(self, device: torch.device) -> RowSettings:
        """Settings and every row's uniforms moved to `device` once, on the first step."""
        if self._settings is None or self._device != device:
            self._device = device
            self._settings = row_settings([r.sampling for r in self.rows], device)
            streams = [r.draws() for r in self.rows]
            width = max([1, *(len(s) for s in streams)])
            uniforms = torch.zeros((len(self.rows), width), dtype=torch.float32)
            for index, stream in enumerate(streams):
                uniforms[index, : len(stream)] = stream
            self._uniforms = uniforms.to(device)
            # the next draw of each row is its uniform number len(token_ids): what it has sampled so far
            self._drawn = torch.tensor([len(r.token_ids) for r in self.rows], dtype=torch.long, device=device)
        return self._settings

    def step(self, logits: torch.Tensor) -> torch.Tensor:
        """Sample every row's next token from `logits` [rows, vocab]; record running rows' (one host copy)."""
        settings = self._prepare(logits.device)
        scores = logits.float()
        if self.constrained:
            scores = self._masked(scores)
        column = self._drawn.clamp(max=self._uniforms.shape[1] - 1).unsqueeze(-1)
        ids, logprobs = sample_tokens(scores, settings, self._uniforms.gather(1, column).squeeze(-1))
        self._drawn += 1
        # ids are exact in float64 (< 2**53) and so is a float32 log-prob: one tensor, one copy to the host
        # (MPS has no float64: float32 holds ids below 2**24, beyond any vocabulary there)
        wide = torch.float32 if ids.device.type == "mps" else torch.float64
        chosen, chosen_logprobs = torch.stack([ids.to(wide), logprobs.to(wide)]).tolist()
        for index, row in enumerate(self.rows):
            if not row.done:
                token = int(chosen[index])
                row.token_ids.append(token)
                row.logprobs.append(chosen_logprobs[index])
                if row.matcher is not None:
                    advance(row.matcher, token)
        return ids

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        ids = self.step(scores)
        one_hot = torch.full_like(scores, float("-inf"))
        return one_hot.scatter_(1, ids.unsqueeze(-1).to(scores.device), 0.0)

    def _masked(self, logits: torch.Tensor) -> torch.Tensor:
        """`logits` (a copy) with each running constrained row's forbidden tokens at -inf."""
        live = [(index, matcher) for index in self.constrained
                if not self.rows[index].done and (matcher := self.rows[index].matcher) is not None]
        if not live:
            return logits
        allowed = torch.ones_like(logits, dtype=torch.bool)
        masks = allowed_tokens([matcher for _, matcher in live], logits.shape[-1])
        allowed[[index for index, _ in live]] = masks.to(logits.device)
        return logits.masked_fill(~allowed, float("-inf"))


class RowStopper(StoppingCriteria):
    """Ends each row at an eos token, its first stop string, or its own max_new_tokens (on the host)."""

    def __init__(self, rows: list[RowState], tokenizer: Any, eos_token_ids: set[int]) -> None:
        self.rows = rows
        self.tokenizer = tokenizer
        self.eos_token_ids = eos_token_ids
        # A stop string of n characters is completed within the last n + a few tokens.
        self.windows = [max((len(s) for s in r.sampling.stop), default=0) + 4 for r in rows]

    def update(self) -> list[bool]:
        """Mark rows whose last token ended them; whether each row is done (from host lists only)."""
        for index, row in enumerate(self.rows):
            if row.done:
                continue
            produced = len(row.token_ids)
            last = row.token_ids[-1]
            if last in self.eos_token_ids or (row.sampling.stop and self._hit_stop_string(row, self.windows[index])):
                row.length, row.finish_reason = produced, "stop"
            elif produced >= row.sampling.max_new_tokens:
                row.length, row.finish_reason = produced, "length"
        return [r.done for r in self.rows]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: Any) -> torch.BoolTensor:
        return torch.tensor(self.update(), dtype=torch.bool, device=input_ids.device)

    def _hit_stop_string(self, row: RowState, window: int) -> bool:
        tail = self.tokenizer.decode(row.token_ids[-window:], skip_special_tokens=False)
        return any(stop in tail for stop in row.sampling.stop)
