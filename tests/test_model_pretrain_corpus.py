"""The synthetic pre-training corpus: deterministic, generic (no suite task, prompt or tool), well marked."""

from __future__ import annotations

import json

import pytest

from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs import app_names, get_app
from toolgym.model.pretrain.corpus import SKILLS, generate_corpus, generate_episode
from toolgym.model.pretrain.render import episode_text_plain

CORPUS_SAMPLE = 3000


def _suite_tasks() -> list:
    tasks = []
    for name in app_names():
        tasks.extend(generate_app_tasks(get_app(name), BuildConfig(tasks_per_family=40)))
    return tasks


@pytest.fixture(scope="module")
def corpus() -> list:
    return list(generate_corpus(seed=0, count=CORPUS_SAMPLE))


def test_same_seed_and_index_give_the_same_episode() -> None:
    first = generate_episode(3, 41)
    again = generate_episode(3, 41)
    assert first.messages == again.messages and first.tools == again.tools and first.policy == again.policy
    assert generate_episode(4, 41).messages != first.messages


def test_every_skill_is_drawn(corpus: list) -> None:
    drawn = {e.skill.split("_")[0] for e in corpus}
    assert {name.split("_")[0] for name in SKILLS} <= drawn


def test_corpus_never_emits_a_dataset_task_prompt(corpus: list) -> None:
    tasks = _suite_tasks()
    assert len(tasks) > 100, "the apps produced no tasks to compare against"
    prompts = {t.prompt.strip() for t in tasks}
    for episode in corpus:
        text = episode_text_plain(episode)
        for user_prompt in episode.user_prompts():
            assert user_prompt.strip() not in prompts
        # no task prompt appears anywhere in the rendered episode either
        assert not any(p in text for p in prompts if len(p) > 30)


def test_corpus_tools_are_not_the_suites_tools(corpus: list) -> None:
    suite_tools = {t.name for name in app_names() for t in get_app(name).tools}
    corpus_tools = {t.name for e in corpus for t in e.tools}
    assert not suite_tools & corpus_tools


def test_tool_calls_use_only_listed_tools_and_arguments(corpus: list) -> None:
    for episode in corpus:
        tools = {t.name: t for t in episode.tools}
        for message in episode.messages:
            for call in message.tool_calls or []:
                assert call.name in tools, f"{episode.skill}: {call.name} is not offered"
                properties = tools[call.name].parameters.get("properties", {})
                assert set(call.arguments) <= set(properties), f"{episode.skill}: {call.arguments}"
                required = tools[call.name].parameters.get("required", [])
                assert set(required) <= set(call.arguments), f"{episode.skill}: {call.name} misses {required}"


def test_every_episode_ends_with_an_answer_after_a_tool_result(corpus: list) -> None:
    for episode in corpus:
        last = episode.messages[-1]
        assert last.role == "assistant" and not last.tool_calls and last.content
        # echo repeats the request's text: the one skill with no tool between request and answer
        assert episode.messages[-2].role == ("user" if episode.skill == "echo" else "tool"), episode.skill
        for message in episode.messages:
            if message.role == "tool":
                json.loads(message.content) if not message.content.startswith("Error:") else None


def test_marks_point_at_values_the_assistant_writes(corpus: list) -> None:
    for episode in corpus[:500]:
        for mark in episode.marks:
            message = episode.messages[mark.message]
            assert message.role == "assistant"
            if mark.argument is not None:
                call = message.tool_calls[0]
                value = call.arguments[mark.argument]
                if isinstance(value, list):  # transcribe: one mark per copied item of an array argument
                    assert mark.value in [str(item) for item in value]
                else:
                    assert (json.dumps(value) if isinstance(value, bool) else str(value)) == mark.value
            else:
                assert mark.value in (message.content or "")
