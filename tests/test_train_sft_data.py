"""Assistant-only masks from the REAL Qwen3 template and the tiny template; rollout mode = the episode loop."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from test_agent_support import (
    ScriptedTokenPolicy,
    call_text,
    qwen3_tokenizer,
    tiny_tokenizer,
    toy_env,
    toy_task,
)
from test_train_sft_support import write_jsonl_rows
from toolgym.agent.episode import run_episode
from toolgym.chat.render import Renderer
from toolgym.policy.base import SamplingParams
from toolgym.schema import ToolSpec, TrainingSample
from toolgym.train.sft_data import (
    SFTDataError,
    load_examples,
    messages_to_samples,
    row_samples,
    token_samples_mismatch,
)

TOOLS = [{"type": "function", "function": {
    "name": "add_note", "description": "Add a note.",
    "parameters": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}}]
SYSTEM = "You manage notes for Ana."
USER = "Add a note 'Buy milk', then tell me."
CALL_ARGS = '{"title": "Buy milk"}'
TOOL_RESULT = '{"id": 7, "title": "Buy milk"}'
ANSWER = "Added note 7: Buy milk."


def conversation() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "add_note", "arguments": CALL_ARGS}}]},
        {"role": "tool", "tool_call_id": "c0", "name": "add_note", "content": TOOL_RESULT},
        {"role": "assistant", "content": ANSWER},
    ]


def spans(tokenizer: Any, sample: TrainingSample) -> list[tuple[int, str]]:
    """(mask, text) runs of a sample, decoded with special tokens kept."""
    runs: list[tuple[int, list[int]]] = []
    for token, mask in zip(sample.input_ids, sample.loss_mask, strict=True):
        if runs and runs[-1][0] == mask:
            runs[-1][1].append(token)
        else:
            runs.append((mask, [token]))
    return [(mask, tokenizer.decode(ids, skip_special_tokens=False)) for mask, ids in runs]


def trained_text(tokenizer: Any, sample: TrainingSample) -> list[str]:
    return [text for mask, text in spans(tokenizer, sample) if mask]


def untrained_text(tokenizer: Any, sample: TrainingSample) -> str:
    return "".join(text for mask, text in spans(tokenizer, sample) if not mask)


EXPECTED_CALL = '<tool_call>\n{"name": "add_note", "arguments": {"title": "Buy milk"}}\n</tool_call><|im_end|>'


@pytest.mark.parametrize("template", ["qwen3", "tiny"])
@pytest.mark.parametrize("style", ["full", "compact"])
def test_assistant_content_calls_and_im_end_are_trained_scaffolding_is_not(template: str, style: str) -> None:
    tokenizer = qwen3_tokenizer() if template == "qwen3" else tiny_tokenizer()
    renderer = Renderer(tokenizer, prompt_style=style)  # type: ignore[arg-type]
    [sample] = messages_to_samples(renderer, conversation(), TOOLS)
    assert trained_text(tokenizer, sample) == [EXPECTED_CALL, f"{ANSWER}<|im_end|>"]
    context = untrained_text(tokenizer, sample)
    for scaffold in (f"<|im_start|>system\n{SYSTEM}", f"<|im_start|>user\n{USER}<|im_end|>",
                     f"<tool_response>\n{TOOL_RESULT}\n</tool_response>"):
        assert scaffold in context
    assert context.count("<|im_start|>assistant\n") == 2  # both role headers stay untrained
    if template == "qwen3":
        # Qwen3 with thinking off: the empty think block is part of the generation prompt, never trained.
        assert context.count("<|im_start|>assistant\n<think>\n\n</think>\n\n") == 2
    # Tools reach the template only in the full style (compact prompts list them in the system message).
    assert ('"name": "add_note"' in context.split("<|im_start|>user")[0]) is (style == "full")
    # The whole sample is the template's own text for the conversation, token for token.
    assert sample.sampler_logprobs == [0.0] * len(sample.input_ids)


def test_qwen3_rollout_mode_keeps_one_sample_template_mode_splits_where_history_is_rewritten() -> None:
    tokenizer = qwen3_tokenizer()
    renderer = Renderer(tokenizer, prompt_style="full", enable_thinking=True)
    messages = conversation()
    messages[2]["reasoning_content"] = "I should add it."
    messages[4]["reasoning_content"] = "It worked."
    messages += [{"role": "user", "content": "Now list them."}, {"role": "assistant", "content": "One note."}]
    [rollout] = messages_to_samples(renderer, messages, TOOLS, render_mode="rollout")
    template = messages_to_samples(renderer, messages, TOOLS, render_mode="template")
    assert len(template) == 2  # the new user query drops earlier <think> blocks from the re-rendered history
    thought = "<think>\nI should add it.\n</think>\n\n"
    assert trained_text(tokenizer, rollout)[0] == thought + EXPECTED_CALL
    assert trained_text(tokenizer, template[0]) == [thought + EXPECTED_CALL, f"<think>\nIt worked.\n</think>\n\n{ANSWER}<|im_end|>"]
    last = trained_text(tokenizer, template[1])
    assert last == ["<think>\n\n</think>\n\nOne note.<|im_end|>"]  # thinking on: the (empty) block is generated
    assert "I should add it." not in untrained_text(tokenizer, template[1])
    # Each template-mode sample is exactly the template's render of its history.
    full = renderer.render_text(messages, [ToolSpec.from_openai(t) for t in TOOLS], add_generation_prompt=False)
    assert tokenizer.decode(template[1].input_ids, skip_special_tokens=False) == full.rstrip("\n")


@pytest.mark.parametrize("template", ["qwen3", "tiny"])
def test_rollout_mode_reproduces_the_episode_loops_token_samples(template: str) -> None:
    """Rendering a token-mode episode's messages gives exactly the ids and masks the loop recorded."""
    tokenizer = qwen3_tokenizer() if template == "qwen3" else tiny_tokenizer()
    renderer = Renderer(tokenizer, prompt_style="full")
    script = [call_text("list_my_notes"), call_text("add_note", title="Buy milk", due="tomorrow"), "Added it."]
    policy = ScriptedTokenPolicy(tokenizer, script)
    episode = asyncio.run(run_episode(toy_task(), toy_env(), policy, SamplingParams(max_new_tokens=64),
                                      renderer=renderer))
    assert episode.status == "ok" and len(episode.samples) == 1
    messages = [m.to_openai() for m in episode.messages]
    tools = [t.to_openai() for t in episode.tools]
    [sample] = messages_to_samples(renderer, messages, tools)
    assert sample.input_ids == episode.samples[0].input_ids
    assert sample.loss_mask == episode.samples[0].loss_mask


def test_weight_zero_turns_stay_in_context_untrained() -> None:
    tokenizer = tiny_tokenizer()
    messages = conversation()
    messages[2]["weight"] = 0
    [sample] = messages_to_samples(Renderer(tokenizer), messages, TOOLS)
    assert trained_text(tokenizer, sample) == [f"{ANSWER}<|im_end|>"]
    assert EXPECTED_CALL in untrained_text(tokenizer, sample)


def test_messages_starting_with_an_assistant_turn_or_consecutive_assistants_are_clear_errors() -> None:
    renderer = Renderer(tiny_tokenizer())
    with pytest.raises(SFTDataError, match="no prompt before it"):
        messages_to_samples(renderer, conversation()[2:], TOOLS)
    doubled = [*conversation(), {"role": "assistant", "content": "Anything else?"}]
    with pytest.raises(SFTDataError, match="consecutive assistant messages"):
        messages_to_samples(renderer, doubled, TOOLS)
    assert len(messages_to_samples(renderer, doubled, TOOLS, render_mode="template")) == 1


def test_a_full_style_row_for_a_compact_model_is_refused() -> None:
    renderer = Renderer(tiny_tokenizer(), prompt_style="compact")
    row = {"messages": conversation(), "tools": TOOLS}
    with pytest.raises(SFTDataError, match="does not list add_note"):
        row_samples(row, renderer)
    row["messages"][0]["content"] = SYSTEM + "\nTools:\nadd_note(title: string) - Add a note."
    samples, source = row_samples(row, renderer)
    assert source == "rendered" and len(samples) == 1


def test_token_samples_are_used_when_they_come_from_this_tokenizer() -> None:
    tokenizer = tiny_tokenizer()
    renderer = Renderer(tokenizer)
    [own] = messages_to_samples(renderer, conversation(), TOOLS)
    marked = own.model_copy(update={"sampler_logprobs": [-0.5] * len(own.input_ids)})
    row = {"messages": conversation(), "tools": TOOLS, "token_samples": [marked.model_dump()]}
    samples, source = row_samples(row, renderer)
    assert source == "token_samples" and samples == [marked]
    foreign = marked.model_copy(update={"input_ids": [i + 1 for i in marked.input_ids]})  # another vocabulary
    assert token_samples_mismatch(tokenizer, [foreign], conversation()) is not None
    row["token_samples"] = [foreign.model_dump()]
    samples, source = row_samples(row, renderer)
    assert source == "rendered" and samples[0].input_ids == own.input_ids
    with pytest.raises(SFTDataError, match="token_samples"):
        row_samples(row, renderer, token_samples="always")


def test_load_examples_names_the_file_and_line_of_a_bad_row(tmp_path: Path) -> None:
    good = {"messages": conversation(), "tools": TOOLS, "task_id": "t1"}
    bad = {"messages": conversation()[:2], "tools": TOOLS}
    path = write_jsonl_rows(tmp_path / "rows.jsonl", [good, good, bad])
    with pytest.raises(SFTDataError, match=rf"{path}:3: no assistant message"):
        load_examples(path, Renderer(tiny_tokenizer()))
    results_row = {"episode": {}, "task_id": "t", "sample_index": 0}
    path.write_text(json.dumps(results_row) + "\n")
    with pytest.raises(SFTDataError, match="run `toolgym data convert` first"):
        load_examples(path, Renderer(tiny_tokenizer()))


def test_load_examples_drops_samples_longer_than_max_length(tmp_path: Path) -> None:
    path = write_jsonl_rows(tmp_path / "rows.jsonl", [{"messages": conversation(), "tools": TOOLS, "task_id": "t1"}])
    examples, report = load_examples(path, Renderer(tiny_tokenizer()))
    length = len(examples[0].samples[0].input_ids)
    assert report.samples == 1 and report.trained_tokens == sum(examples[0].samples[0].loss_mask)
    examples, report = load_examples(path, Renderer(tiny_tokenizer()), max_length=length - 1)
    assert examples == [] and report.too_long == 1
