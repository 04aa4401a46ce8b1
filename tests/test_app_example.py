"""The example app users copy (toolgym.envs.examples.toy): its kit-written families make tasks that replay to
reward 1, are deterministic, and grade a skipped write as a failure."""

from __future__ import annotations

from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.dataset.replay import replay_task
from toolgym.envs import Environment
from toolgym.envs.examples.toy import APP
from toolgym.verify import verify_task


def test_example_tasks_replay_to_reward_one_and_are_deterministic() -> None:
    tasks = generate_app_tasks(APP, BuildConfig(tasks_per_family=6))
    assert {t.family for t in tasks} == {f.name for f in APP.task_families()}
    env = Environment([APP])
    for task in tasks:
        outcome = replay_task(task, env)
        assert outcome.kept and outcome.verdict.reward == 1.0, (task.id, outcome.reason)
    again = generate_app_tasks(APP, BuildConfig(tasks_per_family=6))
    assert [t.model_dump() for t in again] == [t.model_dump() for t in tasks]


def test_a_skipped_write_fails_the_example_write_task() -> None:
    task = next(t for t in generate_app_tasks(APP, BuildConfig(tasks_per_family=3)) if t.family == "finish_note")
    env = Environment([APP])
    env.reset(task.env_variables)
    verdict = verify_task(task, env, task.expected_answer)
    assert verdict.reward == 0.0 and verdict.partial_score < 1.0
