"""The scoring pass for `toolgym serve policy`'s top-N log-probs per token.

The batched decoder keeps only each sampled token's log-prob, so the N most likely alternatives are
recomputed by one forward over prompt + completion, on the policy's own worker thread (never while a
decode batch holds the model). They are under the distribution each token was drawn from (the
grammar's mask, then temperature, top-k and top-p, applied as `toolgym.policy.sampling` applies
them; greedy: the model's own), the distribution `token_logprobs` already report, so both views agree.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Any

import torch

from toolgym.policy.base import SamplingParams
from toolgym.policy.grammar import replay_allowed
from toolgym.policy.hf import HFPolicy

# What a token outside the sampled set (cut by top-k or top-p) reports: OpenAI's floor, finite for JSON.
LOGPROB_FLOOR = -9999.0

TopLogprobs = list[list[tuple[int, float]]]  # per sampled token: (token id, log-prob), most likely first


def sampled_logprobs(logits: torch.Tensor, sampling: SamplingParams) -> torch.Tensor:
    """Log-probs over the vocabulary (rows: positions) as the sampler saw them for `sampling`."""
    logits = logits.float()
    if sampling.temperature <= 0:
        return torch.log_softmax(logits, dim=-1)
    scaled = logits / sampling.temperature
    vocab = scaled.shape[-1]
    if sampling.top_p >= 1.0 and sampling.top_k <= 0:
        return torch.log_softmax(scaled, dim=-1)
    values, order = scaled.sort(dim=-1, descending=True)
    keep = (torch.arange(vocab) < (sampling.top_k or vocab)).expand_as(values).clone()
    probs = torch.softmax(values.masked_fill(~keep, float("-inf")), dim=-1)
    keep &= (probs.cumsum(dim=-1) - probs) < sampling.top_p
    keep[:, 0] = True
    sorted_logp = torch.log_softmax(values.masked_fill(~keep, float("-inf")), dim=-1)
    return torch.empty_like(sorted_logp).scatter_(-1, order, sorted_logp)


def _keeps_last_logits(model: Any) -> bool:
    """Whether the model's forward can compute logits for the last positions only (transformers' models do)."""
    try:
        return "logits_to_keep" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def score_top_logprobs(
    policy: HFPolicy, prompt_ids: Sequence[int], completion_ids: Sequence[int], sampling: SamplingParams, top_n: int,
    grammar: str | None = None,
) -> TopLogprobs:
    """The `top_n` most likely tokens (and their log-probs) at each position of `completion_ids`; with
    `grammar`, among the tokens it allowed there."""
    if not completion_ids or top_n <= 0:
        return [[] for _ in completion_ids]
    ids = torch.tensor([[*prompt_ids, *completion_ids[:-1]]], dtype=torch.long, device=policy.device)
    keep = len(completion_ids)
    extra = {"logits_to_keep": keep} if _keeps_last_logits(policy.model) else {}
    with torch.inference_mode():
        logits = policy.model(input_ids=ids, use_cache=False, **extra).logits[0, -keep:]
    logits = logits.float().cpu()
    if grammar is not None:
        allowed = replay_allowed(policy.grammar_tokenizer, grammar, completion_ids)
        logits = logits.masked_fill(~allowed[:, : logits.shape[-1]], float("-inf"))
    logp = sampled_logprobs(logits, sampling)
    values, indices = logp.topk(min(top_n, logp.shape[-1]), dim=-1)
    values = values.clamp(min=LOGPROB_FLOOR)
    return [
        [(int(i), float(v)) for i, v in zip(row_ids.tolist(), row_values.tolist(), strict=True)]
        for row_ids, row_values in zip(indices, values, strict=True)
    ]


async def top_logprobs(
    policy: HFPolicy, prompt_ids: Sequence[int], completion_ids: Sequence[int], sampling: SamplingParams, top_n: int,
    grammar: str | None = None,
) -> TopLogprobs:
    """`score_top_logprobs` on the policy's generation thread, after whatever batch it is running."""
    loop = asyncio.get_running_loop()
    # The policy's single worker thread is what keeps the model to one user at a time (its decode loop
    # patches the attention layers while it runs), so the scoring pass queues behind it there.
    return await loop.run_in_executor(
        policy._executor, score_top_logprobs, policy, list(prompt_ids), list(completion_ids), sampling, top_n, grammar,
    )
