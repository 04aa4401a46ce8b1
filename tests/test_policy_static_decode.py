"""The HF engine's static decode (transformers' StaticCache, fixed shapes, optionally compiled) samples what the
default layouts sample, keeps one cache across batches, and syncs with the host once a step."""

from __future__ import annotations

from functools import cache

import pytest
import torch

from test_policy_hf_device import HostSyncs, _prompts
from test_rollout_support import tiny_model_dir
from toolgym.policy.base import Generation, GenerationRequest, SamplingParams
from toolgym.policy.hf import HFPolicy
from toolgym.policy.static_decode import MIN_COLUMNS, bucket

# The engine's tolerance for one log-prob computed along two attention paths (float32 throughout).
LOGPROB_TOLERANCE = 1e-4


@cache
def _layouts() -> HFPolicy:
    return HFPolicy(tiny_model_dir(), prefix_cache_tokens=0)


def _static(compiled: bool = False) -> HFPolicy:
    policy = HFPolicy(tiny_model_dir())
    policy.static_decode, policy.compile_decode = True, compiled
    return policy


def _requests(prompts: list[list[int]]) -> list[GenerationRequest]:
    """Rows of different budgets and settings: greedy, tempered, top-p, top-k."""
    settings = [SamplingParams(temperature=0.0, max_new_tokens=6), SamplingParams(temperature=1.0, max_new_tokens=12,
                                                                                  seed=1),
                SamplingParams(temperature=0.8, top_p=0.9, max_new_tokens=9, seed=2),
                SamplingParams(temperature=0.7, top_k=20, max_new_tokens=4, seed=3)]
    return [GenerationRequest(s, prompt_ids=p) for s, p in zip(settings, prompts, strict=True)]


def _same(got: list[Generation], expected: list[Generation]) -> None:
    assert [g.completion_ids for g in got] == [g.completion_ids for g in expected]
    for a, b in zip(got, expected, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=LOGPROB_TOLERANCE)
        assert a.finish_reason == b.finish_reason


def test_buckets_are_powers_of_two_at_or_above_the_need() -> None:
    assert [bucket(n) for n in (1, 2, 3, 5, 64, 65)] == [1, 2, 4, 8, 64, 128]
    assert bucket(10, MIN_COLUMNS) == MIN_COLUMNS and bucket(MIN_COLUMNS + 1, MIN_COLUMNS) == 2 * MIN_COLUMNS


@pytest.mark.parametrize("shared", [True, False])
def test_static_decode_samples_what_the_default_layouts_sample(shared: bool) -> None:
    policy = _static()
    prompts = _prompts(policy, shared)
    first = policy.generate_batch(_requests(prompts))
    _same(first, _layouts().generate_batch(_requests(prompts)))
    # the states it stored for the next turn are right: the follow-up decodes as from scratch
    assert policy.prefix_cache is not None
    follow_ups = [p + g.completion_ids for p, g in zip(prompts, first, strict=True)]
    reused = policy.prefix_cache.reused_tokens
    second = policy.generate_batch(_requests(follow_ups))
    assert policy.prefix_cache.reused_tokens - reused >= sum(len(p) - 1 for p in follow_ups)
    _same(second, _layouts().generate_batch(_requests(follow_ups)))


def test_one_static_cache_serves_batches_that_fit_it() -> None:
    policy = _static()
    prompts = _prompts(policy, shared=True)
    policy.generate_batch(_requests(prompts))
    decoder = policy._static_decoder
    assert decoder is not None and decoder.cache is not None and (decoder.rows, decoder.allocations) == (4, 1)
    storage = decoder.cache.layers[0].keys.data_ptr()
    policy.generate_batch(_requests(prompts)[:3])  # fewer rows: the same cache, its fourth row pads the batch
    assert decoder.cache.layers[0].keys.data_ptr() == storage and decoder.allocations == 1
    policy.generate_batch(_requests(prompts) + _requests(prompts)[:1])  # five rows: a cache of eight
    assert (decoder.rows, decoder.allocations) == (8, 2)


def test_a_static_decode_step_makes_one_host_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = _static()
    monkeypatch.setattr(policy, "eos_token_ids", set())
    prompts = _prompts(policy, shared=True)

    def syncs(tokens: int) -> int:
        assert policy.prefix_cache is not None
        policy.prefix_cache.clear()
        requests = [GenerationRequest(SamplingParams(temperature=1.0, max_new_tokens=tokens, seed=i), prompt_ids=p)
                    for i, p in enumerate(prompts)]
        with HostSyncs() as counted:
            policy.generate_batch(requests)
        return len(counted.copies)

    assert (syncs(16) - syncs(8)) / 8 == 1


@pytest.mark.slow  # compiles the step with inductor (tens of seconds on CPU)
def test_the_compiled_step_samples_the_same_and_compiles_once_per_cache_shape() -> None:
    from torch._dynamo.utils import counters

    policy = _static(compiled=True)
    prompts = _prompts(policy, shared=False)
    _same(policy.generate_batch(_requests(prompts)), _layouts().generate_batch(_requests(prompts)))
    graphs = counters["stats"]["unique_graphs"]
    assert graphs >= 1
    assert policy.prefix_cache is not None
    policy.prefix_cache.clear()
    _same(policy.generate_batch(_requests(prompts)[:3]), _layouts().generate_batch(_requests(prompts)[:3]))
    assert counters["stats"]["unique_graphs"] == graphs  # same cache shape: the compiled step is replayed


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("compiled", [False, True])
def test_static_decode_on_cuda_matches_the_default_layouts(compiled: bool) -> None:
    cuda = HFPolicy(tiny_model_dir(), device="cuda", dtype="float32")
    cuda.static_decode, cuda.compile_decode = True, compiled
    prompts = _prompts(cuda, shared=True)
    _same(cuda.generate_batch(_requests(prompts)), _layouts().generate_batch(_requests(prompts)))
