"""Shared-prefix decoding: rows that share a system prompt read it once per step, with unchanged results."""

from __future__ import annotations

import asyncio
from functools import cache

import pytest
import torch

from test_rollout_support import tiny_model_dir
from toolgym.policy.base import Generation, GenerationRequest, SamplingParams
from toolgym.policy.hf import HFPolicy
from toolgym.policy.shared_prefix import (
    MIN_SHARED_TOKENS,
    GroupedDecodeBatch,
    PaddedDecodeBatch,
    RowPrompt,
    new_decode_batch,
    plan_groups,
    worth_sharing,
)

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=10)


@cache
def _policy() -> HFPolicy:
    return HFPolicy(tiny_model_dir(), batch_wait_ms=50)


def _app_prompts(policy: HFPolicy, apps: int = 2, per_app: int = 3) -> list[list[int]]:
    """`per_app` episodes of each of `apps` apps: a long system prompt per app, then a short task."""
    prompts = []
    for app in range(apps):
        system = policy.tokenizer(f"<|im_start|>system\nYou run app {app}: bookings, notes, mail. " * 8 + "<|im_end|>\n")
        for task in range(per_app):
            user = policy.tokenizer(f"<|im_start|>user\nTask {task} for app {app}, "
                                    f"{'please ' * task}<|im_end|>\n<|im_start|>assistant\n")
            prompts.append(system["input_ids"] + user["input_ids"])
    return prompts


def _request(prompt: list[int], sampling: SamplingParams = GREEDY) -> GenerationRequest:
    return GenerationRequest(sampling=sampling, prompt_ids=prompt)


def test_plan_groups_joins_rows_by_their_shared_prefix() -> None:
    system_a, system_b = list(range(10, 10 + 40)), list(range(100, 100 + 50))
    prompts = [[*system_a, 1, 2, 3], [*system_b, 4, 5], [*system_a, 1, 7], list(range(200, 260)), [*system_b, 6]]
    groups = sorted(plan_groups(prompts), key=lambda g: g.rows)
    assert [g.rows for g in groups] == [[0, 2], [1, 4], [3]]
    assert groups[0].prefix_length == 41  # system_a and the shared token 1
    assert groups[1].prefix_length == 50  # capped one token before row 4's last token (it is decoded)
    assert groups[2].prefix_length == 59  # a row alone: all but its last token
    short = [[*list(range(MIN_SHARED_TOKENS - 1)), 500, 501], [*list(range(MIN_SHARED_TOKENS - 1)), 600, 601]]
    assert all(len(g.rows) == 1 for g in plan_groups(short))
    assert not worth_sharing(plan_groups(short), [len(p) for p in short])
    assert worth_sharing(groups, [len(p) for p in prompts])


def _random_row(prompt: list[int], layers: int, heads: int, dim: int, generator: torch.Generator) -> RowPrompt:
    shape = (heads, len(prompt) - 1, dim)
    return RowPrompt(prompt, [(torch.randn(shape, generator=generator), torch.randn(shape, generator=generator))
                              for _ in range(layers)])


@pytest.mark.parametrize("grouped", [True, False])
def test_decode_batch_attention_equals_attention_over_each_rows_whole_history(grouped: bool) -> None:
    generator = torch.Generator().manual_seed(0)
    heads, kv_heads, dim = 4, 2, 8
    system = list(range(1, 41))
    # a one-token prompt too: its group has no prefix at all
    prompts = [[*system, 50, 51, 52], [*system, 60], list(range(70, 120)), [*system, 50, 51, 53, 54, 55], [7]]
    rows = [_random_row(p, 2, kv_heads, dim, generator) for p in prompts]
    groups = plan_groups(prompts)
    # a shared prefix's states come from one donor row: make every member's copy equal, as a model's would be
    for group in groups:
        donor = rows[group.rows[0]].states
        for member in group.rows[1:]:
            for (keys, values), (donor_keys, donor_values) in zip(rows[member].states, donor, strict=True):
                keys[:, : group.prefix_length] = donor_keys[:, : group.prefix_length]
                values[:, : group.prefix_length] = donor_values[:, : group.prefix_length]
    batch = new_decode_batch(rows, groups if grouped else None, budget=3)
    assert isinstance(batch, GroupedDecodeBatch if grouped else PaddedDecodeBatch)
    fed: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[], []]  # per layer: each step's new keys, values
    for _step in range(3):
        new_keys = [torch.randn(len(rows), kv_heads, 1, dim, generator=generator) for _ in range(2)]
        new_values = [torch.randn(len(rows), kv_heads, 1, dim, generator=generator) for _ in range(2)]
        query = torch.randn(len(rows), heads, 1, dim, generator=generator)
        for layer in range(2):
            batch.update(new_keys[layer], new_values[layer], layer)
            fed[layer].append((new_keys[layer], new_values[layer]))
            out = batch.attend(layer, query, dim**-0.5)
            for index, row in enumerate(rows):
                keys, values = row.states[layer]
                history = batch.row_states(index, len(row.token_ids) + batch.steps)[layer]
                assert torch.equal(history[0][:, : keys.shape[1]], keys)
                assert torch.equal(history[1][:, : values.shape[1]], values)
                assert torch.equal(history[0][:, keys.shape[1] :], torch.cat([k[index] for k, _ in fed[layer]], dim=1))
                assert torch.equal(history[1][:, values.shape[1] :], torch.cat([v[index] for _, v in fed[layer]], dim=1))
                expected = torch.nn.functional.scaled_dot_product_attention(
                    query[index : index + 1], history[0][None], history[1][None], enable_gqa=True, scale=dim**-0.5)
                assert torch.allclose(out[index, 0], expected[0, :, 0], atol=1e-5)
        batch.advance()
    with pytest.raises(ValueError, match="budget"):
        batch.update(new_keys[0], new_values[0], 0)


def test_shared_prefix_batch_matches_one_at_a_time_and_a_plain_forward() -> None:
    policy = _policy()
    prompts = _app_prompts(policy)
    one_at_a_time = [policy.generate_batch([_request(p)])[0] for p in prompts]
    assert policy.shared_prefix_groups == 0  # a single row shares nothing
    batched = HFPolicy(tiny_model_dir()).generate_batch([_request(p) for p in prompts])
    assert [g.completion_ids for g in batched] == [g.completion_ids for g in one_at_a_time]
    for alone, together in zip(one_at_a_time, batched, strict=True):
        assert together.logprobs == pytest.approx(alone.logprobs, abs=1e-4)
    with torch.inference_mode():
        prompt, completion = prompts[4], batched[4].completion_ids
        logits = policy.model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1].float()
    assert completion == logits.argmax(-1).tolist()
    expected = logits.log_softmax(-1).gather(-1, torch.tensor(completion)[:, None]).squeeze(-1)
    assert batched[4].logprobs == pytest.approx(expected.tolist(), abs=1e-4)


def test_the_grouped_layout_is_used_and_sampled_rows_keep_their_seeds() -> None:
    policy = HFPolicy(tiny_model_dir())
    prompts = _app_prompts(policy, apps=2, per_app=3)
    sampling = [SamplingParams(temperature=0.8, top_p=0.9, max_new_tokens=8, seed=i) for i in range(len(prompts))]
    batched = policy.generate_batch([_request(p, s) for p, s in zip(prompts, sampling, strict=True)])
    assert policy.shared_prefix_groups == 2
    alone = HFPolicy(tiny_model_dir(), prefix_cache_tokens=0)
    for prompt, params, generation in zip(prompts, sampling, batched, strict=True):
        reference = alone.generate_batch([_request(prompt, params)])[0]
        assert generation.completion_ids == reference.completion_ids
        assert generation.logprobs == pytest.approx(reference.logprobs, abs=1e-4)


def test_the_next_turn_reuses_states_stored_from_a_grouped_batch() -> None:
    cached = HFPolicy(tiny_model_dir())
    uncached = HFPolicy(tiny_model_dir(), prefix_cache_tokens=0)
    prompts = _app_prompts(cached)
    # a first turn long enough that each episode's own history reaches well past the shared prefix
    first = cached.generate_batch([_request(p, SamplingParams(temperature=0.0, max_new_tokens=48)) for p in prompts])
    assert cached.shared_prefix_groups == 2 and cached.prefix_cache is not None
    tool = cached.tokenizer("<|im_end|>\n<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n"
                            "<|im_start|>assistant\n")["input_ids"]
    follow_ups = [p + g.completion_ids + tool for p, g in zip(prompts, first, strict=True)]
    reused_before = cached.prefix_cache.reused_tokens
    second = cached.generate_batch([_request(p) for p in follow_ups])
    # every follow-up finds its whole first turn (prompt + completion but the last token) in the cache
    assert cached.prefix_cache.reused_tokens - reused_before >= sum(
        len(p) + len(g.completion_ids) - 1 for p, g in zip(prompts, first, strict=True))
    reference = uncached.generate_batch([_request(p) for p in follow_ups])
    assert [g.completion_ids for g in second] == [g.completion_ids for g in reference]
    for a, b in zip(second, reference, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_a_one_token_prompt_decodes() -> None:
    policy = _policy()
    generation = policy.generate_batch([_request([policy.tokenizer.convert_tokens_to_ids("<|im_start|>")])])[0]
    with torch.inference_mode():
        ids = torch.tensor([[policy.tokenizer.convert_tokens_to_ids("<|im_start|>"), *generation.completion_ids]])
        logits = policy.model(ids).logits[0, :-1]
    assert generation.completion_ids == logits.argmax(-1).tolist()


def test_after_a_batch_the_collector_waits_for_as_many_requests_again() -> None:
    """Episodes come back from their env steps a few ms apart: a gap longer than batch_wait must not split them."""
    policy = HFPolicy(tiny_model_dir(), batch_wait_ms=1, max_batch_wait_ms=2000)
    prompts = _app_prompts(policy, apps=1, per_app=4)

    async def rounds() -> list[Generation]:
        try:
            await asyncio.gather(*(policy.generate(_request(p)) for p in prompts))

            async def late(prompt: list[int], delay: float) -> Generation:
                await asyncio.sleep(delay)
                return await policy.generate(_request(prompt))

            return list(await asyncio.gather(*(late(p, 0.05 * i) for i, p in enumerate(prompts))))
        finally:
            await policy.close()

    asyncio.run(rounds())
    assert policy.batch_sizes == [4, 4]


def test_rests_after_one_cached_prefix_are_computed_in_one_forward() -> None:
    policy = HFPolicy(tiny_model_dir())
    prompts = _app_prompts(policy, apps=1, per_app=4)
    policy.generate_batch([_request(prompts[0], SamplingParams(temperature=0.0, max_new_tokens=2))])
    matches, forwards = _prompt_states_counting_forwards(policy, prompts[1:])
    assert forwards == 1  # three rests, one forward
    _states_match_computing_alone(prompts[1:], matches)


@pytest.mark.parametrize("apps,per_app", [(2, 3), (1, 1)])
def test_finished_rows_leave_the_batch_without_changing_any_row(apps: int, per_app: int) -> None:
    """Rows with short budgets finish first; the batch is rebuilt from the rest, results stay the same."""
    policy = HFPolicy(tiny_model_dir())
    prompts = _app_prompts(policy, apps=apps, per_app=per_app) * (2 if per_app == 1 else 1)
    budgets = [2 if i % 3 else 20 for i in range(len(prompts))]  # two of every three rows stop after 2 tokens
    sampling = [SamplingParams(temperature=0.8, max_new_tokens=b, seed=i) for i, b in enumerate(budgets)]
    batched = policy.generate_batch([_request(p, s) for p, s in zip(prompts, sampling, strict=True)])
    assert policy.compactions >= 1
    alone = HFPolicy(tiny_model_dir(), prefix_cache_tokens=0)
    for prompt, params, generation in zip(prompts, sampling, batched, strict=True):
        reference = alone.generate_batch([_request(prompt, params)])[0]
        assert generation.completion_ids == reference.completion_ids
        assert generation.logprobs == pytest.approx(reference.logprobs, abs=1e-4)
    assert alone.compactions == 0
    # Rows that left early and rows that ran on both stored states a next turn reuses, and those are right.
    assert policy.prefix_cache is not None
    follow_ups = [p + g.completion_ids for p, g in zip(prompts, batched, strict=True)]
    reused_before = policy.prefix_cache.reused_tokens
    second = policy.generate_batch([_request(p) for p in follow_ups])
    assert policy.prefix_cache.reused_tokens - reused_before >= sum(len(p) - 1 for p in follow_ups)
    reference = alone.generate_batch([_request(p) for p in follow_ups])
    assert [g.completion_ids for g in second] == [g.completion_ids for g in reference]


def test_rests_after_each_rows_own_cached_prefix_are_computed_in_one_forward() -> None:
    """Next turns: each episode continues its own cached history; their rests still share one forward."""
    policy = HFPolicy(tiny_model_dir())
    tokenize = policy.tokenizer
    earlier = []
    for index, prompt in enumerate(_app_prompts(policy, apps=2, per_app=2)):
        reply = tokenize(f"<tool_call>looking up item {index} " + "and its details " * (3 + 2 * index))["input_ids"]
        earlier.append(prompt + reply)
    policy._prompt_states([[*turn, 0] for turn in earlier])  # caches every earlier turn (all but its last id)
    follow_ups = [turn + tokenize(f"<|im_end|>\n<|im_start|>user\n<tool_response>result {i}" + " ok" * i
                                  + "</tool_response><|im_end|>\n<|im_start|>assistant\n")["input_ids"]
                  for i, turn in enumerate(earlier)]
    reused_before = policy.prefix_cache.reused_tokens if policy.prefix_cache else 0
    matches, forwards = _prompt_states_counting_forwards(policy, follow_ups)
    assert forwards == 1  # four rests over four different cached prefixes, one forward
    assert policy.prefix_cache is not None
    assert policy.prefix_cache.reused_tokens - reused_before == sum(len(turn) for turn in earlier)
    alone = HFPolicy(tiny_model_dir(), prefix_cache_tokens=0)
    for prompt, (reused, entry) in zip(follow_ups, matches, strict=True):
        assert reused == len(prompt) - 1 and entry is not None
        assert entry.token_ids.tolist() == prompt[:-1]
        reference = alone._prompt_states([prompt])[0][1]
        assert reference is not None
        for (keys, values), (ref_keys, ref_values) in zip(entry.states, reference.states, strict=True):
            assert keys.shape == ref_keys.shape
            assert torch.allclose(keys, ref_keys, atol=1e-4)
            assert torch.allclose(values, ref_values, atol=1e-4)
    # and decoding from those states gives what decoding from scratch gives
    assert [g.completion_ids for g in policy.generate_batch([_request(p) for p in follow_ups])] == [
        g.completion_ids for g in alone.generate_batch([_request(p) for p in follow_ups])]


def _prompt_states_counting_forwards(policy: HFPolicy, prompts: list[list[int]]) -> tuple[list, int]:
    forwards: list[int] = []
    hook = policy.model.register_forward_hook(lambda module, args, kwargs_out: forwards.append(1))
    try:
        return policy._prompt_states(prompts), len(forwards)
    finally:
        hook.remove()


def _states_match_computing_alone(prompts: list[list[int]], matches: list) -> None:
    alone = HFPolicy(tiny_model_dir(), prefix_cache_tokens=0)
    for prompt, (reused, entry) in zip(prompts, matches, strict=True):
        assert reused == len(prompt) - 1 and entry is not None
        reference = alone._prompt_states([prompt])[0][1]
        assert reference is not None
        for (keys, values), (ref_keys, ref_values) in zip(entry.states, reference.states, strict=True):
            assert torch.allclose(keys[:, : len(prompt) - 1], ref_keys, atol=1e-4)
            assert torch.allclose(values[:, : len(prompt) - 1], ref_values, atol=1e-4)


def test_fresh_prompts_of_several_apps_take_two_forwards() -> None:
    """One prompt per app first (its system prompt is then cached), then every other prompt's rest."""
    policy = HFPolicy(tiny_model_dir())
    prompts = _app_prompts(policy, apps=3, per_app=3)
    matches, forwards = _prompt_states_counting_forwards(policy, prompts)
    assert forwards == 2
    assert policy.prefix_cache is not None and policy.prefix_cache.reused_tokens >= 6 * 40
    _states_match_computing_alone(prompts, matches)


def test_a_prefill_larger_than_a_chunk_is_split_with_the_same_states(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolgym.policy import prefill

    monkeypatch.setattr(prefill, "PREFILL_CHUNK_TOKENS", 24)
    policy = HFPolicy(tiny_model_dir())
    prompts = _app_prompts(policy, apps=2, per_app=4)
    matches, forwards = _prompt_states_counting_forwards(policy, prompts)
    assert forwards > 2
    _states_match_computing_alone(prompts, matches)
