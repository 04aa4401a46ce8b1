"""HFPolicy: one generate call for many pending turns, each row cut at its own stop, exact log-probs."""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Any

import pytest
import torch

from test_rollout_support import tiny_model_dir
from toolgym.policy.base import Generation, GenerationRequest, PolicyError, SamplingParams
from toolgym.policy.hf import HFPolicy

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=12)


@cache
def _policy() -> HFPolicy:
    return HFPolicy(tiny_model_dir(), batch_wait_ms=50)


def _prompts(policy: HFPolicy) -> list[list[int]]:
    texts = ["List my notes.", "Add a note 'Buy milk' due tomorrow, please.", "Hi", "Mark note 1 as done " * 3]
    return [policy.tokenizer(f"<|im_start|>user\n{t}<|im_end|>\n<|im_start|>assistant\n")["input_ids"] for t in texts]


def _request(prompt: list[int], sampling: SamplingParams = GREEDY) -> GenerationRequest:
    return GenerationRequest(sampling=sampling, prompt_ids=prompt)


def _forward_logits(policy: HFPolicy, prompt: list[int], completion: list[int]) -> torch.Tensor:
    """Raw next-token logits at every completion position, from one plain forward pass."""
    with torch.inference_mode():
        logits = policy.model(torch.tensor([prompt + completion])).logits[0].float()
    return logits[len(prompt) - 1 : len(prompt) - 1 + len(completion)]


def test_greedy_logprobs_are_log_softmax_of_raw_logits() -> None:
    policy = _policy()
    prompt = _prompts(policy)[0]
    generation = policy.generate_batch([_request(prompt)])[0]
    logits = _forward_logits(policy, prompt, generation.completion_ids)
    assert generation.completion_ids == logits.argmax(-1).tolist()
    expected = logits.log_softmax(-1).gather(-1, torch.tensor(generation.completion_ids)[:, None]).squeeze(-1)
    assert generation.logprobs == pytest.approx(expected.tolist(), abs=1e-4)
    assert generation.finish_reason == "length" and len(generation.completion_ids) == 12


def test_sampled_logprobs_are_under_the_filtered_tempered_distribution() -> None:
    policy = _policy()
    prompt = _prompts(policy)[1]
    sampling = SamplingParams(temperature=0.7, top_k=5, top_p=0.9, max_new_tokens=16, seed=11)
    generation = policy.generate_batch([_request(prompt, sampling)])[0]
    logits = _forward_logits(policy, prompt, generation.completion_ids) / 0.7
    for position, token in enumerate(generation.completion_ids):
        values, order = logits[position].sort(descending=True)
        probs = values[:5].softmax(-1)
        kept = int(((probs.cumsum(-1) - probs) < 0.9).sum())  # top-p inside the top-k
        allowed = order[:kept].tolist()
        assert token in allowed
        expected = values[:kept].log_softmax(-1)[allowed.index(token)]
        assert generation.logprobs[position] == pytest.approx(float(expected), abs=1e-4)


def test_a_seeded_request_samples_the_same_ids_in_any_batch() -> None:
    policy = _policy()
    prompts = _prompts(policy)
    sampling = SamplingParams(temperature=1.0, max_new_tokens=10, seed=5)
    alone = policy.generate_batch([_request(prompts[0], sampling)])[0]
    in_batch = policy.generate_batch([_request(prompts[2]), _request(prompts[0], sampling), _request(prompts[3])])[1]
    assert alone.completion_ids == in_batch.completion_ids
    assert alone.logprobs == pytest.approx(in_batch.logprobs, abs=1e-4)
    other_seed = policy.generate_batch([_request(prompts[0], SamplingParams(temperature=1.0, max_new_tokens=10, seed=6))])
    assert other_seed[0].completion_ids != alone.completion_ids


def test_each_row_stops_at_its_own_stop_string_eos_or_budget() -> None:
    policy = _policy()
    prompts = _prompts(policy)
    free = policy.generate_batch([_request(prompts[0], SamplingParams(temperature=0.0, max_new_tokens=20))])[0]
    # A stop string that the greedy continuation completes at its 5th token.
    stop_text = policy.tokenizer.decode(free.completion_ids[4:5])
    first_hit = next(i for i in range(20) if stop_text in policy.tokenizer.decode(free.completion_ids[: i + 1]))
    stop_sampling = SamplingParams(temperature=0.0, max_new_tokens=20, stop=[stop_text])
    short = SamplingParams(temperature=0.0, max_new_tokens=3)
    stopped, budget, long = policy.generate_batch(
        [_request(prompts[0], stop_sampling), _request(prompts[1], short), _request(prompts[2], GREEDY)]
    )
    assert stopped.completion_ids == free.completion_ids[: first_hit + 1] and stopped.finish_reason == "stop"
    assert len(budget.completion_ids) == 3 and budget.finish_reason == "length"
    assert len(long.completion_ids) == 12 and len(long.logprobs) == 12


def test_an_eos_token_ends_the_row_and_is_kept_with_its_logprob() -> None:
    policy = HFPolicy(tiny_model_dir())
    prompt = _prompts(policy)[0]
    free = policy.generate_batch([_request(prompt)])[0]
    policy.eos_token_ids = {free.completion_ids[2]}  # pretend the 3rd greedy token closes the turn
    first = free.completion_ids.index(free.completion_ids[2])
    ended = policy.generate_batch([_request(prompt)])[0]
    assert ended.completion_ids == free.completion_ids[: first + 1]
    assert ended.logprobs == pytest.approx(free.logprobs[: first + 1], abs=1e-5)
    assert ended.finish_reason == "stop"


def test_concurrent_requests_share_generate_calls_and_match_one_at_a_time() -> None:
    policy = HFPolicy(tiny_model_dir(), batch_wait_ms=50)
    prompts = _prompts(policy) * 3
    one_at_a_time = [policy.generate_batch([_request(p)])[0] for p in prompts]
    calls_before = policy.generate_calls

    async def together() -> list[Generation]:
        try:
            return list(await asyncio.gather(*(policy.generate(_request(p)) for p in prompts)))
        finally:
            await policy.close()

    batched = asyncio.run(together())
    calls = policy.generate_calls - calls_before
    assert calls < len(prompts) // 2, f"{len(prompts)} concurrent requests took {calls} generate calls"
    assert max(policy.batch_sizes[calls_before:]) > 1
    assert [g.completion_ids for g in batched] == [g.completion_ids for g in one_at_a_time]


def test_a_bad_prompt_fails_alone() -> None:
    policy = HFPolicy(tiny_model_dir())
    good = _prompts(policy)[0]

    async def run() -> list[Any]:
        try:
            return list(await asyncio.gather(
                policy.generate(_request([policy.vocab_size + 5])), policy.generate(_request(good)),
                return_exceptions=True,
            ))
        finally:
            await policy.close()

    bad, fine = asyncio.run(run())
    assert isinstance(bad, PolicyError) and "outside the vocabulary" in str(bad)
    assert isinstance(fine, Generation) and len(fine.completion_ids) == 12


def test_chat_requests_are_refused_in_token_mode() -> None:
    policy = _policy()
    with pytest.raises(PolicyError, match="token-mode"):
        asyncio.run(policy.generate(GenerationRequest(sampling=GREEDY, messages=[{"role": "user", "content": "hi"}])))


def test_lora_adapter_changes_the_model_and_is_named(tmp_path: Any) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir()))
    torch.manual_seed(0)
    adapter = get_peft_model(base, LoraConfig(r=4, lora_alpha=64, target_modules=["q_proj", "v_proj"],
                                              init_lora_weights=False))
    adapter.save_pretrained(tmp_path / "adapter")
    plain = _policy()
    tuned = HFPolicy(tiny_model_dir(), lora=tmp_path / "adapter")
    prompt = _prompts(plain)[1]
    assert tuned.generate_batch([_request(prompt)])[0].logprobs != plain.generate_batch([_request(prompt)])[0].logprobs
    assert tuned.checkpoint is not None and tuned.checkpoint.endswith(f"+lora:{(tmp_path / 'adapter').resolve()}")
    with pytest.raises(FileNotFoundError, match=r"adapter_config\.json"):
        HFPolicy(tiny_model_dir(), lora=tmp_path)
    from toolgym.policy.server import load_served_model

    served = load_served_model(str(tiny_model_dir()), lora=str(tmp_path / "adapter"), model_name="tuned")
    assert served.policy.checkpoint == tuned.checkpoint and served.model_name == "tuned"
    assert served.policy.generate_batch([_request(prompt)])[0].logprobs == pytest.approx(
        tuned.generate_batch([_request(prompt)])[0].logprobs, abs=1e-4)


def test_cache_keyword_sees_through_a_peft_wrapper() -> None:
    """peft's forward takes **kwargs: the keyword is the wrapped model's (`cache` on transformers 5, no warning)."""
    import inspect

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from toolgym.policy.cache_arg import cache_keyword

    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir()))
    expected = "cache" if "cache" in inspect.signature(type(base).forward).parameters else "past_key_values"
    wrapped = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"]))
    assert cache_keyword(wrapped) == cache_keyword(base) == expected


def test_prefix_cache_reuses_shared_prompt_states_without_changing_results() -> None:
    cached = HFPolicy(tiny_model_dir())
    uncached = HFPolicy(tiny_model_dir(), prefix_cache_tokens=0)
    assert cached.prefix_cache is not None and uncached.prefix_cache is None
    system = cached.tokenizer("<|im_start|>system\nYou manage notes. " * 20 + "<|im_end|>\n")["input_ids"]
    prompts = [system + cached.tokenizer(f"<|im_start|>user\nTask {i}<|im_end|>\n<|im_start|>assistant\n")["input_ids"]
               for i in range(4)]
    sampling = SamplingParams(temperature=1.0, max_new_tokens=10, seed=2)
    first = cached.generate_batch([_request(prompts[0], sampling)])
    assert cached.prefix_cache.reused_tokens == 0
    # a later turn of the same episode extends the first prompt: all of it is reused
    follow_up = prompts[0] + first[0].completion_ids + prompts[1][len(system):]
    batch = [_request(p, sampling) for p in [*prompts[1:], follow_up]]
    with_cache = cached.generate_batch(batch)
    assert cached.prefix_cache.reused_tokens >= 3 * len(system) + len(prompts[0])
    without_cache = uncached.generate_batch(batch)
    for a, b in zip(with_cache, without_cache, strict=True):
        assert a.completion_ids == b.completion_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_a_prefix_shared_within_one_batch_is_computed_once() -> None:
    cached = HFPolicy(tiny_model_dir())
    uncached = HFPolicy(tiny_model_dir(), prefix_cache_tokens=0)
    system = cached.tokenizer("<|im_start|>system\nYou manage notes and tasks. " * 12 + "<|im_end|>\n")["input_ids"]
    assert len(system) > 64
    prompts = [system + cached.tokenizer(f"<|im_start|>user\nTask {i}<|im_end|>\n")["input_ids"] for i in range(3)]
    batch = [_request(p, SamplingParams(temperature=1.0, max_new_tokens=8, seed=4)) for p in prompts]
    with_cache = cached.generate_batch(batch)
    assert cached.prefix_cache is not None and cached.prefix_cache.reused_tokens >= 2 * len(system)
    without_cache = uncached.generate_batch(batch)
    assert [g.completion_ids for g in with_cache] == [g.completion_ids for g in without_cache]
