"""The episode loop on the toy app: token identity, stop reasons, infrastructure errors, user turns."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

from test_agent_support import (
    ScriptedChatPolicy,
    ScriptedTokenPolicy,
    ScriptedUser,
    SlowPolicy,
    call_text,
    qwen3_tokenizer,
    tiny_tokenizer,
    toy_env,
    toy_task,
    user_task,
)
from toolgym.agent.episode import DONE_TOOL, run_episode
from toolgym.agent.limits import EpisodeLimits
from toolgym.chat.render import Renderer
from toolgym.policy.base import PolicyError, SamplingParams
from toolgym.schema import Episode, Message, RowExists, ToolCall

SAMPLING = SamplingParams(temperature=0.0, max_new_tokens=200)


def run(task: Any, policy: Any, renderer: Renderer | None = None, **kwargs: Any) -> Episode:
    env = toy_env()
    try:
        return asyncio.run(run_episode(task, env, policy, kwargs.pop("sampling", SAMPLING), renderer=renderer, **kwargs))
    finally:
        env.close()


def masked_ids(episode: Episode) -> list[int]:
    return [i for s in episode.samples for i, m in zip(s.input_ids, s.loss_mask, strict=True) if m]


MULTI_TURN_SCRIPT = [
    call_text("list_my_notes"),
    call_text("add_note", title="Buy milk", due="tomorrow") + "\n" + call_text("complete_note", note_id=3),
    '<tool_call>\n{"name": "add_note", "arguments": {"title": }}\n</tool_call>',  # malformed
    call_text("no_such_tool", x=1),
    "Done: 'Buy milk' is due 2026-06-20 and note 3 is complete.",
]


def test_token_identity_over_a_multi_turn_episode() -> None:
    tokenizer = tiny_tokenizer()
    policy = ScriptedTokenPolicy(tokenizer, MULTI_TURN_SCRIPT)
    episode = run(toy_task(), policy, Renderer(tokenizer, prompt_style="compact"))

    assert episode.status == "ok" and episode.stop_reason == "answer", episode.error
    assert episode.turns == 5 and len(episode.token_turns) == 5
    assert episode.final_answer == MULTI_TURN_SCRIPT[-1]
    assert episode.format_errors == 1
    assert episode.tool_errors == 1  # the unknown tool
    assert episode.tool_calls_by_tool == {"list_my_notes": 1, "add_note": 1, "complete_note": 1, "no_such_tool": 1}
    assert episode.reward == 1.0 and episode.verdict is not None and episode.verdict.passed

    # The loop only ever extends: one sample, and its masked-in ids are exactly the sampled ids, in order.
    [sample] = episode.samples
    sampled = [i for ids in policy.sampled for i in ids]
    assert masked_ids(episode) == sampled
    assert [lp for lp, m in zip(sample.sampler_logprobs, sample.loss_mask, strict=True) if m] == [
        lp for t in episode.token_turns for lp in t.logprobs
    ]
    assert all(lp == 0.0 for lp, m in zip(sample.sampler_logprobs, sample.loss_mask, strict=True) if not m)
    assert sample.input_ids == episode.token_turns[-1].prompt_ids + episode.token_turns[-1].completion_ids
    for turn, request in zip(episode.token_turns, policy.requests, strict=True):
        assert turn.prompt_ids == request.prompt_ids  # recorded exactly what the policy was sent
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert all(turn.completion_ids[-1] == im_end for turn in episode.token_turns)

    # What the model read back: results with call ids, the unknown-tool error, the format feedback.
    tool_messages = [m for m in episode.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages[:3]] == ["call_0_0", "call_1_0", "call_1_1"]
    assert '"title": "Buy milk", "due": "2026-06-20"' in tool_messages[1].content
    assert "invalid JSON" in tool_messages[3].content and tool_messages[3].tool_call_id is None
    assert tool_messages[4].content.startswith("Error: unknown tool 'no_such_tool'")
    last_prompt = tokenizer.decode(episode.token_turns[-1].prompt_ids)
    assert "Error: unknown tool 'no_such_tool'" in last_prompt and "tool call 1: invalid JSON" in last_prompt


def test_extension_equals_the_full_render_with_the_tiny_template() -> None:
    """Non-thinking template: prompt + completion + observation is exactly the template's full render."""
    tokenizer = tiny_tokenizer()
    renderer = Renderer(tokenizer, prompt_style="full")
    episode = run(toy_task(), ScriptedTokenPolicy(tokenizer, MULTI_TURN_SCRIPT), renderer)
    assert episode.status == "ok", episode.error
    full = renderer.prompt_ids(episode.messages[:-1], episode.tools)
    assert full == episode.token_turns[-1].prompt_ids


def test_qwen3_thinking_turns_stay_in_one_sample_because_history_is_never_rerendered() -> None:
    tokenizer = qwen3_tokenizer()
    renderer = Renderer(tokenizer, prompt_style="full", enable_thinking=True)
    script = [
        "<think>\nFirst add the note.\n</think>\n\n" + call_text("add_note", title="Buy milk", due="tomorrow"),
        "<think>\nIt worked.\n</think>\n\nShall I also set a reminder?",
        "No reminder then. Done.",
    ]
    policy = ScriptedTokenPolicy(tokenizer, script)
    user = ScriptedUser(["No thanks.", "Thanks! ###STOP###"])
    episode = run(user_task(), policy, renderer, user_simulator=user)
    assert episode.status == "ok" and episode.stop_reason == "user_stop", episode.error
    assert episode.user_termination == "###STOP###" and episode.user_simulator == "scripted-user"
    assert episode.messages[2].reasoning_content == "First add the note."
    assert len(episode.samples) == 1
    assert masked_ids(episode) == [i for ids in policy.sampled for i in ids]
    # The Qwen3 template's own re-render would have dropped the <think> blocks of the earlier turns.
    rerendered = renderer.prompt_ids(episode.messages[:-2], episode.tools)
    assert rerendered != episode.token_turns[-1].prompt_ids
    assert "First add the note." in tokenizer.decode(episode.token_turns[-1].prompt_ids)
    assert "First add the note." not in tokenizer.decode(rerendered)


def test_user_simulator_turns() -> None:
    tokenizer = tiny_tokenizer()
    policy = ScriptedTokenPolicy(tokenizer, ["What should the note say?", call_text("add_note", title="Buy milk", due="tomorrow"), "Added."])
    user = ScriptedUser(["'Buy milk', due tomorrow.", "###TRANSFER### I want a human."])
    episode = run(user_task(), policy, Renderer(tokenizer, "compact"), user_simulator=user)
    assert (episode.status, episode.stop_reason) == ("ok", "user_transfer")
    assert episode.final_answer == "Added."
    assert [m.role for m in episode.messages] == ["system", "user", "assistant", "user", "assistant", "tool", "assistant", "user"]
    assert episode.messages[-1].content == "I want a human."
    assert user.histories[0][-1].content == "What should the note say?"
    assert episode.reward == 1.0
    prompt_2 = tokenizer.decode(episode.token_turns[1].prompt_ids)
    assert prompt_2.endswith("<|im_start|>user\n'Buy milk', due tomorrow.<|im_end|>\n<|im_start|>assistant\n")
    assert masked_ids(episode) == [i for ids in policy.sampled for i in ids]


def test_out_of_scope_user_ends_the_episode() -> None:
    tokenizer = tiny_tokenizer()
    user = ScriptedUser(["###OUT-OF-SCOPE###"])
    episode = run(user_task(), ScriptedTokenPolicy(tokenizer, ["Hello! What do you need?"]), user_simulator=user)
    assert episode.stop_reason == "user_out_of_scope" and episode.status == "ok"
    assert episode.messages[-1].role == "assistant"  # an empty reply is not added


def test_tool_that_crashes_is_an_infrastructure_error() -> None:
    tokenizer = tiny_tokenizer()
    episode = run(toy_task(), ScriptedTokenPolicy(tokenizer, [call_text("crash"), "unreachable"]))
    assert episode.status == "error" and episode.stop_reason == "error"
    assert episode.error is not None and "ZeroDivisionError" in episode.error and "crash" in episode.error
    assert episode.verdict is None and episode.reward == 0.0 and not episode.succeeded
    assert episode.tool_calls_by_tool == {"crash": 1}
    assert len(episode.token_turns) == 1 and len(episode.samples) == 1


def test_policy_errors_are_infrastructure_errors() -> None:
    tokenizer = tiny_tokenizer()
    episode = run(toy_task(), ScriptedTokenPolicy(tokenizer, [call_text("list_my_notes"), PolicyError("server died")]))
    assert (episode.status, episode.stop_reason) == ("error", "error")
    assert episode.error == "policy error: PolicyError: server died"
    assert episode.verdict is None and episode.turns == 1

    crashed = run(toy_task(), ScriptedTokenPolicy(tokenizer, [KeyError("bug in a policy")]))
    assert crashed.status == "error" and "KeyError" in (crashed.error or "")


def test_verifier_error_is_an_infrastructure_error_not_a_zero() -> None:
    tokenizer = tiny_tokenizer()
    task = toy_task(checks=[RowExists(table="no_such_table", where={"x": 1})])
    episode = run(task, ScriptedTokenPolicy(tokenizer, ["Nothing to do."]))
    assert episode.status == "error" and episode.stop_reason == "answer"
    assert episode.error is not None and "no_such_table" in episode.error
    assert episode.verdict is not None and episode.verdict.error == episode.error
    assert episode.reward == 0.0 and not episode.succeeded


def test_max_turns() -> None:
    tokenizer = tiny_tokenizer()
    policy = ScriptedTokenPolicy(tokenizer, [call_text("list_my_notes")] * 3)
    episode = run(toy_task(), policy, limits=EpisodeLimits(max_turns=3))
    assert (episode.status, episode.stop_reason) == ("truncated", "max_turns")
    assert episode.turns == 3 and episode.tool_calls_by_tool == {"list_my_notes": 3}
    assert episode.verdict is not None and episode.verdict.error is None and episode.reward == 0.0
    assert episode.messages[-1].role == "tool"


def test_context_budget_stops_before_a_prompt_would_not_fit() -> None:
    tokenizer = tiny_tokenizer()
    renderer = Renderer(tokenizer, prompt_style="compact")
    first_prompt = len(renderer.prompt_ids(renderer.initial_messages(toy_task(), toy_env().tool_specs(), "You manage notes."), toy_env().tool_specs()))
    budget = first_prompt + 150  # room for turn 1, not for the notes list and a second turn
    policy = ScriptedTokenPolicy(tokenizer, [call_text("list_my_notes")] * 5)
    episode = run(toy_task(), policy, renderer, limits=EpisodeLimits(max_context_tokens=budget))
    assert (episode.status, episode.stop_reason) == ("truncated", "context")
    assert episode.turns >= 1
    for turn in episode.token_turns:
        assert len(turn.prompt_ids) + len(turn.completion_ids) <= budget
    for request in policy.requests:
        assert len(request.prompt_ids or []) + request.sampling.max_new_tokens <= budget


def test_a_turn_cut_by_the_context_budget_is_context_not_max_tokens() -> None:
    tokenizer = tiny_tokenizer()
    renderer = Renderer(tokenizer, prompt_style="compact")
    tools = toy_env().tool_specs()
    first_prompt = len(renderer.prompt_ids(renderer.initial_messages(toy_task(), tools, "You manage notes."), tools))
    long_answer = "This answer goes on and on " * 20
    episode = run(toy_task(), ScriptedTokenPolicy(tokenizer, [long_answer]), renderer,
                  limits=EpisodeLimits(max_context_tokens=first_prompt + 10))
    assert (episode.status, episode.stop_reason) == ("truncated", "context")
    assert len(episode.token_turns[0].completion_ids) == 10


def test_max_tokens_when_a_turn_is_cut_without_a_call() -> None:
    tokenizer = tiny_tokenizer()
    episode = run(toy_task(), ScriptedTokenPolicy(tokenizer, [("I am thinking about what to", "length")]))
    assert (episode.status, episode.stop_reason) == ("truncated", "max_tokens")
    assert episode.final_answer is None


def test_a_cut_turn_with_a_complete_call_goes_on_and_is_closed_outside_the_mask() -> None:
    tokenizer = tiny_tokenizer()
    cut = call_text("add_note", title="Buy milk", due="tomorrow")  # e.g. stopped on "</tool_call>"
    policy = ScriptedTokenPolicy(tokenizer, [(cut, "length"), "Added."])
    renderer = Renderer(tokenizer, prompt_style="compact")
    episode = run(toy_task(), policy, renderer)
    assert episode.stop_reason == "answer" and episode.reward == 1.0
    first, second = episode.token_turns
    closed = first.prompt_ids + first.completion_ids + renderer.turn_close_ids
    assert second.prompt_ids[: len(closed)] == closed
    assert masked_ids(episode) == [i for ids in policy.sampled for i in ids]  # <|im_end|> added by the loop is not trained


def test_timeout() -> None:
    tokenizer = tiny_tokenizer()
    episode = run(toy_task(), SlowPolicy(tokenizer), limits=EpisodeLimits(timeout_s=0.05))
    assert (episode.status, episode.stop_reason) == ("truncated", "timeout")
    assert episode.verdict is not None and episode.reward == 0.0


def test_timeout_during_a_user_reply() -> None:
    class SlowUser(ScriptedUser):
        async def respond(self, history: list[Message]) -> tuple[str, Any]:
            await asyncio.sleep(30)
            return "late", None

    tokenizer = tiny_tokenizer()
    episode = run(user_task(), ScriptedTokenPolicy(tokenizer, ["Hello?"]), user_simulator=SlowUser([]),
                  limits=EpisodeLimits(timeout_s=0.05))
    assert (episode.status, episode.stop_reason) == ("truncated", "timeout")


def test_done_tool_ends_with_its_answer() -> None:
    tokenizer = tiny_tokenizer()
    script = [
        call_text("add_note", title="Buy milk", due="tomorrow") + "\n" + call_text("done", answer="Added it."),
        "unreachable",
    ]
    renderer = Renderer(tokenizer, prompt_style="compact")
    policy = ScriptedTokenPolicy(tokenizer, script)
    episode = run(toy_task(), policy, renderer, limits=EpisodeLimits(done_tool=True))
    assert (episode.status, episode.stop_reason) == ("ok", "done_tool")
    assert episode.final_answer == "Added it." and episode.reward == 1.0
    assert DONE_TOOL in episode.tools
    assert "done(answer: string)" in tokenizer.decode(policy.requests[0].prompt_ids)
    assert episode.tool_calls_by_tool == {"add_note": 1, "done": 1}


def test_chat_mode_uses_the_policy_message() -> None:
    policy = ScriptedChatPolicy(
        [
            Message(role="assistant", content="", tool_calls=[ToolCall(name="add_note", arguments={"title": "Buy milk", "due": "tomorrow"})]),
            Message(role="assistant", content='<tool_call>{"name": "list_my_notes", "arguments": []}</tool_call>'),
            Message(role="assistant", content="Added 'Buy milk'."),
        ]
    )
    episode = run(toy_task(), policy)
    assert (episode.status, episode.stop_reason) == ("ok", "answer"), episode.error
    assert episode.reward == 1.0 and episode.final_answer == "Added 'Buy milk'."
    assert episode.token_turns == [] and episode.samples == []
    assert episode.format_errors == 1
    # Chat mode sends format feedback as a user message: OpenAI servers reject orphan tool messages.
    assert episode.messages[-2].role == "user" and "must be a JSON object" in (episode.messages[-2].content or "")
    request = policy.requests[1]
    assert request.prompt_ids is None and request.tools is not None and len(request.tools) == 4
    assert request.messages is not None and request.messages[-1]["role"] == "tool"
    assert request.messages[-1]["tool_call_id"] == "call_0_0"


def test_episode_fields_are_filled() -> None:
    tokenizer = tiny_tokenizer()
    sampling = SamplingParams(temperature=0.7, max_new_tokens=64, seed=3)
    episode = run(toy_task(), ScriptedTokenPolicy(tokenizer, [call_text("list_my_notes"), "You have 3 notes."]),
                  sampling=sampling, sample_index=2)
    assert episode.task_id == "toy/add_note/0000" and episode.env == "toy" and episode.split == "train"
    assert episode.sample_index == 2 and episode.policy == "scripted-token"
    assert episode.sampling == sampling.to_dict()
    assert [t.name for t in episode.tools] == ["list_my_notes", "add_note", "complete_note", "crash"]
    assert episode.timings.total_s >= episode.timings.generation_s + episode.timings.env_s + episode.timings.verifier_s
    assert episode.timings.verifier_s > 0
    assert episode.verdict is not None and episode.reward == 0.0 and episode.status == "ok"
    assert Episode.model_validate_json(episode.model_dump_json()) == episode


def test_the_model_context_caps_the_budget() -> None:
    tokenizer = copy.deepcopy(tiny_tokenizer())
    renderer = Renderer(tokenizer, prompt_style="compact")
    tools = toy_env().tool_specs()
    first_prompt = len(renderer.prompt_ids(renderer.initial_messages(toy_task(), tools, "You manage notes."), tools))
    tokenizer.model_max_length = first_prompt + 40
    policy = ScriptedTokenPolicy(tokenizer, [call_text("list_my_notes")] * 3)
    episode = run(toy_task(), policy, renderer, limits=EpisodeLimits(max_context_tokens=100_000))
    assert (episode.status, episode.stop_reason) == ("truncated", "context")
    assert policy.requests[0].sampling.max_new_tokens == 40


def test_default_renderer_follows_the_model_folder(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from toolgym.model.tiny import init_tiny

    out = init_tiny(tmp_path / "tiny", tokenizer=tiny_tokenizer(), hidden_size=32, layers=1, heads=2, kv_heads=1)
    tokenizer = AutoTokenizer.from_pretrained(out, local_files_only=True)
    policy = ScriptedTokenPolicy(tokenizer, ["Nothing to do."])
    episode = run(toy_task(), policy)  # no renderer: prompt style from the folder's toolgym.json
    first_prompt = tokenizer.decode(policy.requests[0].prompt_ids)
    assert "Call a tool with:" in first_prompt and "<tools>" not in first_prompt
    assert episode.stop_reason == "answer"


def test_max_format_errors_ends_the_episode_at_the_malformed_call() -> None:
    tokenizer = tiny_tokenizer()
    policy = ScriptedTokenPolicy(tokenizer, MULTI_TURN_SCRIPT)
    episode = run(toy_task(), policy, Renderer(tokenizer, prompt_style="compact"),
                  limits=EpisodeLimits(max_format_errors=1))
    assert episode.status == "truncated" and episode.stop_reason == "format_errors"
    assert episode.turns == 3 and episode.format_errors == 1  # the third turn was the malformed call
    assert episode.verdict is not None and episode.reward == 1.0  # verified on its state like any episode
    assert episode.tool_calls_by_tool == {"list_my_notes": 1, "add_note": 1, "complete_note": 1}
    assert masked_ids(episode) == [i for ids in policy.sampled for i in ids]
    # without the limit the same script runs on past that call
    assert run(toy_task(), ScriptedTokenPolicy(tokenizer, MULTI_TURN_SCRIPT), Renderer(tokenizer, prompt_style="compact"),
               limits=EpisodeLimits(max_format_errors=2)).stop_reason == "answer"
