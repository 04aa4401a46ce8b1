"""The recording at the inference boundary, on the default model's own chat template: prompts continue the held
ids token-in/token-out, a rewritten history is a prefix break that starts a new sample, and every request can be
rebuilt from the transcript."""

from __future__ import annotations

from functools import cache

from transformers import AutoTokenizer

from toolgym.agent.samples import build_samples
from toolgym.chat.render import Renderer, load_prompt_style, system_prompt
from toolgym.envs import make_env
from toolgym.harness.recording import Recording
from toolgym.model import DEFAULT_MODEL_DIR
from toolgym.schema import Message, ToolCall, ToolSpec


@cache
def renderer() -> Renderer:
    tokenizer = AutoTokenizer.from_pretrained(str(DEFAULT_MODEL_DIR), local_files_only=True)
    return Renderer(tokenizer, prompt_style=load_prompt_style(DEFAULT_MODEL_DIR))


def _tools() -> list[ToolSpec]:
    return make_env("booking").tool_specs("agent")


def _opening(tools: list[ToolSpec]) -> list[Message]:
    text = system_prompt("You help with bookings.", {"CURRENT_DATE": "2026-06-19"}, tools, "compact")
    return [Message(role="system", content=text), Message(role="user", content="Which cities do you serve?")]


def _sampled(text: str) -> list[int]:
    return renderer().encode(text)


def _echo(reply: Message, call_id: str) -> Message:
    """The reply as a harness sends it back: its own call id, no reasoning, content null."""
    calls = [c.model_copy(update={"id": call_id}) for c in reply.tool_calls or []]
    return Message.from_openai({**reply.to_openai(), "tool_calls": [c.to_openai(call_id) for c in calls]})


def test_an_appending_harness_continues_the_held_ids_and_a_rewrite_starts_a_new_sample() -> None:
    render, tools = renderer(), _tools()
    recording = Recording(render)
    opening = _opening(tools)

    first = recording.prepare(opening, tools)
    assert first.ids == render.prompt_ids(opening, tools) and not first.prefix_break
    # Sampled text the template would not write back the same way (no space after the colon).
    completion = _sampled('<tool_call>\n{"name":"list_cities","arguments":{}}\n</tool_call><|im_end|>')
    reply = Message(role="assistant", content=None, tool_calls=[ToolCall(name="list_cities", id="call_a")])
    recording.add(first, reply, completion_ids=completion, logprobs=[-0.5] * len(completion))

    result = Message(role="tool", content='[{"city": "Austin"}]', tool_call_id="call_9")
    second_messages = [*opening, _echo(reply, "call_9"), result]
    second = recording.prepare(second_messages, tools)
    assert not second.prefix_break
    assert second.ids == [*first.ids, *completion, *render.observation_ids([result], tools)]  # never re-encoded
    assert second.ids != render.prompt_ids(second_messages, tools)  # a re-render would change the sampled tokens
    answer = _sampled("We serve Austin.<|im_end|>")
    recording.add(second, Message(role="assistant", content="We serve Austin."), completion_ids=answer,
                  logprobs=[-0.25] * len(answer))

    compacted = [opening[0], Message(role="user", content="Summary: the user asked about cities. Say goodbye.")]
    third = recording.prepare(compacted, tools)
    assert third.prefix_break and third.ids == render.prompt_ids(compacted, tools)
    goodbye = _sampled("Goodbye.<|im_end|>")
    recording.add(third, Message(role="assistant", content="Goodbye."), completion_ids=goodbye,
                  logprobs=[-1.0] * len(goodbye))

    samples = build_samples(recording.token_turns)
    assert len(samples) == 2 and recording.prefix_breaks == 1
    trained = [i for s in samples for i, m in zip(s.input_ids, s.loss_mask, strict=True) if m]
    assert trained == [*completion, *answer, *goodbye]  # each sampled token once, nothing else
    assert [lp for s in samples for lp, m in zip(s.sampler_logprobs, s.loss_mask, strict=True) if m] == \
        [-0.5] * len(completion) + [-0.25] * len(answer) + [-1.0] * len(goodbye)

    roles = [m.role for m in recording.transcript]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    sent = [opening, second_messages, compacted]
    for call, messages in zip(recording.calls, sent, strict=True):
        assert recording.request_messages(call) == [m.to_openai() for m in messages]
    assert [c.transcript_prefix for c in recording.calls] == [2, 4, None]  # the rewrite keeps its own messages


def test_a_retried_request_reuses_the_prompt_ids_and_other_tools_break_the_prefix() -> None:
    render, tools = renderer(), _tools()
    recording = Recording(render)
    opening = _opening(tools)
    first = recording.prepare(opening, tools)
    text = _sampled("Hello.<|im_end|>")
    recording.add(first, Message(role="assistant", content="Hello."), completion_ids=text, logprobs=[0.0] * len(text))

    retry = recording.prepare(opening, tools)
    assert retry.ids == first.ids and not retry.prefix_break
    recording.add(retry, Message(role="assistant", content="Hello."), completion_ids=text, logprobs=[0.0] * len(text))
    assert [m.role for m in recording.transcript] == ["system", "user", "assistant", "assistant"]

    fewer = recording.prepare(opening, tools[:3])
    assert fewer.prefix_break and fewer.ids == render.prompt_ids(opening, tools[:3])
    assert recording.tool_sets == [tools, tools[:3]]


def test_chat_mode_records_messages_without_ids() -> None:
    tools = _tools()
    recording = Recording(None)
    opening = _opening(tools)
    prompt = recording.prepare(opening, tools)
    assert prompt.ids is None
    call = recording.add(prompt, Message(role="assistant", content="Austin."))
    assert call.token_turn is None and recording.token_turns == []
    assert recording.to_json()["calls"][0]["transcript_prefix"] == 2
