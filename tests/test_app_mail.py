"""The mail app: seed, tool rules, context, and that its checks grade right and wrong work correctly."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import pytest

from app_helpers import assert_reference_writes_match_the_shape, generated_tasks
from toolgym.envs import Environment, make_env
from toolgym.envs.apps.mail import APP
from toolgym.envs.apps.mail.content import AUTOMATED, GENERIC_REPLIES, SPAM, TOPICS
from toolgym.envs.people import population
from toolgym.schema import Task
from toolgym.verify import verify_task

WRITE_TOOLS = {"send_message", "reply_to_message", "forward_message", "move_message", "mark_as_read",
               "mark_as_unread", "delete_message", "create_folder", "respond_to_invite", "create_event",
               "cancel_event"}

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return list(generated_tasks("mail"))


@pytest.fixture()
def env() -> Environment:
    return make_env("mail")


def seed() -> sqlite3.Connection:
    return APP.snapshot().reader()


def owner_env(username: str, today: str) -> dict[str, str]:
    name = seed().execute("SELECT name FROM users WHERE username=?", (username,)).fetchone()[0]
    return {"CURRENT_DATE": today, "LOGGED_IN_USER": username, "LOGGED_IN_NAME": name}


def mailbox_owners() -> list[str]:
    return [r[0] for r in seed().execute("SELECT username FROM users WHERE has_mailbox=1 ORDER BY username")]


# -- app surface ---------------------------------------------------------------------------------

def test_seed_is_realistic_and_moderate() -> None:
    conn = seed()
    per_owner = conn.execute("SELECT owner, COUNT(*) FROM messages GROUP BY owner ORDER BY owner").fetchall()
    assert len(per_owner) == 20 and all(20 <= n <= 60 for _, n in per_owner)
    dates = conn.execute("SELECT MIN(sent_at), MAX(sent_at) FROM messages").fetchone()
    assert dates[0] >= "2026-03" and dates[1] < "2026-10"
    folders = {r[0] for r in conn.execute("SELECT DISTINCT name FROM folders WHERE kind='system'")}
    assert folders == {"Inbox", "Sent", "Archive", "Deleted Items", "Junk Email"}
    # every user of the shared population is in the directory
    assert conn.execute("SELECT COUNT(*) FROM users").fetchone()[0] == len(population())
    statuses = dict(conn.execute("SELECT response, COUNT(*) FROM event_invites GROUP BY response").fetchall())
    assert set(statuses) == {"pending", "accepted", "declined"}


def test_topic_keywords_are_unambiguous() -> None:
    """'The latest email about the <keyword>' must mean one topic: keywords never leak into other text."""
    for topic in TOPICS:
        assert all(topic.keyword in s.lower() for s in topic.subjects), topic.keyword
        others = [text for other in TOPICS if other is not topic
                  for text in (*other.subjects, *other.openers, *other.replies, *other.attachments)]
        others += [*GENERIC_REPLIES, *(a[3] for a in AUTOMATED), *(s for a in AUTOMATED for s in a[2]),
                   *(s[2] + s[3] for s in SPAM)]
        assert not [text for text in others if topic.keyword in text.lower()], topic.keyword


# -- task generation -----------------------------------------------------------------------------

def test_tasks_log_in_mailbox_owners(tasks: list[Task]) -> None:
    owners = set(mailbox_owners())
    for task in tasks:
        assert task.env_variables["LOGGED_IN_USER"] in owners, task.id


def test_reference_solutions_write_exactly_when_the_task_expects_changes(tasks: list[Task]) -> None:
    assert_reference_writes_match_the_shape(tasks, WRITE_TOOLS)
    assert {t.name for t in APP.tools} >= WRITE_TOOLS


# -- partial credit on a write task ------------------------------------------------------------------

def _send_task(tasks: list[Task]) -> Task:
    return next(t for t in tasks if t.family == "send_to_contact")


def _run(env: Environment, task: Task, calls: list[tuple[str, dict]]) -> float:
    env.reset(task.env_variables)
    for name, arguments in calls:
        result = env.call_tool(name, arguments)
        assert not result.is_error, result.content
    verdict = verify_task(task, env, "Done.")
    assert verdict.error is None
    return verdict.partial_score


def test_wrong_extra_and_missing_writes_lose_the_right_checks(tasks: list[Task], env: Environment) -> None:
    task = _send_task(tasks)
    send = task.reference_solution[-1]
    right = send.arguments["to"][0]
    env.reset(task.env_variables)
    others = [c["email"] for c in json.loads(env.call_tool("search_contacts", {}).content) if c["email"] != right]
    # weights: row_exists (right recipient) 2, body 1, diff_only 1 = 4
    assert _run(env, task, [("send_message", send.arguments)]) == 1.0
    wrong = {**send.arguments, "to": [others[0]]}
    assert _run(env, task, [("send_message", wrong)]) == pytest.approx(2 / 4)  # body and diff still pass
    extra = [("send_message", send.arguments), ("create_folder", {"name": "Scratch"})]
    assert _run(env, task, extra) == pytest.approx(3 / 4)  # only diff_only fails
    assert _run(env, task, []) == 0.0  # nothing sent: every check fails


def test_accepting_every_invite_fails_exactly_the_clash_checks(tasks: list[Task], env: Environment) -> None:
    for declines in (True, False):
        task = next(t for t in tasks if t.family == "accept_invites_without_clashes"
                    and t.metadata["declines"] is declines)
        env.reset(task.env_variables)
        pending = json.loads(env.call_tool("list_invites", {"date": task.metadata["day"]}).content)
        for invite in pending:
            assert not env.call_tool("respond_to_invite", {"event_id": invite["event_id"],
                                                           "response": "accepted"}).is_error
        verdict = verify_task(task, env, "Accepted everything.")
        failed = {c.label for c in verdict.checks if not c.passed}
        clash_labels = {c.label for c in task.checks if c.label and not c.label.endswith("accepted")
                        and c.kind == "field_equals"}
        assert clash_labels and verdict.reward == 0.0
        # declining variant: the diff has the right rows, only the clashing responses are wrong;
        # leave-alone variant: answering the clashing ones is also an unexpected change
        assert failed == (clash_labels if declines else clash_labels | {"only those invitations answered"})


def test_impossible_task_penalises_an_attempted_write(tasks: list[Task], env: Environment) -> None:
    task = next(t for t in tasks if t.family == "send_to_non_contact")
    env.reset(task.env_variables)
    attempt = env.call_tool("send_message", {"to": [task.metadata["recipient"]], "subject": "x", "body": "y"})
    assert attempt.is_error and "not in your contacts" in attempt.content
    verdict = verify_task(task, env, "I cannot send it.")
    assert verdict.reward == 0.0 and verdict.partial_score == pytest.approx(3 / 4)


# -- tools ---------------------------------------------------------------------------------------

def test_bad_arguments_get_readable_errors_naming_the_argument(env: Environment) -> None:
    env.reset(owner_env(mailbox_owners()[0], "2026-06-15"))
    cases = [
        ("move_message", {"message_id": "seven", "folder": "Archive"}, "'message_id'"),
        ("move_message", {"message_id": 1, "folder": "Archive"}, "'message_id'"),
        ("list_messages", {"folder": "Receipts-2019"}, "'folder'"),
        ("list_messages", {"limit": 500}, "'limit'"),
        ("send_message", {"to": ["not-an-address@"], "subject": "s", "body": "b"}, "'to'"),
        ("send_message", {"to": [], "subject": "s", "body": "b"}, "'to'"),
        ("create_event", {"title": "T", "date": "tomorrow", "start_time": "25:99", "end_time": "10:00"},
         "'start_time'"),
        ("create_event", {"title": "T", "date": "someday", "start_time": "09:00", "end_time": "10:00"}, "someday"),
        ("respond_to_invite", {"event_id": 1, "response": "maybe"}, "'response'"),
        ("list_events", {"date": "2026-06-01", "end_date": "2026-09-01"}, "'end_date'"),
    ]
    for name, arguments, expected in cases:
        result = env.call_tool(name, arguments)
        assert result.is_error, (name, arguments)
        assert expected in result.content, result.content
    folder_error = env.call_tool("list_messages", {"folder": "Receipts-2019"}).content
    assert "Inbox" in folder_error  # the error lists the folders that do exist


def test_logged_in_user_decides_whose_mailbox_it_is(env: Environment) -> None:
    first, second = mailbox_owners()[:2]
    env.reset(owner_env(first, "2026-07-01"))
    mine = env.call_tool("search_contacts", {}).content
    inbox = env.call_tool("list_messages", {"limit": 50}).content
    env.reset(owner_env(second, "2026-07-01"))
    assert env.call_tool("search_contacts", {}).content != mine
    assert env.call_tool("list_messages", {"limit": 50}).content != inbox
    their_message = seed().execute("SELECT MIN(id) FROM messages WHERE owner=?", (first,)).fetchone()[0]
    stolen = env.call_tool("read_message", {"message_id": their_message})
    assert stolen.is_error and "no message" in stolen.content
    env.reset({"CURRENT_DATE": "2026-07-01"})
    assert "LOGGED_IN_USER" in env.call_tool("list_folders", {}).content


def test_current_date_decides_what_tomorrow_is(env: Environment) -> None:
    username = mailbox_owners()[0]
    days = [r[0] for r in seed().execute(
        "SELECT DISTINCT substr(start, 1, 10) FROM calendar_events WHERE organizer=? AND status='scheduled' "
        "AND start BETWEEN '2026-05-01' AND '2026-08-31' ORDER BY 1", (username,))]
    day = days[0]
    before = (dt.date.fromisoformat(day) - dt.timedelta(days=1)).isoformat()
    env.reset(owner_env(username, before))
    events = env.call_tool("list_events", {"date": "tomorrow"}).content
    assert f"{day}T" in events
    env.reset(owner_env(username, day))
    later = env.call_tool("list_events", {"date": "tomorrow"}).content
    assert f"{day}T" not in later


def test_mail_dated_after_today_has_not_arrived(env: Environment) -> None:
    owner, message_id, sent_at = seed().execute(
        "SELECT owner, id, sent_at FROM messages WHERE sent_at > '2026-07-15' ORDER BY id LIMIT 1").fetchone()
    env.reset(owner_env(owner, "2026-05-01"))
    assert env.call_tool("read_message", {"message_id": message_id}).is_error
    env.reset(owner_env(owner, sent_at[:10]))
    assert not env.call_tool("read_message", {"message_id": message_id}).is_error


def test_reply_forward_and_read_flag_behave_like_outlook(env: Environment) -> None:
    conn = seed()
    owner, message_id, count = conn.execute(
        "SELECT m.owner, m.id, COUNT(a.id) FROM messages m JOIN attachments a ON a.message_id = m.id "
        "WHERE m.sent_at < '2026-04-01' AND m.sender_address NOT LIKE m.owner || '@%' GROUP BY m.id ORDER BY m.id "
        "LIMIT 1").fetchone()
    env.reset(owner_env(owner, "2026-04-01"))
    before = conn.execute("SELECT is_read FROM messages WHERE id=?", (message_id,)).fetchone()[0]
    env.call_tool("read_message", {"message_id": message_id})
    assert env.db().execute("SELECT is_read FROM messages WHERE id=?", (message_id,)).fetchone()[0] == before
    contact = conn.execute("SELECT email FROM contacts WHERE owner=? ORDER BY email LIMIT 1", (owner,)).fetchone()[0]
    forwarded = env.call_tool("forward_message", {"message_id": message_id, "to": [contact]})
    assert not forwarded.is_error and f'"attachments": {count}' in forwarded.content
    reply = env.call_tool("reply_to_message", {"message_id": message_id, "body": "Thanks!"})
    assert not reply.is_error and '"subject": "Re: ' in reply.content
    rows = env.db().execute(
        "SELECT subject, sent_at, folder_id FROM messages WHERE owner=? AND sent_at LIKE '2026-04-01T19:%' "
        "ORDER BY sent_at", (owner,)).fetchall()
    assert [r[1] for r in rows] == ["2026-04-01T19:00", "2026-04-01T19:01"]
    owner, automated = conn.execute(
        "SELECT owner, id FROM messages WHERE sender_address LIKE '%no%reply%' ORDER BY id LIMIT 1").fetchone()
    env.reset(owner_env(owner, "2026-09-30"))
    refused = env.call_tool("reply_to_message", {"message_id": automated, "body": "hi"})
    assert refused.is_error and "does not accept replies" in refused.content


def test_cancelled_or_foreign_meetings_cannot_be_answered_or_cancelled(env: Environment) -> None:
    conn = seed()
    owner, event_id, start = conn.execute(
        "SELECT u.username, e.id, e.start FROM event_invites i JOIN calendar_events e ON e.id = i.event_id "
        "JOIN users u ON u.email = i.invitee_email WHERE e.status='cancelled' AND i.response='pending' "
        "AND u.has_mailbox=1 AND e.start > '2026-05-01' ORDER BY e.id LIMIT 1").fetchone()
    env.reset(owner_env(owner, "2026-05-01"))
    refused = env.call_tool("respond_to_invite", {"event_id": event_id, "response": "accepted"})
    assert refused.is_error and "cancelled" in refused.content
    assert env.call_tool("cancel_event", {"event_id": event_id}).is_error  # not the organizer
    assert env.diff() == []
    assert start > "2026-05-01"
