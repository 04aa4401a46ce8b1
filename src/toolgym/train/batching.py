"""Length-bucketed micro-batches of TrainingSamples, planned up front so a resumed run sees the same order.

A micro-batch is a few samples of similar length, right-padded, with at most `token_budget` padded
tokens: little padding, no cross-sample attention, and attention cost Σ L² rather than (Σ L)².
The whole plan (optimizer step → micro-batches → sample indices) is a pure function of the sample
lengths and the seed, so resuming at step k replays exactly the batches an unbroken run would.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from toolgym.schema import TrainingSample

IGNORE_INDEX = -100
SORT_WINDOW = 256  # samples sorted by length together: big enough to bucket, small enough to stay random
PREFIX_KEY_TOKENS = 256  # samples whose first ids agree this far share a system prompt: batch them together

StepPlan = list[list[list[int]]]  # step → micro-batches → sample indices


@dataclass
class Batch:
    """`targets[b, t]` is the id of token t + 1 where that token is trained, else -100;
    `sampler_logprobs[b, t]` is the log-prob the sampler gave that token (0 elsewhere), for policy-gradient
    losses. `targets != -100` selects the trained positions in the order `token_logprobs` returns them."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    targets: torch.Tensor
    sampler_logprobs: torch.Tensor
    tokens: int
    supervised: int

    def to(self, device: torch.device | str) -> Batch:
        return Batch(self.input_ids.to(device), self.attention_mask.to(device), self.targets.to(device),
                     self.sampler_logprobs.to(device), self.tokens, self.supervised)


def supervised_count(sample: TrainingSample) -> int:
    """Trained tokens of a sample (the first token is never predicted)."""
    return sum(sample.loss_mask[1:])


def collate(samples: Sequence[TrainingSample], pad_id: int) -> Batch:
    """Right-padded ids, attention mask and next-token targets of one micro-batch."""
    if not samples:
        raise ValueError("a micro-batch needs at least one sample")
    width = max(len(s.input_ids) for s in samples)
    input_ids = torch.full((len(samples), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(samples), width), dtype=torch.long)
    targets = torch.full((len(samples), width), IGNORE_INDEX, dtype=torch.long)
    sampler_logprobs = torch.zeros((len(samples), width), dtype=torch.float32)
    for row, sample in enumerate(samples):
        ids = torch.tensor(sample.input_ids, dtype=torch.long)
        mask = torch.tensor(sample.loss_mask, dtype=torch.bool)
        n = len(sample.input_ids)
        input_ids[row, :n] = ids
        attention_mask[row, :n] = 1
        # position t predicts token t + 1
        targets[row, : n - 1] = torch.where(mask[1:], ids[1:], torch.tensor(IGNORE_INDEX))
        logprobs = torch.tensor(sample.sampler_logprobs[1:], dtype=torch.float32)
        sampler_logprobs[row, : n - 1] = torch.where(mask[1:], logprobs, torch.tensor(0.0))
    return Batch(input_ids, attention_mask, targets, sampler_logprobs, int(attention_mask.sum()),
                 int((targets != IGNORE_INDEX).sum()))


def prefix_keys(samples: Sequence[TrainingSample]) -> list[int]:
    """A small id per distinct opening (the first PREFIX_KEY_TOKENS ids): same app or task, same key."""
    ids: dict[tuple[int, ...], int] = {}
    return [ids.setdefault(tuple(s.input_ids[:PREFIX_KEY_TOKENS]), len(ids)) for s in samples]


def micro_batches(lengths: Sequence[int], order: Sequence[int], token_budget: int,
                  max_rows: int | None = None, keys: Sequence[int] | None = None) -> list[list[int]]:
    """Group `order` into micro-batches: sorted by length within windows, rows × longest ≤ token_budget.

    With `keys` (prefix_keys), a window is sorted by key first, so rows that share a system prompt
    land together and the loss computes that prefix once. A sample longer than the budget gets a
    micro-batch of its own.
    """
    batches: list[list[int]] = []
    for start in range(0, len(order), SORT_WINDOW):
        window = sorted(order[start : start + SORT_WINDOW],
                        key=lambda i: (keys[i] if keys is not None else 0, lengths[i], i))
        current: list[int] = []
        longest = 0
        for index in window:
            grown = max(longest, lengths[index])
            full = (len(current) + 1) * grown > token_budget or (max_rows is not None and len(current) >= max_rows)
            full = full or (keys is not None and bool(current) and keys[current[0]] != keys[index])
            if current and full:
                batches.append(current)
                current, grown = [], lengths[index]
            current.append(index)
            longest = grown
        if current:
            batches.append(current)
    return batches


def plan_steps(lengths: Sequence[int], *, token_budget: int, grad_accum: int = 1, seed: int = 0,
               epochs: int = 1, max_steps: int | None = None, processes: int = 1,
               max_rows: int | None = None, keys: Sequence[int] | None = None) -> StepPlan:
    """Optimizer steps of `grad_accum × processes` micro-batches each, epoch after epoch.

    Each epoch shuffles the samples with its own seed, buckets them, and shuffles the buckets.
    `max_steps` (if given) cuts or extends the plan with further epochs. A trailing step with fewer
    micro-batches than processes is dropped (every process must take part in every step).
    """
    if not lengths:
        raise ValueError("no training samples")
    if token_budget < 1 or grad_accum < 1 or processes < 1:
        raise ValueError("token_budget, grad_accum and processes must be at least 1")
    per_step = grad_accum * processes
    steps: StepPlan = []
    epoch = 0
    while len(steps) < max_steps if max_steps is not None else epoch < epochs:
        rng = random.Random(f"toolgym-sft/{seed}/{epoch}")
        order = list(range(len(lengths)))
        rng.shuffle(order)
        batches = micro_batches(lengths, order, token_budget, max_rows, keys)
        rng.shuffle(batches)
        before = len(steps)
        for start in range(0, len(batches), per_step):
            chunk = batches[start : start + per_step]
            if len(chunk) >= processes:
                steps.append(chunk)
        if len(steps) == before:
            raise ValueError(f"{len(batches)} micro-batches per epoch cannot feed {processes} processes")
        epoch += 1
    return steps[:max_steps] if max_steps is not None else steps


def plan_fingerprint(plan: StepPlan, lengths: Sequence[int]) -> str:
    """sha256 of the plan and the sample lengths: a resumed run must find the same one."""
    digest = hashlib.sha256(json.dumps(plan, separators=(",", ":")).encode())
    digest.update(json.dumps(list(lengths), separators=(",", ":")).encode())
    return digest.hexdigest()


def eval_batches(lengths: Sequence[int], token_budget: int) -> list[list[int]]:
    """Deterministic micro-batches over every evaluation sample (no shuffling)."""
    return micro_batches(lengths, list(range(len(lengths))), token_budget)
