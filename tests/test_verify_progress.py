"""Per-turn progress on real episodes: the toy app's checks scored on the live state after every agent turn."""

from __future__ import annotations

import asyncio
import textwrap

from test_agent_support import call_text
from test_credit_support import UNDO_APP, complete_task, play
from toolgym.envs import Environment
from toolgym.rollout.results import episode_to_row, row_to_episode
from toolgym.schema import AnswerContains, DiffOnly, Episode, FieldEquals, ToolNotCalled
from toolgym.verify.progress import state_verdict


def flips(episode: Episode) -> list[tuple[int, str, float, float]]:
    return [(f.turn, f.label, f.before, f.after) for f in episode.check_flips]


def test_progress_is_the_share_of_checks_holding_after_each_turn_and_ends_at_the_partial_score() -> None:
    episode = play(complete_task(), [call_text("list_my_notes"), call_text("complete_note", note_id=1),
                                     "Note 1 is done."])
    assert episode.status == "ok" and episode.reward == 1.0, episode.error
    # seed: nothing holds; the read changes nothing; the write earns field (2) + diff (1) of 4; the answer the rest
    assert episode.progress == [0.0, 0.0, 0.75, 1.0]
    assert episode.progress[-1] == episode.partial_score
    assert flips(episode) == [(2, "field_equals", 0.0, 1.0), (2, "diff_only", 0.0, 1.0),
                              (3, "answer_contains", 0.0, 1.0)]
    row = episode_to_row(episode)  # the row carries it, and reads back whole
    assert row["progress"] == [0.0, 0.0, 0.75, 1.0] and len(row["check_flips"]) == 3
    assert row_to_episode(row).progress == episode.progress


def test_a_write_undone_is_progress_lost() -> None:
    episode = play(complete_task(), [call_text("complete_note", note_id=1), call_text("reopen_note", note_id=1),
                                     "Note 1 is done."])
    assert episode.status == "ok" and episode.reward == 0.0, episode.error
    # the write earns 3/4, its undo takes all of it back (the net diff is empty again), the answer earns 1/4
    assert episode.progress == [0.0, 0.75, 0.0, 0.25]
    assert episode.partial_score == 0.25
    assert flips(episode) == [(1, "field_equals", 0.0, 1.0), (1, "diff_only", 0.0, 1.0),
                              (2, "field_equals", 1.0, 0.0), (2, "diff_only", 1.0, 0.0),
                              (3, "answer_contains", 0.0, 1.0)]


def test_the_seed_state_is_scored_and_a_turn_without_a_tool_call_changes_nothing() -> None:
    # a read-only task: 'nothing changed' and 'no write tool called' already hold on the seed
    task = complete_task(checks=[DiffOnly(expected=[]), ToolNotCalled(name="complete_note"),
                                 AnswerContains(values=["milk"], weight=2.0)])
    malformed = '<tool_call>\n{"name": "add_note", "arguments": {"title": }}\n</tool_call>'
    episode = play(task, [malformed, call_text("complete_note", note_id=1), "I bought milk."])
    assert episode.status == "ok" and episode.format_errors == 1, episode.error
    # seed 2/4; the malformed turn (no call ran) changes nothing; the write breaks both state checks; answer 2/4
    assert episode.progress == [0.5, 0.5, 0.0, 0.5]
    assert [f.turn for f in episode.check_flips] == [2, 2, 3]


def test_the_last_turn_is_scored_by_the_verdict_even_when_the_loop_stopped_before_another_turn() -> None:
    async def stall() -> None:
        await asyncio.sleep(30)

    # the state after turn 2 is scored at the top of turn 3, whose generation then runs out of wall clock:
    # two turns, so three progress values, the last the verdict's (which also judges the unanswered answer)
    episode = play(complete_task(), [call_text("list_my_notes"), call_text("complete_note", note_id=1), stall],
                   timeout_s=3.0)
    assert episode.status == "truncated" and episode.stop_reason == "timeout"
    assert episode.turns == 2 and episode.progress == [0.0, 0.0, 0.75]
    assert episode.progress[-1] == episode.partial_score


def test_no_progress_without_turn_progress() -> None:
    episode = play(complete_task(), [call_text("complete_note", note_id=1), "Note 1 is done."], turn_progress=False)
    assert episode.reward == 1.0 and episode.progress is None and episode.check_flips == []
    assert episode_to_row(episode)["progress"] is None


def test_a_check_that_cannot_be_scored_mid_episode_makes_the_episode_an_infrastructure_error() -> None:
    task = complete_task(checks=[FieldEquals(table="no_such_table", where={"id": 1}, field="done", value=1)])
    episode = play(task, [call_text("list_my_notes"), "Done."])
    assert episode.status == "error" and episode.reward == 0.0
    assert episode.error is not None and episode.error.startswith("verifier error: progress after turn 0")
    assert "no_such_table" in episode.error


def test_a_python_verifier_runs_every_turn_only_where_the_task_opts_in() -> None:
    code = textwrap.dedent("""
        def validate_task(env, final_answer=None):
            row = env.db("current").table("notes").eq("id", 1).first()
            return 1 if row is not None and row["done"] == 1 else 0
    """)
    script = [call_text("complete_note", note_id=1), call_text("list_my_notes"), "Note 1 is done."]
    judged_at_end = play(complete_task(verifier_code=code), script)
    each_turn = play(complete_task(verifier_code=code, metadata={"progress_verifier": True}), list(script))
    for episode in (judged_at_end, each_turn):
        assert episode.status == "ok" and episode.reward == 1.0, episode.error
    # weights 2 + 1 + 1 + the verifier's 1 = 5: the write earns 3 (and 4 with the verifier run each turn)
    assert judged_at_end.progress == [0.0, 0.6, 0.6, 1.0]
    assert each_turn.progress == [0.0, 0.8, 0.8, 1.0]
    assert "validate_task" in [f.label for f in each_turn.check_flips if f.turn == 1]
    assert [f.label for f in judged_at_end.check_flips if f.turn == 3] == ["answer_contains", "validate_task"]


def test_the_seed_is_never_written_by_scoring() -> None:
    env = Environment([UNDO_APP])
    try:
        env.reset({"LOGGED_IN_USER": "ana", "CURRENT_DATE": "2026-06-15"})
        before = env.diff()
        verdict = state_verdict(complete_task(), env)
        assert env.diff() == before == [] and verdict.partial_score == 0.0
    finally:
        env.close()
