"""code_host app: seed rules, tool rules and errors, context, task variants and hand-computed partial scores."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

import pytest

from app_helpers import AppKit
from toolgym.envs import Environment, make_env
from toolgym.envs.apps.code_host import APP
from toolgym.schema import Task

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.
KIT = AppKit("code_host")
tasks_30, seed_one, _score = KIT.tasks_30, KIT.seed_one, KIT.score


def fresh_env(user: str | None = "steven.jordan", today: str | None = None) -> Environment:
    return KIT.fresh_env(user, today)


# ---------------------------------------------------------------- structure


def test_seed_dates_are_strictly_increasing_per_repo() -> None:
    rows = APP.world().query(
        "SELECT repo_id, number, created_at FROM issues UNION ALL SELECT repo_id, number, created_at "
        "FROM pull_requests ORDER BY 1, 2"
    )
    by_repo: dict[int, list[str]] = defaultdict(list)
    for row in rows:
        by_repo[row["repo_id"]].append(row["created_at"])
    for dates in by_repo.values():
        assert dates == sorted(dates) and len(set(dates)) == len(dates)


# ---------------------------------------------------------------- generated tasks


def test_tasks_log_in_collaborators() -> None:
    users = {
        r["username"] for r in APP.world().query("SELECT DISTINCT username FROM collaborators ORDER BY 1")
    }
    for task in tasks_30():
        assert task.env_variables["LOGGED_IN_USER"] in users, task.id


def test_impossible_tasks_really_are_impossible() -> None:
    """The forbidden write fails in the task's context, so 'I cannot' is the only right answer."""
    env = make_env("code_host")
    for task in tasks_30():
        if task.metadata["shape"] != "impossible":
            continue
        env.reset(task.env_variables)
        repo = task.reference_solution[0].arguments["repo"]
        number = int(task.prompt.split("#")[1].split()[0].rstrip(".;,?"))
        if task.family == "merge_blocked":
            result = env.call_tool("merge_pull_request", {"repo": repo, "number": number})
        else:
            tool_name = {"close": "close_issue", "label": "add_issue_label", "assign": "assign_issue"}
            extra = {
                "close": {},
                "label": {"label": "help wanted"},
                "assign": {"assignee": repo.split("/")[0]},
            }
            action = task.metadata["action"]
            result = env.call_tool(tool_name[action], {"repo": repo, "number": number, **extra[action]})
        assert result.is_error, (task.id, result.content)
        assert env.diff() == []
        assert "cannot" in task.expected_answer.lower() and task.expected_answer.startswith("I cannot")


def test_review_then_merge_covers_both_branches() -> None:
    branches = {t.metadata["branch"] for t in tasks_30() if t.family == "review_then_merge"}
    assert branches == {"passing", "failing"}


# ---------------------------------------------------------------- partial credit on a write task


def _open_issue_task() -> Task:
    return next(
        t
        for t in tasks_30()
        if t.family == "open_labeled_issue" and "assignee" not in t.reference_solution[0].arguments
    )


def test_wrong_write_fails_label_and_diff_checks() -> None:
    task = _open_issue_task()
    arguments = dict(task.reference_solution[0].arguments)
    arguments["labels"] = ["question"]  # weights: issue opened 2, label set 1, diff_only 1
    reward, partial, failed = _score(task, [("create_issue", arguments)])
    assert reward == 0.0 and partial == pytest.approx(2 / 4)
    assert failed == {"label set", "only the issue and its label"}


def test_extra_write_fails_only_diff_check() -> None:
    task = _open_issue_task()
    repo = task.reference_solution[0].arguments["repo"]
    env = make_env("code_host")
    env.reset(task.env_variables)
    other = env.call_tool("search_issues", {"repo": repo, "state": "all", "limit": 1})
    number = int(other.content.split('"number": ')[1].split(",")[0])
    calls = [
        ("create_issue", dict(task.reference_solution[0].arguments)),
        ("comment_on_issue", {"repo": repo, "number": number, "body": "Bumping this."}),
    ]
    reward, partial, failed = _score(task, calls)
    assert reward == 0.0 and partial == pytest.approx(3 / 4)
    assert failed == {"only the issue and its label"}


def test_missing_write_fails_label_and_diff_checks() -> None:
    task = _open_issue_task()
    arguments = dict(task.reference_solution[0].arguments)
    del arguments["labels"]  # the issue is opened, but its label insert is missing
    reward, partial, failed = _score(task, [("create_issue", arguments)])
    assert reward == 0.0 and partial == pytest.approx(2 / 4)
    assert failed == {"label set", "only the issue and its label"}
    reward, partial, failed = _score(task, [])
    assert partial == 0.0 and failed == {"issue opened", "label set", "only the issue and its label"}


# ---------------------------------------------------------------- tool errors and rules


@pytest.mark.parametrize(
    ("name", "arguments", "argument"),
    [
        ("get_issue", {"repo": "nobody/nothing", "number": 1}, "'repo'"),
        ("get_issue", {"repo": "steven.jordan/willow-infra", "number": "one"}, "'number'"),
        ("get_issue", {"repo": "steven.jordan/willow-infra", "number": 999}, "'number'"),
        ("search_issues", {"repo": "steven.jordan/willow-infra", "limit": 500}, "'limit'"),
        ("search_issues", {"state": "pending"}, "'state'"),
        (
            "add_issue_label",
            {"repo": "steven.jordan/willow-infra", "number": 1, "label": "urgent"},
            "'label'",
        ),
        (
            "assign_issue",
            {"repo": "steven.jordan/willow-infra", "number": 1, "assignee": "no.body"},
            "'assignee'",
        ),
        ("list_milestones", {"repo": "steven.jordan/willow-infra", "due": "someday"}, "someday"),
        (
            "merge_pull_request",
            {"repo": "steven.jordan/willow-infra", "number": 1, "merge_method": "fast"},
            "'merge_method'",
        ),
    ],
)
def test_bad_argument_gives_readable_error_naming_it(name: str, arguments: dict, argument: str) -> None:
    env = fresh_env()
    result = env.call_tool(name, arguments)
    assert result.is_error
    assert argument in result.content
    assert env.diff() == []


def test_issue_number_of_a_pull_request_points_to_the_right_tools() -> None:
    pr = seed_one(
        "SELECT p.number, r.owner || '/' || r.name AS repo, r.owner FROM pull_requests p "
        "JOIN repos r ON r.id = p.repo_id ORDER BY p.id LIMIT 1"
    )
    result = fresh_env(pr["owner"]).call_tool("get_issue", {"repo": pr["repo"], "number": pr["number"]})
    assert result.is_error and "pull request" in result.content


def test_private_repo_is_invisible_to_outsiders() -> None:
    repo = seed_one(
        "SELECT id, owner || '/' || name AS full FROM repos WHERE visibility='private' ORDER BY id"
    )
    outsider = seed_one(
        "SELECT username FROM users WHERE username NOT IN "
        "(SELECT username FROM collaborators WHERE repo_id=?) ORDER BY id",
        (repo["id"],),
    )
    assert fresh_env(outsider["username"]).call_tool("get_repo", {"repo": repo["full"]}).is_error
    member = seed_one("SELECT username FROM collaborators WHERE repo_id=? ORDER BY id", (repo["id"],))
    assert not fresh_env(member["username"]).call_tool("get_repo", {"repo": repo["full"]}).is_error


def test_merge_rules_ci_approval_and_write_access() -> None:
    failing = seed_one(
        "SELECT p.id, p.number, p.author, p.repo_id, r.owner || '/' || r.name AS repo FROM pull_requests p "
        "JOIN repos r ON r.id = p.repo_id WHERE p.state='open' AND p.ci_status='failing' ORDER BY p.id"
    )
    writer = seed_one(
        "SELECT username FROM collaborators WHERE repo_id=? AND permission IN ('write','admin') "
        "AND username != ? ORDER BY id",
        (failing["repo_id"], failing["author"]),
    )["username"]
    env = fresh_env(writer)
    assert not env.call_tool(
        "review_pull_request", {"repo": failing["repo"], "number": failing["number"], "event": "approve"}
    ).is_error
    blocked = env.call_tool("merge_pull_request", {"repo": failing["repo"], "number": failing["number"]})
    assert blocked.is_error and "CI" in blocked.content

    unreviewed = seed_one(
        "SELECT p.number, p.author, r.owner || '/' || r.name AS repo FROM pull_requests p JOIN repos r "
        "ON r.id = p.repo_id JOIN collaborators c ON c.repo_id = p.repo_id AND c.username = p.author "
        "AND c.permission IN ('write','admin') WHERE p.state='open' AND p.ci_status='passing' "
        "AND NOT EXISTS (SELECT 1 FROM reviews v WHERE v.pr_id = p.id) ORDER BY p.id"
    )
    env = fresh_env(unreviewed["author"])
    args = {"repo": unreviewed["repo"], "number": unreviewed["number"]}
    no_approval = env.call_tool("merge_pull_request", args)
    assert no_approval.is_error and "approv" in no_approval.content
    own = env.call_tool("review_pull_request", {**args, "event": "approve"})
    assert own.is_error and "own pull request" in own.content
    assert env.diff() == []


def test_write_needs_write_access() -> None:
    reader = seed_one(
        "SELECT c.username, r.owner || '/' || r.name AS repo, c.repo_id FROM collaborators c "
        "JOIN repos r ON r.id = c.repo_id WHERE c.permission='read' ORDER BY c.id"
    )
    issue = seed_one(
        "SELECT number FROM issues WHERE repo_id=? AND state='open' ORDER BY number", (reader["repo_id"],)
    )
    env = fresh_env(reader["username"])
    result = env.call_tool("close_issue", {"repo": reader["repo"], "number": issue["number"]})
    assert result.is_error and "write access" in result.content
    assert not env.call_tool(
        "comment_on_issue", {"repo": reader["repo"], "number": issue["number"], "body": "Same here."}
    ).is_error


# ---------------------------------------------------------------- context: who "I" am and what "today" is


def test_logged_in_user_changes_my_repos_and_my_issues() -> None:
    first, second = [
        r["username"]
        for r in APP.world().query(
            "SELECT assignee AS username FROM issues WHERE state='open' AND assignee IS NOT NULL "
            "GROUP BY assignee ORDER BY assignee LIMIT 2"
        )
    ]
    mine = {u: fresh_env(u).call_tool("list_repos", {}).content for u in (first, second)}
    assert mine[first] != mine[second]
    for user in (first, second):
        issues = fresh_env(user).call_tool("search_issues", {"assignee": "me"}).content
        assert f'"assignee": "{user}"' in issues
        other = second if user == first else first
        assert f'"assignee": "{other}"' not in issues
    assert fresh_env(None).call_tool("list_repos", {}).is_error


def test_current_date_changes_what_tomorrow_means() -> None:
    milestone = seed_one(
        "SELECT m.title, m.due_date, r.owner || '/' || r.name AS repo FROM milestones m "
        "JOIN repos r ON r.id = m.repo_id WHERE r.visibility='public' ORDER BY m.id"
    )
    due = dt.date.fromisoformat(milestone["due_date"])
    day_before = (due - dt.timedelta(days=1)).isoformat()
    hit = fresh_env(today=day_before).call_tool(
        "list_milestones", {"repo": milestone["repo"], "due": "tomorrow"}
    )
    miss = fresh_env(today=due.isoformat()).call_tool(
        "list_milestones", {"repo": milestone["repo"], "due": "tomorrow"}
    )
    assert milestone["title"] in hit.content
    assert milestone["title"] not in miss.content


def test_writes_are_dated_current_date_and_done_as_logged_in_user() -> None:
    admin = seed_one(
        "SELECT c.username, r.owner || '/' || r.name AS repo FROM collaborators c "
        "JOIN repos r ON r.id = c.repo_id WHERE c.permission='admin' ORDER BY c.id"
    )
    env = fresh_env(admin["username"], today="2026-07-09")
    created = env.call_tool(
        "create_issue", {"repo": admin["repo"], "title": "Flaky test in CI", "labels": ["bug"]}
    )
    assert not created.is_error
    changes = {c.table: c for c in env.diff()}
    assert sorted(changes) == ["issue_labels", "issues"]
    issue = changes["issues"].after
    assert issue is not None and changes["issues"].op == "insert"
    assert issue["author"] == admin["username"] and issue["created_at"] == "2026-07-09"
