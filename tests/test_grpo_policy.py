"""The GRPO rollout policy samples the trainer's live weights, and never reuses states of old weights."""

from __future__ import annotations

import pytest
import torch

from test_rollout_support import tiny_model_dir
from toolgym.policy.base import GenerationRequest, SamplingParams
from toolgym.train.grpo.policy import SharedModelPolicy
from toolgym.train.runtime import load_model, load_tokenizer


def _greedy(policy: SharedModelPolicy, prompt: list[int]) -> tuple[list[int], list[float]]:
    (generation,) = policy.generate_batch([GenerationRequest(SamplingParams(temperature=0.0, max_new_tokens=6),
                                                             prompt_ids=prompt)])
    return generation.completion_ids, generation.logprobs


def test_weights_changed_drops_stale_prompt_states() -> None:
    model = load_model(tiny_model_dir())
    tokenizer = load_tokenizer(tiny_model_dir())
    policy = SharedModelPolicy(model, tokenizer, name="grpo:test")
    uncached = SharedModelPolicy(model, tokenizer, name="grpo:test", prefix_cache_tokens=0)
    prompt = tokenizer("<|im_start|>user\nList my notes please.<|im_end|>\n<|im_start|>assistant\n")["input_ids"]
    longer = prompt + tokenizer("Sure")["input_ids"]
    _greedy(policy, prompt)  # the prompt's states are now cached
    assert policy.prefix_cache is not None and policy.prefix_cache.entries
    with torch.no_grad():  # an "optimizer step"
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    _, stale = _greedy(policy, longer)  # reuses states computed with the old weights
    fresh_ids, fresh = _greedy(uncached, longer)
    assert stale != fresh  # the bug weights_changed exists for
    policy.weights_changed("after-step-1")
    assert policy.checkpoint == "after-step-1" and not policy.prefix_cache.entries
    model.train()  # the trainer's mode: sampling switches to eval and back
    ids, logprobs = _greedy(policy, longer)
    assert model.training
    assert ids == fresh_ids
    assert logprobs == pytest.approx(fresh, abs=1e-4)


def test_sampling_under_bf16_autocast_with_shared_system_prompt() -> None:
    """GRPO samples under the trainer's bf16 autocast: decoded steps come out bf16, yet prompt states are
    kept (and attended) in fp32, the weights' dtype, over next turns too, so a batch never mixes dtypes."""
    model = load_model(tiny_model_dir())
    tokenizer = load_tokenizer(tiny_model_dir())
    policy = SharedModelPolicy(model, tokenizer, name="grpo:bf16", autocast_dtype=torch.bfloat16)
    system = tokenizer("<|im_start|>system\nYou run the notes app: list, read, write notes. " * 6 + "<|im_end|>\n")
    prompts = [system["input_ids"] + tokenizer(f"<|im_start|>user\nTask {i}<|im_end|>\n<|im_start|>assistant\n")
               ["input_ids"] for i in range(4)]
    sampling = SamplingParams(temperature=1.0, max_new_tokens=8, seed=3)
    generations = policy.generate_batch([GenerationRequest(sampling, prompt_ids=p) for p in prompts])
    assert len(generations) == 4
    for generation in generations:
        assert generation.completion_ids and len(generation.logprobs) == len(generation.completion_ids)
        assert all(lp <= 0.0 for lp in generation.logprobs)
    follow_ups = [p + g.completion_ids + tokenizer("<|im_start|>user\nok<|im_end|>\n<|im_start|>assistant\n")
                  ["input_ids"] for p, g in zip(prompts, generations, strict=True)]
    assert all(g.completion_ids for g in policy.generate_batch([GenerationRequest(sampling, prompt_ids=p)
                                                                for p in follow_ups]))
    assert policy.prefix_cache is not None and policy.prefix_cache.entries
    for entry in policy.prefix_cache.entries.values():
        assert all(keys.dtype == torch.float32 and values.dtype == torch.float32 for keys, values in entry.states)
