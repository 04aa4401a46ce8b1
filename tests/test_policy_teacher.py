"""The imperfect teacher: configured mistake rates, each mistake's intended failure, rows that record it."""

from __future__ import annotations

import asyncio
import collections
import functools
import json
from pathlib import Path

import pytest

from toolgym.agent.episode import run_episode
from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs import get_app, make_env
from toolgym.policy.base import SamplingParams
from toolgym.policy.spec import make_policy
from toolgym.policy.teacher import ImperfectTeacherPolicy, TeacherMistakes, mistake_options
from toolgym.rollout.results import episode_to_row
from toolgym.schema import Episode, Task

SAMPLING = SamplingParams(temperature=0.0, max_new_tokens=64)


@functools.cache
def _family(app: str, family: str, count: int = 30) -> tuple[Task, ...]:
    tasks = generate_app_tasks(get_app(app), BuildConfig(tasks_per_family=count, seed=7))
    return tuple(t for t in tasks if t.family == family)


def _play(policy: ImperfectTeacherPolicy, task: Task, sample_index: int = 0) -> Episode:
    env = make_env(task.env)
    try:
        return asyncio.run(run_episode(task, env, policy, SAMPLING, sample_index=sample_index))
    finally:
        env.close()


def _teacher(**rates: float) -> ImperfectTeacherPolicy:
    policy = make_policy("imperfect:" + ",".join(f"{k}={v}" for k, v in rates.items()))
    assert isinstance(policy, ImperfectTeacherPolicy)
    return policy


def test_drawn_mistake_rates_match_the_configured_ones() -> None:
    tasks = _family("code_host", "assign_to_me")
    rates = {"premature_done": 0.2, "skipped_lookup": 0.15, "wrong_format": 0.1}
    teacher = _teacher(**rates)
    drawn = collections.Counter()
    episodes = 0
    for task in tasks:
        for sample_index in range(12):
            mistake = teacher.draw(task, sample_index)
            drawn[mistake.kind if mistake else None] += 1
            episodes += 1
    assert episodes >= 300
    for kind, rate in rates.items():
        assert abs(drawn[kind] / episodes - rate) < 0.06, (kind, drawn[kind], episodes)
    assert drawn["wrong_choice"] == 0
    assert abs(drawn[None] / episodes - 0.55) < 0.07


def test_draws_are_seeded_per_episode() -> None:
    task = _family("code_host", "assign_to_me")[0]
    first = [_teacher(premature_done=0.5).draw(task, i) for i in range(20)]
    again = [_teacher(premature_done=0.5).draw(task, i) for i in range(20)]
    assert first == again
    other_seed = make_policy("imperfect:premature_done=0.5,seed=9")
    assert [other_seed.draw(task, i) for i in range(20)] != first  # type: ignore[attr-defined]


def _episode_with(kind: str, app: str, family: str) -> tuple[Task, Episode]:
    teacher = _teacher(**{kind: 1.0})
    for task in _family(app, family):
        if mistake_options(task)[kind]:
            return task, _play(teacher, task)
    raise AssertionError(f"no task of {app}/{family} admits {kind}")


def _calls(episode: Episode) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for m in episode.messages if m.role == "assistant" for c in m.tool_calls or []]


def test_premature_done_skips_the_final_write_and_fails() -> None:
    task, episode = _episode_with("premature_done", "code_host", "close_with_comment")
    assert episode.status == "ok" and episode.teacher_mistake == "premature_done"
    assert episode.reward == 0.0
    names = [name for name, _ in _calls(episode)]
    assert names == [c.name for c in task.reference_solution[:-1]]
    assert episode.final_answer == task.expected_answer  # it claims to be done


def test_wrong_format_writes_an_argument_in_another_format_and_fails() -> None:
    task, episode = _episode_with("wrong_format", "code_host", "comment_on_issue")
    assert episode.teacher_mistake == "wrong_format" and episode.reward == 0.0
    (name, arguments), = _calls(episode)
    reference = task.reference_solution[0]
    assert name == reference.name
    changed = {k for k in arguments if arguments[k] != reference.arguments[k]}
    assert len(changed) == 1
    key = changed.pop()
    assert str(arguments[key]).lstrip("#") == str(reference.arguments[key]) or "/" in str(arguments[key])
    assert episode.tool_errors >= 1 or episode.verdict is not None


def test_skipped_lookup_guesses_the_argument_and_fails() -> None:
    task, episode = _episode_with("skipped_lookup", "code_host", "assign_to_me")
    assert episode.teacher_mistake == "skipped_lookup" and episode.reward == 0.0
    names = [name for name, _ in _calls(episode)]
    assert names == [c.name for c in task.reference_solution[1:]]
    assert _calls(episode)[0][1] != task.reference_solution[1].arguments


def test_wrong_choice_picks_another_candidate_and_fails() -> None:
    task, episode = _episode_with("wrong_choice", "code_host", "assign_to_me")
    assert episode.teacher_mistake == "wrong_choice" and episode.reward == 0.0
    calls = _calls(episode)
    assert [n for n, _ in calls] == [c.name for c in task.reference_solution]
    assert calls[-1][1] != task.reference_solution[-1].arguments


def test_without_a_mistake_the_teacher_is_the_oracle() -> None:
    teacher = _teacher(premature_done=0.0)
    for task in _family("code_host", "assign_to_me")[:5]:
        episode = _play(teacher, task)
        assert episode.reward == 1.0 and episode.teacher_mistake is None


def test_rows_record_the_mistake() -> None:
    _, episode = _episode_with("premature_done", "mail", "send_to_contact")
    row = episode_to_row(episode)
    assert row["episode"]["teacher_mistake"] == "premature_done"


@pytest.mark.parametrize("spec, message", [
    ("imperfect:premature_done", "KIND=RATE"),
    ("imperfect:lazy=0.2", "unknown mistake 'lazy'"),
    ("imperfect:premature_done=0.7,wrong_choice=0.6", "sum to 1.3"),
    ("imperfect:premature_done=high", "not a number"),
    ("imperfect:wrong_format=1.5", "not a probability"),
])
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_policy(spec)


def test_rates_config_validates() -> None:
    assert TeacherMistakes(rates={"premature_done": 0.3}).rates["premature_done"] == 0.3
    with pytest.raises(ValueError):
        TeacherMistakes.model_validate({"rates": {"nonsense": 0.1}})


def test_the_teacher_pass_rate_and_mistake_mix_reach_the_summary_and_report(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toolgym.cli.main import app
    from toolgym.eval.report import build_report
    from toolgym.pipeline.summary import teacher_numbers
    from toolgym.schema.jsonl import write_jsonl

    write_jsonl(tmp_path / "tasks.jsonl", list(_family("code_host", "close_with_comment")[:8]))
    run = tmp_path / "teacher" / "rollout"
    result = CliRunner().invoke(app, ["rollout", "--tasks", str(tmp_path / "tasks.jsonl"), "--policy",
                                      "imperfect:premature_done=0.5,seed=1", "--samples-per-task", "2",
                                      "--out", str(run), "--no-progress"])
    assert result.exit_code == 0, result.output
    numbers = teacher_numbers(run / "results.jsonl")
    assert numbers is not None and numbers["scored"] == 16
    mix = numbers["mistakes"]
    assert set(mix) == {"none", "premature_done"} and mix["none"]["episodes"] + mix["premature_done"]["episodes"] == 16
    assert mix["premature_done"]["successes"] == 0 and mix["none"]["successes"] == mix["none"]["episodes"]
    assert numbers["successes"] == mix["none"]["episodes"]
    (tmp_path / "summary.json").write_text(json.dumps({"teacher": numbers}))
    cards = {label: (value, sub) for label, value, sub in build_report(tmp_path).cards}
    value, sub = cards["Teacher · passes"]
    assert value == f"{numbers['successes']}/16" and f"premature_done {mix['premature_done']['episodes']}" in sub
