"""Training samples by extension: masks on sampled ids only; a rewritten history starts a new sample."""

from __future__ import annotations

from test_agent_support import qwen3_tokenizer
from toolgym.agent.samples import build_samples
from toolgym.chat.render import Renderer
from toolgym.schema import Message, TokenTurn, ToolCall


def _turn(prompt: list[int], completion: list[int], first_logprob: float) -> TokenTurn:
    logprobs = [first_logprob - 0.1 * i for i in range(len(completion))]
    return TokenTurn(prompt_ids=prompt, completion_ids=completion, logprobs=logprobs)


def test_one_sample_for_a_chain_of_extensions() -> None:
    turns = [
        _turn([1, 2, 3], [10, 11, 2], -1.0),
        _turn([1, 2, 3, 10, 11, 2, 7, 8], [12, 2], -2.0),
        _turn([1, 2, 3, 10, 11, 2, 7, 8, 12, 2, 9], [13, 14, 2], -3.0),
    ]
    [sample] = build_samples(turns)
    assert sample.input_ids == [1, 2, 3, 10, 11, 2, 7, 8, 12, 2, 9, 13, 14, 2]
    assert sample.loss_mask == [0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1]
    masked = [i for i, m in zip(sample.input_ids, sample.loss_mask, strict=True) if m]
    assert masked == [10, 11, 2, 12, 2, 13, 14, 2]  # the stop token (2) is trained on
    assert [lp for lp, m in zip(sample.sampler_logprobs, sample.loss_mask, strict=True) if m] == [
        lp for t in turns for lp in t.logprobs
    ]
    assert all(lp == 0.0 for lp, m in zip(sample.sampler_logprobs, sample.loss_mask, strict=True) if not m)


def test_a_prompt_that_rewrites_history_starts_a_new_sample() -> None:
    turns = [
        _turn([1, 2, 3], [10, 11, 2], -1.0),
        _turn([1, 2, 3, 99, 2, 7], [12, 2], -2.0),  # turn 1's ids were rewritten (10, 11 → 99)
        _turn([1, 2, 3, 99, 2, 7, 12, 2, 5], [13, 2], -3.0),
    ]
    first, second = build_samples(turns)
    assert first.input_ids == [1, 2, 3, 10, 11, 2] and first.loss_mask == [0, 0, 0, 1, 1, 1]
    assert second.input_ids == [1, 2, 3, 99, 2, 7, 12, 2, 5, 13, 2]
    assert second.loss_mask == [0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1]
    # 99 was never sampled, and no sample trains on it.
    assert all(not m for s in (first, second) for i, m in zip(s.input_ids, s.loss_mask, strict=True) if i == 99)


def test_empty_and_shorter_prompts() -> None:
    assert build_samples([]) == []
    samples = build_samples([_turn([1, 2, 3, 4], [5, 2], -1.0), _turn([1, 2], [6, 2], -1.0)])
    assert [s.input_ids for s in samples] == [[1, 2, 3, 4, 5, 2], [1, 2, 6, 2]]


def test_qwen3_rerender_after_a_new_user_query_drops_think_and_starts_a_new_sample() -> None:
    """What a re-rendering engine would send: the real Qwen3 template drops the earlier <think> block."""
    tokenizer = qwen3_tokenizer()
    renderer = Renderer(tokenizer, prompt_style="full", enable_thinking=True)
    tools = None
    history = [Message(role="system", content="You manage notes."), Message(role="user", content="Add milk.")]
    prompt_1 = renderer.prompt_ids(history, tools)
    sampled_1 = renderer.encode(
        '<think>\nI should add it.\n</think>\n\n<tool_call>\n{"name": "add_note", "arguments": {"title": "milk"}}\n'
        "</tool_call><|im_end|>"
    )
    call = ToolCall(name="add_note", arguments={"title": "milk"}, id="c0")
    history += [
        Message(role="assistant", content="", tool_calls=[call], reasoning_content="I should add it."),
        Message(role="tool", content='{"id": 7}', tool_call_id="c0", name="add_note"),
    ]
    prompt_2 = renderer.prompt_ids(history, tools)  # still inside the same query: <think> kept
    assert prompt_2[: len(prompt_1) + len(sampled_1)] == prompt_1 + sampled_1
    sampled_2 = renderer.encode("<think>\nDone.\n</think>\n\nAdded.<|im_end|>")
    history += [
        Message(role="assistant", content="Added.", reasoning_content="Done."),
        Message(role="user", content="Now list them."),
    ]
    prompt_3 = renderer.prompt_ids(history, tools)  # a new real query: earlier <think> blocks vanish
    rendered = tokenizer.decode(prompt_3)
    assert "I should add it." not in rendered and "Done." not in rendered
    sampled_3 = renderer.encode("Here they are.<|im_end|>")

    turns = [
        TokenTurn(prompt_ids=prompt_1, completion_ids=sampled_1, logprobs=[-0.5] * len(sampled_1)),
        TokenTurn(prompt_ids=prompt_2, completion_ids=sampled_2, logprobs=[-0.6] * len(sampled_2)),
        TokenTurn(prompt_ids=prompt_3, completion_ids=sampled_3, logprobs=[-0.7] * len(sampled_3)),
    ]
    first, second = build_samples(turns)
    assert [i for i, m in zip(first.input_ids, first.loss_mask, strict=True) if m] == sampled_1 + sampled_2
    assert [i for i, m in zip(second.input_ids, second.loss_mask, strict=True) if m] == sampled_3
    assert second.input_ids == prompt_3 + sampled_3
