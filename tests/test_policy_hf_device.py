"""The HF engine's decode loop keeps its work on the logits' device: sampling by torch ops there, one host copy
of the chosen ids per step, attention through SDPA, and decode buffers reused from batch to batch.

These run on CPU; what they pin (no host copy of the logits, one sync a step, the SDPA calls, the reused
storage) is what makes the same code fast on a GPU."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import pytest
import torch
from torch.overrides import TorchFunctionMode

from test_rollout_support import tiny_model_dir
from toolgym.policy.base import GenerationRequest, SamplingParams
from toolgym.policy.decode_buffers import DecodeBuffers
from toolgym.policy.hf import HFPolicy
from toolgym.policy.sampling import RowSampler, RowState, row_settings, sample_tokens

# Tensor methods that wait for the device and bring data to the host.
HOST_SYNCS = {"item", "tolist", "cpu", "numpy", "nonzero", "__bool__", "__int__", "__float__", "__index__"}
EPS = torch.finfo(torch.float32).eps


class HostSyncs(TorchFunctionMode):
    """Counts host syncs (and what each copied: its element count) made inside the block."""

    def __init__(self) -> None:
        super().__init__()
        self.copies: list[tuple[str, int]] = []

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", "")
        if name in HOST_SYNCS and args and isinstance(args[0], torch.Tensor):
            self.copies.append((name, args[0].numel()))
        return func(*args, **(kwargs or {}))


@cache
def _policy() -> HFPolicy:
    return HFPolicy(tiny_model_dir())


def _prompts(policy: HFPolicy, shared: bool) -> list[list[int]]:
    """Four prompts; with `shared`, after one long system prompt (the grouped layout), else unrelated."""
    system = policy.tokenizer("<|im_start|>system\nYou run the notes app: list, read, write. " * 6 + "<|im_end|>\n")
    prompts = []
    for task in range(4):
        user = policy.tokenizer(f"<|im_start|>user\nTask {task}{' please' * task}<|im_end|>\n<|im_start|>assistant\n")
        prompts.append((system["input_ids"] if shared else policy.tokenizer(f"Note {task}: ")["input_ids"])
                       + user["input_ids"])
    return prompts


def _requests(prompts: list[list[int]], tokens: int) -> list[GenerationRequest]:
    return [GenerationRequest(SamplingParams(temperature=1.0, max_new_tokens=tokens, seed=i), prompt_ids=p)
            for i, p in enumerate(prompts)]


def _reference(logits: torch.Tensor, params: SamplingParams, uniform: float) -> tuple[int, float]:
    """One row sampled on its own, step by step, the way the per-row host sampler did it."""
    if params.temperature <= 0:
        raw = logits.log_softmax(-1)
        return int(raw.argmax()), float(raw.max())
    if params.top_p >= 1.0 and params.top_k <= 0:  # nothing to truncate: inverse CDF in id order
        logp = (logits / params.temperature).log_softmax(-1)
        cdf = logp.exp().cumsum(-1)
        token = min(int(torch.searchsorted(cdf, uniform * cdf[-1], right=True)), logits.numel() - 1)
        return token, float(logp[token])
    values, order = (logits / params.temperature).sort(descending=True)
    keep = torch.arange(values.numel()) < (params.top_k or values.numel())
    probs = values.masked_fill(~keep, float("-inf")).softmax(-1)
    keep &= (probs.cumsum(-1) - probs) < params.top_p
    keep[0] = True
    logp = values.masked_fill(~keep, float("-inf")).log_softmax(-1)
    cdf = logp.exp().cumsum(-1)
    position = min(int(torch.searchsorted(cdf, uniform * cdf[-1], right=True)), values.numel() - 1)
    return int(order[position]), float(logp[position])


def test_rows_are_sampled_as_each_would_be_alone_with_its_own_seeds_stream() -> None:
    """Greedy, tempered, top-k and top-p rows in one batch, over steps: every pick is the one the row's own
    generator gives step by step (one uniform per sampled token), whatever rows it shares the batch with."""
    params = [SamplingParams(temperature=0.0, max_new_tokens=6), SamplingParams(temperature=1.0, max_new_tokens=6),
              SamplingParams(temperature=0.7, top_k=5, max_new_tokens=6),
              SamplingParams(temperature=1.3, top_p=0.8, max_new_tokens=6),
              SamplingParams(temperature=0.9, top_k=40, top_p=0.95, max_new_tokens=6)]
    rows = [RowState(p, torch.Generator().manual_seed(10 + i)) for i, p in enumerate(params)]
    streams = [torch.Generator().manual_seed(10 + i) for i in range(len(params))]
    sampler = RowSampler(rows)
    logits_source = torch.Generator().manual_seed(0)
    for _ in range(6):
        logits = torch.randn((len(rows), 300), generator=logits_source) * 4
        sampler.step(logits)
        for index, (row, stream) in enumerate(zip(rows, streams, strict=True)):
            uniform = float(torch.rand(1, generator=stream)) if row.sampling.temperature > 0 else 0.0
            token, logprob = _reference(logits[index], row.sampling, uniform)
            assert row.token_ids[-1] == token
            # the same float32 ops on the same numbers: a few roundings of a log-prob of magnitude |logprob|
            assert row.logprobs[-1] == pytest.approx(logprob, abs=8 * EPS * max(1.0, abs(logprob)))


def test_a_rows_tokens_do_not_depend_on_the_other_rows_settings() -> None:
    """A seeded row without top-k/top-p draws the same tokens beside rows that have them, and alone."""
    logits = torch.randn((3, 500), generator=torch.Generator().manual_seed(3)) * 3
    plain = SamplingParams(temperature=1.0, max_new_tokens=4, seed=7)
    others = [SamplingParams(temperature=0.0), SamplingParams(temperature=0.7, top_p=0.8, top_k=30)]

    def tokens(params: list[SamplingParams]) -> list[int]:
        rows = [RowState(p, torch.Generator().manual_seed(7)) for p in params]
        sampler = RowSampler(rows)
        for _ in range(4):
            sampler.step(logits[: len(rows)])
        return rows[0].token_ids

    assert tokens([plain, *others]) == tokens([plain])


def test_sampling_runs_on_the_logits_device_and_copies_two_numbers_a_row_to_the_host() -> None:
    params = [SamplingParams(temperature=0.0), SamplingParams(temperature=0.8, top_p=0.9, top_k=20)]
    logits = torch.randn((2, 4000), generator=torch.Generator().manual_seed(1))
    settings = row_settings(params, logits.device)
    with HostSyncs() as syncs:
        ids, logprobs = sample_tokens(logits, settings, torch.tensor([0.3, 0.6]))
    assert syncs.copies == []  # the whole computation stays where the logits are
    assert ids.device == logprobs.device == logits.device and ids.shape == logprobs.shape == (2,)
    rows = [RowState(p, torch.Generator().manual_seed(2)) for p in params]
    with HostSyncs() as syncs:
        RowSampler(rows).step(logits)
    assert syncs.copies == [("tolist", 2 * len(rows))]  # ids and log-probs, not the [rows, vocab] logits


def test_a_decode_step_makes_one_host_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Syncs counted over a whole batch at two budgets: the difference per extra step is the loop's own."""
    policy = _policy()
    monkeypatch.setattr(policy, "eos_token_ids", set())  # every row runs its whole budget: no compaction
    prompts = _prompts(policy, shared=True)

    def syncs(tokens: int) -> int:
        assert policy.prefix_cache is not None
        policy.prefix_cache.clear()  # the same prefill work at both budgets
        with HostSyncs() as counted:
            generations = policy.generate_batch(_requests(prompts, tokens))
        assert all(len(g.completion_ids) == tokens for g in generations)
        return len(counted.copies)

    short, long = syncs(8), syncs(16)
    assert policy.shared_prefix_groups == 1 and policy.compactions == 0
    assert (long - short) / 8 == 1


@pytest.mark.parametrize("shared", [True, False])
def test_decode_attention_is_sdpa(shared: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every layer of every decode step calls torch's SDPA once, for the grouped and the padded layout."""
    policy = _policy()
    monkeypatch.setattr(policy, "eos_token_ids", set())
    prompts = _prompts(policy, shared)
    assert policy.prefix_cache is not None
    policy.prefix_cache.clear()
    policy.generate_batch(_requests(prompts, 1))  # stores every prompt's states: no prefill forward below
    calls: list[tuple[int, ...]] = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def counting(query: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        calls.append(tuple(query.shape))
        return sdpa(query, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", counting)
    steps = 5
    policy.generate_batch(_requests(prompts, steps))
    assert (policy.shared_prefix_groups > 0) == shared
    assert len(calls) == policy.model.config.num_hidden_layers * steps
    if shared:  # one group: its four rows (times the query heads of a kv head) are the query lines of one call
        heads, kv_heads = policy.model.config.num_attention_heads, policy.model.config.num_key_value_heads
        assert calls[0][:3] == (1, kv_heads, len(prompts) * heads // kv_heads)


def test_decode_buffers_are_reused_by_the_next_batch_and_by_compaction() -> None:
    policy = HFPolicy(tiny_model_dir())
    prompts = _prompts(policy, shared=True)
    first, second = policy._decode_buffers
    # rows 1-3 stop after 2 tokens, row 0 runs on: the batch is compacted into the second buffers
    budgets = [12, 2, 2, 2]

    def run() -> None:
        policy.generate_batch([GenerationRequest(SamplingParams(temperature=1.0, max_new_tokens=b, seed=i),
                                                 prompt_ids=p) for i, (p, b) in enumerate(zip(prompts, budgets,
                                                                                              strict=True))])

    run()
    assert policy.compactions == 1 and first.nbytes > 0 and second.nbytes > 0
    storage = {name: flat.data_ptr() for pool in (first, second) for name, flat in pool._flat.items()}
    allocations = first.allocations + second.allocations
    run()
    assert policy.compactions == 2
    assert {name: flat.data_ptr() for pool in (first, second) for name, flat in pool._flat.items()} == storage
    assert first.allocations + second.allocations == allocations


def test_a_policy_over_a_live_model_frees_its_buffers_after_each_batch() -> None:
    """Its trainer's update takes turns with sampling for the memory: nothing is kept between batches."""
    owner = _policy()
    adopted = HFPolicy.__new__(HFPolicy)
    adopted.device = "cpu"
    adopted._adopt(owner.model, owner.tokenizer, name="live", checkpoint=None, max_batch_size=8, batch_wait_ms=1,
                   max_batch_wait_ms=1, seed=0, prefix_cache_tokens=0)
    generations = adopted.generate_batch(_requests(_prompts(owner, shared=True), 4))
    assert all(len(g.completion_ids) == 4 for g in generations)
    assert [pool.nbytes for pool in adopted._decode_buffers] == [0, 0]
    assert owner._keep_decode_buffers and not adopted._keep_decode_buffers


def test_a_buffer_grows_only_when_a_view_does_not_fit() -> None:
    buffers = DecodeBuffers()
    small = buffers.take("keys", (2, 3, 4), torch.float32, "cpu")
    assert torch.count_nonzero(small) == 0  # new storage is zeros: columns no batch wrote stay finite
    small.fill_(1.0)
    again = buffers.take("keys", (3, 2, 4), torch.float32, "cpu")
    assert again.data_ptr() == small.data_ptr() and buffers.allocations == 1
    larger = buffers.take("keys", (4, 3, 4), torch.float32, "cpu")
    assert buffers.allocations == 2 and larger.shape == (4, 3, 4)
    assert buffers.take("keys", (4, 3, 4), torch.float64, "cpu").dtype == torch.float64  # another dtype: new storage
    buffers.release()
    assert buffers.nbytes == 0


def test_models_outside_the_layouts_sample_through_generate_with_the_same_sampler() -> None:
    """The padded `generate` fallback feeds the sampler's choices back through its one-hot scores."""
    policy = _policy()
    fallback = HFPolicy(tiny_model_dir(), prefix_cache_tokens=0)
    fallback._plain_attention = False  # as for a model with sliding-window or linear-attention layers
    prompt = _prompts(policy, shared=False)[1]
    for params in (SamplingParams(temperature=0.0, max_new_tokens=8),
                   SamplingParams(temperature=0.9, top_p=0.9, max_new_tokens=8, seed=4)):
        request = [GenerationRequest(params, prompt_ids=prompt)]
        expected, got = policy.generate_batch(request)[0], fallback.generate_batch(request)[0]
        assert got.completion_ids == expected.completion_ids
        assert got.logprobs == pytest.approx(expected.logprobs, abs=1e-4)  # one row: no padding, same attention


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_the_decode_matches_the_cpu_and_its_log_probs() -> None:
    cpu = _policy()
    cuda = HFPolicy(tiny_model_dir(), device="cuda", dtype="float32")
    prompts = _prompts(cpu, shared=True)
    greedy = [GenerationRequest(SamplingParams(temperature=0.0, max_new_tokens=8), prompt_ids=p) for p in prompts]
    on_cpu, on_cuda = cpu.generate_batch(greedy), cuda.generate_batch(greedy)
    assert [g.completion_ids for g in on_cuda] == [g.completion_ids for g in on_cpu]
    for a, b in zip(on_cuda, on_cpu, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
