"""Declarative checks on real SQLite: a wrong, an extra and a missing write each fail the right checks.

The task: "add a note 'buy milk' due tomorrow" for ana on 2026-06-15. Checks and weights:
row_exists 2, field_equals(due) 1, diff_only(insert) 1, answer_contains 1 — total 5.
"""

from __future__ import annotations

import pytest

from toolgym.envs import Environment
from toolgym.envs.examples.toy import APP
from toolgym.schema import (
    AnswerContains,
    AnswerEquals,
    DiffOnly,
    ExpectedChange,
    FieldEquals,
    RowAbsent,
    RowExists,
    Task,
    ToolCall,
    ToolCalled,
    ToolNotCalled,
)
from toolgym.verify import evaluate_checks, verify_task

CHECKS = [
    RowExists(table="notes", where={"owner": "ana", "title": "buy milk"}, weight=2, label="note exists"),
    FieldEquals(table="notes", where={"title": "buy milk"}, field="due", value="2026-06-16", label="due tomorrow"),
    DiffOnly(expected=[ExpectedChange(table="notes", op="insert", where={"title": "buy milk"})], label="only the insert"),
    AnswerContains(values=["buy milk"], label="answer names it"),
]


def fresh() -> Environment:
    env = Environment([APP])
    env.reset({"LOGGED_IN_USER": "ana", "CURRENT_DATE": "2026-06-15"})
    return env


def failed(verdict) -> list[str]:  # type: ignore[no-untyped-def]
    return [c.label for c in verdict.checks if not c.passed]


def test_the_right_write_passes_every_check() -> None:
    env = fresh()
    env.call_tool("add_note", {"title": "buy milk", "due": "tomorrow"})
    verdict = evaluate_checks(CHECKS, env, "Added 'buy milk' for tomorrow.")
    assert verdict.error is None
    assert (verdict.reward, verdict.partial_score) == (1.0, 1.0)


def test_a_wrong_write_fails_only_the_field_check() -> None:
    env = fresh()
    env.call_tool("add_note", {"title": "buy milk", "due": "friday"})  # 2026-06-19, not the 16th
    verdict = evaluate_checks(CHECKS, env, "Added buy milk.")
    assert failed(verdict) == ["due tomorrow"]
    assert verdict.reward == 0.0
    assert verdict.partial_score == pytest.approx(4 / 5)
    assert "notes.due = '2026-06-19'; want '2026-06-16'" in verdict.checks[1].detail


def test_an_extra_write_fails_only_the_diff_check() -> None:
    env = fresh()
    env.call_tool("add_note", {"title": "buy milk", "due": "tomorrow"})
    env.call_tool("complete_note", {"note_id": 1})
    verdict = evaluate_checks(CHECKS, env, "Added buy milk.")
    assert failed(verdict) == ["only the insert"]
    assert verdict.partial_score == pytest.approx(4 / 5)
    assert "unexpected: update notes#1 (done)" in verdict.checks[2].detail


def test_a_missing_write_fails_the_row_field_and_diff_checks() -> None:
    env = fresh()
    verdict = evaluate_checks(CHECKS, env, "Added buy milk.")  # claims success, changed nothing
    assert failed(verdict) == ["note exists", "due tomorrow", "only the insert"]
    assert verdict.partial_score == pytest.approx(1 / 5)
    assert "missing: insert notes {'title': 'buy milk'}" in verdict.checks[2].detail


def test_a_wrong_answer_after_the_right_write_fails_only_the_answer() -> None:
    env = fresh()
    env.call_tool("add_note", {"title": "buy milk", "due": "tomorrow"})
    verdict = evaluate_checks(CHECKS, env, "Done!")
    assert failed(verdict) == ["answer names it"]
    assert verdict.partial_score == pytest.approx(4 / 5)


def test_an_answer_with_some_of_the_values_fails_but_earns_their_share() -> None:
    env = fresh()
    env.call_tool("add_note", {"title": "buy milk", "due": "tomorrow"})
    checks = [*CHECKS[:3], AnswerContains(values=["buy milk", "2026-06-16", "ana"], weight=3, label="answer facts")]
    verdict = evaluate_checks(checks, env, "Added 'buy milk' for you, ana.")
    assert failed(verdict) == ["answer facts"] and verdict.reward == 0.0
    assert verdict.checks[-1].credit == pytest.approx(2 / 3)
    assert verdict.partial_score == pytest.approx((4 + 2) / 7)  # 2 of the check's 3 weight units
    assert evaluate_checks(checks, env, "Done.").partial_score == pytest.approx(4 / 7)


def test_diff_only_with_fields_rejects_an_update_of_another_column() -> None:
    env = fresh()
    env.db("current").execute("UPDATE notes SET done = 1, title = 'changed' WHERE id = 1")
    allowed_done = DiffOnly(expected=[ExpectedChange(table="notes", op="update", where={"id": 1}, fields=["done"])])
    allowed_both = DiffOnly(expected=[ExpectedChange(table="notes", op="update", where={"id": 1}, fields=["done", "title"])])
    assert evaluate_checks([allowed_done], env, None).reward == 0.0
    assert evaluate_checks([allowed_both], env, None).reward == 1.0


def test_row_absent_answer_equals_and_tool_checks() -> None:
    env = fresh()
    env.call_tool("complete_note", {"note_id": 3})
    env.call_tool("complete_note", {"note_id": 99})  # fails: not recorded as a successful call
    checks = [
        RowAbsent(table="notes", where={"id": 3, "done": 0}),
        AnswerEquals(value="Note 3 is done"),
        ToolCalled(name="complete_note", arguments={"note_id": 3}),
        ToolCalled(name="complete_note", arguments={"note_id": 99}),
        ToolNotCalled(name="add_note"),
        ToolNotCalled(name="complete_note"),
    ]
    verdict = evaluate_checks(checks, env, "  note 3 is DONE. ")
    assert [c.passed for c in verdict.checks] == [True, True, True, False, True, False]
    assert verdict.partial_score == pytest.approx(4 / 6)


def test_tool_called_does_not_match_a_missing_argument() -> None:
    env = fresh()
    env.call_tool("add_note", {"title": "x"})  # no due
    verdict = evaluate_checks([ToolCalled(name="add_note", arguments={"due": "None"})], env, None)
    assert verdict.reward == 0.0


def test_tool_called_compares_nested_arguments_by_content_not_key_order() -> None:
    from toolgym.envs.environment import ToolCallRecord

    env = fresh()
    sent = {"passengers": [{"last_name": "Kim", "first_name": "Ana"}], "payment": {"id": "c1", "amount": 10}}
    env.calls.append(ToolCallRecord(name="book", arguments=sent, caller="agent", ok=True))
    same = {"payment": {"amount": 10, "id": "c1"}, "passengers": [{"first_name": "Ana", "last_name": "Kim"}]}
    other = {"payment": {"amount": 11, "id": "c1"}, "passengers": [{"first_name": "Ana", "last_name": "Kim"}]}
    checks = [ToolCalled(name="book", arguments=same), ToolCalled(name="book", arguments=other)]
    assert [c.passed for c in evaluate_checks(checks, env, None).checks] == [True, False]


def test_a_check_on_a_missing_table_is_a_verifier_error_not_a_zero() -> None:
    verdict = evaluate_checks([RowExists(table="no_such_table", where={"id": 1})], fresh(), None)
    assert verdict.error is not None and "no_such_table" in verdict.error
    assert not verdict.passed


def test_verify_task_adds_the_python_verifier_as_one_more_check() -> None:
    task = Task(
        id="t1", env="toy", env_version="1.0.0", prompt="add buy milk tomorrow", checks=CHECKS,
        verifier_code=(
            "def validate_task(env, final_answer=None):\n"
            "    row = env.db('current').table('notes').eq('title', 'buy milk').first()\n"
            "    return int(row is not None and row['due'] == '2026-06-16')\n"
        ),
        reference_solution=[ToolCall(name="add_note", arguments={"title": "buy milk", "due": "tomorrow"})],
    )
    env = fresh()
    env.call_tool("add_note", {"title": "buy milk", "due": "friday"})
    verdict = verify_task(task, env, "Added buy milk")
    assert [c.kind for c in verdict.checks][-1] == "python_verifier"
    assert failed(verdict) == ["due tomorrow", "validate_task"]
    assert verdict.partial_score == pytest.approx(4 / 6)


def test_answer_values_match_whole_tokens_only() -> None:
    from toolgym.verify.checks import contains_value

    assert contains_value("there are 13 open issues", "13")
    assert not contains_value("there are 13 open issues", "3")
    assert not contains_value("rated 3.5 stars", "3")
    assert contains_value("The rating is 9.0.", "9.0")
    assert contains_value("confirmation code f3k9q.", "F3K9Q")
    assert contains_value("it costs $120 in total", "$120")
