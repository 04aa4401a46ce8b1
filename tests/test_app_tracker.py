"""tracker app: seed rules, the join with code_host, tool rules and errors, context, task
variants and hand-computed partial scores."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict

import pytest

from app_helpers import AppKit, call, error
from toolgym.envs import get_app, make_env
from toolgym.envs.apps.tracker import APP
from toolgym.envs.apps.tracker.data import ACTIVITY_END
from toolgym.envs.apps.tracker.rules import STORY_POINTS, open_blockers
from toolgym.schema import Task

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.
KIT = AppKit("tracker", today="2026-06-03")
tasks_30, seed_one, seed_all, fresh_env, _score = KIT.tasks_30, KIT.seed_one, KIT.seed_all, KIT.fresh_env, KIT.score


def member_of(project_key: str, role: str | None = None) -> str:
    sql = (
        "SELECT m.username FROM project_members m JOIN projects p ON p.id = m.project_id WHERE p.key=?"
        + (" AND m.role=?" if role else "")
        + " ORDER BY m.username"
    )
    return seed_one(sql, (project_key, role) if role else (project_key,))["username"]


def outsider_of(project_key: str) -> str:
    return seed_one(
        "SELECT username FROM users WHERE username NOT IN (SELECT m.username FROM project_members m "
        "JOIN projects p ON p.id = m.project_id WHERE p.key=?) ORDER BY id",
        (project_key,),
    )["username"]


# ---------------------------------------------------------------- structure and seed


def test_seed_invariants_the_rules_rely_on() -> None:
    by_project: dict[int, list[dict]] = defaultdict(list)
    for row in seed_all("SELECT project_id, number, created_at FROM tickets ORDER BY project_id, number"):
        by_project[row["project_id"]].append(row)
    for rows in by_project.values():
        dates = [r["created_at"] for r in rows]
        assert dates == sorted(dates) and len(set(dates)) == len(dates)  # "oldest" is never a tie
    for project in seed_all("SELECT id FROM projects ORDER BY id"):
        states = [r["state"] for r in seed_all("SELECT state FROM sprints WHERE project_id=? ORDER BY start_date",
                                               (project["id"],))]
        assert states == ["closed"] * 4 + ["active"] + ["planned"] * 2
    not_done_in_closed = seed_all(
        "SELECT t.key FROM tickets t JOIN sprints s ON s.id = t.sprint_id WHERE s.state='closed' AND t.status != 'Done'"
    )
    assert not_done_in_closed == []
    world = APP.world()
    for ticket in seed_all("SELECT id, key FROM tickets WHERE status='Done' ORDER BY id"):
        assert open_blockers(world, ticket["id"]) == [], ticket["key"]
    for ticket in seed_all("SELECT id, key FROM tickets WHERE status='Blocked' ORDER BY id"):
        assert open_blockers(world, ticket["id"]), ticket["key"]
    points = {r["story_points"] for r in seed_all("SELECT DISTINCT story_points FROM tickets ORDER BY 1")}
    assert points - {None} <= set(STORY_POINTS)
    latest = seed_one(
        "SELECT MAX(d) AS d FROM (SELECT MAX(created_at) AS d FROM tickets UNION ALL SELECT MAX(created_at) "
        "FROM comments UNION ALL SELECT MAX(work_date) FROM worklogs UNION ALL SELECT MAX(resolved_at) FROM tickets)"
    )
    assert latest["d"] <= ACTIVITY_END.isoformat()


def test_code_refs_name_real_pull_requests_in_the_projects_repos() -> None:
    code_host = get_app("code_host").world()
    refs = seed_all(
        "SELECT t.key, t.status, t.code_ref, t.project_id FROM tickets t WHERE t.code_ref IS NOT NULL ORDER BY t.id"
    )
    assert len(refs) >= 30
    for ticket in refs:
        repo, number = ticket["code_ref"].split("#")
        owner, name = repo.split("/")
        pr = code_host.one(
            "SELECT p.state FROM pull_requests p JOIN repos r ON r.id = p.repo_id "
            "WHERE r.owner=? AND r.name=? AND p.number=?",
            (owner, name, int(number)),
        )
        assert pr is not None, ticket
        assert (pr["state"] == "merged") == (ticket["status"] == "Done"), ticket
        linked = {r["repo"] for r in seed_all("SELECT repo FROM project_repos WHERE project_id=? ORDER BY repo",
                                              (ticket["project_id"],))}
        assert repo in linked
    lead = seed_one("SELECT p.lead, r.repo FROM projects p JOIN project_repos r ON r.project_id = p.id ORDER BY r.id")
    assert lead["repo"].startswith(lead["lead"] + "/")  # the lead owns the first repository in code_host too


# ---------------------------------------------------------------- generated tasks


def test_tasks_log_in_project_members() -> None:
    members = {r["username"] for r in seed_all("SELECT DISTINCT username FROM project_members ORDER BY 1")}
    for task in tasks_30():
        assert task.env_variables["LOGGED_IN_USER"] in members, task.id


def test_impossible_tasks_really_are_impossible() -> None:
    """The forbidden write fails in the task's context, so 'I cannot' is the only right answer."""
    env = make_env("tracker")
    seen = set()
    for task in tasks_30():
        if task.metadata["shape"] != "impossible":
            continue
        seen.add(task.family)
        env.reset(task.env_variables)
        key = task.metadata["key"]
        if task.family == "done_while_blocked":
            result = env.call_tool("transition_ticket", {"key": key, "status": "Done"})
            if "cannot move from" in result.content:  # not one step away: walk there and hit the blocker
                ticket = call(env, "get_ticket", key=key)
                for status in ("In Progress", "In Review", "QA"):
                    if status in ticket["allowed_transitions"]:
                        call(env, "transition_ticket", key=key, status=status)
                        ticket = call(env, "get_ticket", key=key)
                result = env.call_tool("transition_ticket", {"key": key, "status": "Done"})
            assert "blocked by" in result.content, (task.id, result.content)
        elif task.family == "closed_sprint":
            result = env.call_tool("move_to_sprint", {"key": key, "sprint": task.metadata["sprint"]})
            assert "closed" in result.content, (task.id, result.content)
        else:
            result = env.call_tool("transition_ticket", {"key": key, "status": task.metadata["status"]})
            assert "final" in result.content, (task.id, result.content)
        assert result.is_error
        assert task.expected_answer.startswith("I cannot")
    assert seen == {"done_while_blocked", "closed_sprint", "reopen_done"}


def test_roll_over_covers_its_variants() -> None:
    rolls = [t for t in tasks_30() if t.family == "roll_over_sprint"]
    assert {t.metadata["full"] for t in rolls} == {True, False}
    assert {t.metadata["to_backlog"] for t in rolls} == {True, False}


# ---------------------------------------------------------------- partial credit


def _plain_file_task() -> Task:
    """A file_ticket task with only type, summary and priority: checks weigh created 2, priority 1, diff 1."""
    return next(
        t for t in tasks_30()
        if t.family == "file_ticket" and set(t.reference_solution[0].arguments) == {"project", "type", "summary",
                                                                                    "priority"}
    )


def test_wrong_write_fails_only_the_wrong_field() -> None:
    task = _plain_file_task()
    arguments = dict(task.reference_solution[0].arguments)
    arguments["priority"] = "Lowest" if arguments["priority"] != "Lowest" else "Highest"
    reward, partial, failed = _score(task, [("create_ticket", arguments)])
    assert reward == 0.0 and partial == pytest.approx(3 / 4)
    assert failed == {"priority set"}


def test_extra_write_fails_only_the_diff_check() -> None:
    task = _plain_file_task()
    project = task.reference_solution[0].arguments["project"]
    other = seed_one("SELECT t.key FROM tickets t JOIN projects p ON p.id = t.project_id WHERE p.key=? ORDER BY t.id",
                     (project,))
    calls = [
        ("create_ticket", dict(task.reference_solution[0].arguments)),
        ("add_comment_to_ticket", {"key": other["key"], "body": "Related to the new ticket."}),
    ]
    reward, partial, failed = _score(task, calls)
    assert reward == 0.0 and partial == pytest.approx(3 / 4)
    assert failed == {"only that ticket"}


def test_missing_write_fails_its_check_and_the_diff() -> None:
    task = next(t for t in tasks_30() if t.family == "mark_blocked")
    calls = [(c.name, c.arguments) for c in task.reference_solution if c.name != "add_comment_to_ticket"]
    reward, partial, failed = _score(task, calls)  # weights: link 1, status 1, comment 1, diff 1
    assert reward == 0.0 and partial == pytest.approx(2 / 4)
    assert failed == {"comment posted", "only the link, the status and the comment"}
    reward, partial, failed = _score(_plain_file_task(), [])
    assert partial == 0.0 and failed == {"ticket created", "priority set", "only that ticket"}


# ---------------------------------------------------------------- tool errors and rules


@pytest.mark.parametrize(
    ("name", "arguments", "argument"),
    [
        ("get_ticket", {"key": "banana"}, "'key'"),
        ("get_ticket", {"key": "PLAT-99999"}, "'key'"),
        ("get_ticket", {"key": 12}, "'key'"),
        ("get_project", {"project": "NOPE"}, "'project'"),
        ("search_tickets", {"project": "PLAT", "status": "Sleeping"}, "'status'"),
        ("search_tickets", {"limit": 500}, "'limit'"),
        ("search_tickets", {"type": "feature"}, "'type'"),
        ("search_tickets", {"priority": "urgent"}, "'priority'"),
        ("search_tickets", {"sprint": "PLAT Sprint 3"}, "'sprint'"),
        ("search_tickets", {"due": "someday"}, "someday"),
        ("get_sprint", {"project": "PLAT", "sprint": "Sprint 999"}, "'sprint'"),
        ("create_ticket", {"project": "PLAT", "summary": "x", "story_points": 4}, "'story_points'"),
        ("create_ticket", {"project": "PLAT", "summary": "x", "type": "epic", "story_points": 3}, "'story_points'"),
        ("create_ticket", {"project": "PLAT", "summary": "  "}, "'summary'"),
        ("assign_ticket", {"key": "PLAT-212", "assignee": "no.body"}, "'assignee'"),
        ("link_tickets", {"key": "PLAT-212", "link_type": "blocks", "other_key": "PLAT-212"}, "'other_key'"),
        ("link_tickets", {"key": "PLAT-212", "link_type": "causes", "other_key": "PLAT-213"}, "'link_type'"),
        ("log_work", {"key": "PLAT-212", "hours": 0.1}, "'hours'"),
        ("log_work", {"key": "PLAT-212", "hours": 1, "date": "tomorrow"}, "'date'"),
        ("update_ticket", {"key": "PLAT-212"}, "story_points"),
    ],
)
def test_bad_argument_gives_readable_error_naming_it(name: str, arguments: dict, argument: str) -> None:
    env = fresh_env(member_of("PLAT"))
    assert error(env, name, **arguments).count(argument) >= 1
    assert env.diff() == []


def _ticket_in(status: str, workflow: str = "software") -> dict:
    return seed_one(
        "SELECT t.* FROM tickets t JOIN projects p ON p.id = t.project_id WHERE t.status=? AND p.workflow=? "
        "AND t.type != 'epic' ORDER BY t.id",
        (status, workflow),
    )


def _member_for(ticket: dict, role: str | None = None) -> str:
    key = seed_one("SELECT key FROM projects WHERE id=?", (ticket["project_id"],))["key"]
    return member_of(key, role)


def test_transitions_follow_the_workflow_and_done_is_final() -> None:
    todo = _ticket_in("To Do")
    env = fresh_env(_member_for(todo))
    message = error(env, "transition_ticket", key=todo["key"], status="Done")
    assert "cannot move from 'To Do' to 'Done'" in message and "In Progress" in message
    for status in ("In Progress", "In Review"):
        call(env, "transition_ticket", key=todo["key"], status=status)
    assert open_blockers(APP.world(), todo["id"]) == []
    moved = call(env, "transition_ticket", key=todo["key"], status="Done")
    assert moved["status"] == "Done" and moved["allowed_transitions"] == []
    assert "final" in error(env, "transition_ticket", key=todo["key"], status="In Progress")
    resolved = [c.after for c in env.diff() if c.table == "tickets"]
    assert resolved[0]["resolved_at"] == "2026-06-03"  # type: ignore[index]
    basic = _ticket_in("In Progress", "basic")
    env = fresh_env(_member_for(basic))
    assert "'In Review'" in error(env, "transition_ticket", key=basic["key"], status="In Review")


def test_blocked_ticket_cannot_reach_done_until_its_blocker_is_done() -> None:
    world = APP.world()
    ticket = next(
        t for t in seed_all("SELECT * FROM tickets WHERE status='In Review' ORDER BY id")
        if open_blockers(world, t["id"])
    )
    blockers = open_blockers(world, ticket["id"])
    env = fresh_env(_member_for(ticket))
    message = error(env, "transition_ticket", key=ticket["key"], status="Done")
    assert all(b["key"] in message for b in blockers)
    assert env.diff() == []


def test_sprint_rules() -> None:
    sprint = seed_one("SELECT s.*, p.key FROM sprints s JOIN projects p ON p.id = s.project_id "
                      "WHERE s.state='active' ORDER BY s.id")
    closed = seed_one("SELECT name FROM sprints WHERE project_id=? AND state='closed' ORDER BY id",
                      (sprint["project_id"],))
    open_ticket = seed_one("SELECT key FROM tickets WHERE sprint_id=? AND status != 'Done' ORDER BY id",
                           (sprint["id"],))
    admin = member_of(sprint["key"], "admin")
    env = fresh_env(admin)
    assert "closed" in error(env, "move_to_sprint", key=open_ticket["key"], sprint=closed["name"])
    assert "closed" in error(env, "create_ticket", project=sprint["key"], summary="New", sprint=closed["name"])
    assert open_ticket["key"] in error(env, "close_sprint", project=sprint["key"])
    assert "still active" in error(env, "start_sprint", project=sprint["key"], sprint="next")
    regular = seed_one("SELECT m.username FROM project_members m WHERE m.project_id=? AND m.role='member' "
                       "ORDER BY m.username", (sprint["project_id"],))["username"]
    assert "admin" in error(fresh_env(regular), "close_sprint", project=sprint["key"])
    assert env.diff() == []


def test_only_members_change_tickets_and_take_assignments() -> None:
    ticket = _ticket_in("To Do")
    key = seed_one("SELECT key FROM projects WHERE id=?", (ticket["project_id"],))["key"]
    outsider = outsider_of(key)
    env = fresh_env(outsider)
    assert "not a member" in error(env, "add_comment_to_ticket", key=ticket["key"], body="Hi")
    assert "not a member" in error(env, "transition_ticket", key=ticket["key"], status="In Progress")
    env = fresh_env(member_of(key))
    assert "'assignee'" in error(env, "assign_ticket", key=ticket["key"], assignee=outsider)
    assert env.diff() == []
    assert not env.call_tool("get_ticket", {"key": ticket["key"]}).is_error


# ---------------------------------------------------------------- context: who "I" am and what "today" is


def test_logged_in_user_changes_what_my_tickets_are() -> None:
    first, second = [
        r["assignee"]
        for r in seed_all("SELECT assignee FROM tickets WHERE assignee IS NOT NULL AND status != 'Done' "
                          "GROUP BY assignee ORDER BY assignee LIMIT 2")
    ]
    for user, other in ((first, second), (second, first)):
        found = call(fresh_env(user), "search_tickets", assignee="me", status="open", limit=50)
        assert found["total_count"] > 0
        assert {t["assignee"] for t in found["tickets"]} == {user}
        assert other not in json.dumps(found)
    assert "LOGGED_IN_USER" in error(fresh_env(None), "search_tickets", assignee="me")


def test_current_date_changes_what_tomorrow_means() -> None:
    ticket = seed_one("SELECT key, due_date FROM tickets WHERE due_date IS NOT NULL AND status != 'Done' "
                      "AND due_date >= '2026-06-05' ORDER BY due_date, id")
    due = dt.date.fromisoformat(ticket["due_date"])
    hit = call(fresh_env(None, (due - dt.timedelta(days=1)).isoformat()), "search_tickets", due="tomorrow", limit=50)
    miss = call(fresh_env(None, due.isoformat()), "search_tickets", due="tomorrow", limit=50)
    assert ticket["key"] in {t["key"] for t in hit["tickets"]}
    assert ticket["key"] not in {t["key"] for t in miss["tickets"]}


def test_writes_are_dated_current_date_and_done_as_logged_in_user() -> None:
    user = member_of("PLAT")
    env = fresh_env(user, today="2026-06-05")
    top = seed_one("SELECT MAX(t.number) AS n FROM tickets t JOIN projects p ON p.id = t.project_id WHERE p.key='PLAT'")
    created = call(env, "create_ticket", project="plat", summary="Flaky login test", type="bug", priority="high")
    assert created["key"] == f"PLAT-{top['n'] + 1}" and created["priority"] == "High"
    logged = call(env, "log_work", key=created["key"], hours=1.5, date="yesterday")
    assert logged["date"] == "2026-06-04" and logged["logged"] == "1.5h"
    changes = {c.table: c for c in env.diff()}
    assert sorted(changes) == ["tickets", "worklogs"]
    row = changes["tickets"].after
    assert row is not None and row["reporter"] == user and row["created_at"] == "2026-06-05"
    assert row["status"] == "To Do"
    assert changes["worklogs"].after["minutes"] == 90  # type: ignore[index]
