"""code_host app: schema and data, tool rules and errors, task generation, replay and check scoring."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from functools import cache

import pytest

from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.dataset.replay import replay_task
from toolgym.envs import Environment, make_env
from toolgym.envs.apps.code_host import APP
from toolgym.envs.database import user_tables
from toolgym.schema import Task
from toolgym.verify import verify_task

SHAPES = {"lookup", "write", "search_choose_write", "multi_step", "impossible", "context"}


@cache
def tasks_30() -> tuple[Task, ...]:
    return tuple(generate_app_tasks(APP, BuildConfig(tasks_per_family=30)))


def fresh_env(user: str | None = "steven.jordan", today: str = "2026-05-04") -> Environment:
    env = make_env("code_host")
    variables = {"CURRENT_DATE": today}
    if user:
        variables["LOGGED_IN_USER"] = user
    env.reset(variables)
    return env


def seed_one(sql: str, params: tuple = ()) -> dict:
    row = APP.world().one(sql, params)
    assert row is not None, sql
    return row


# ---------------------------------------------------------------- structure


def test_schema_has_six_or_more_tables_all_with_rows() -> None:
    db = APP.world().db
    tables = user_tables(db)
    assert len(tables) >= 6
    for table in tables:
        if table.startswith("_toolgym"):
            continue
        assert db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0] > 0, table
    assert len(APP.snapshot().data) < 2_000_000


def test_users_are_the_shared_population() -> None:
    from toolgym.envs.people import population

    names = [r["username"] for r in APP.world().query("SELECT username FROM users ORDER BY id")]
    assert names == [p.username for p in population()]


def test_tools_and_families() -> None:
    assert len(APP.tools) >= 8
    for t in APP.tools:
        assert t.description, t.name
        assert all(p.description for p in t.params), t.name
    families = APP.task_families()
    assert len(families) >= 7
    assert {f.shape for f in families} == SHAPES
    assert "I cannot" in APP.policy


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


# ---------------------------------------------------------------- generation and replay


def test_every_generated_task_replays_to_reward_one() -> None:
    tasks = tasks_30()
    assert len({t.family for t in tasks}) == len(APP.task_families())
    env = make_env("code_host")
    failures = []
    for task in tasks:
        outcome = replay_task(task, env)
        if not outcome.kept or outcome.verdict.reward != 1.0:
            failures.append(f"{task.id}: {outcome.reason}")
    assert not failures, failures[:5]


def test_generation_is_deterministic_and_tasks_are_well_formed() -> None:
    again = generate_app_tasks(APP, BuildConfig(tasks_per_family=30))
    assert [t.model_dump() for t in again] == [t.model_dump() for t in tasks_30()]
    users = {
        r["username"] for r in APP.world().query("SELECT DISTINCT username FROM collaborators ORDER BY 1")
    }
    for task in tasks_30():
        variables = task.env_variables
        assert "2026-04-01" <= variables["CURRENT_DATE"] <= "2026-08-31", task.id
        assert variables["LOGGED_IN_USER"] in users, task.id
        assert variables["LOGGED_IN_NAME"], task.id
        assert task.reference_solution and task.expected_answer and task.checks, task.id


def test_each_family_uses_three_or_more_phrasings() -> None:
    phrasings: dict[str, set] = defaultdict(set)
    openings: dict[str, set] = defaultdict(set)
    for task in tasks_30():
        phrasings[task.family].add(task.metadata["phrasing"])
        openings[task.family].add(" ".join(task.prompt.split()[:2]))
    for family in phrasings:
        assert len(phrasings[family]) >= 3, family
        assert len(openings[family]) >= 3, family


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


def _score(task: Task, calls: list[tuple[str, dict]]) -> tuple[float, float, set[str]]:
    env = make_env("code_host")
    env.reset(task.env_variables)
    for name, arguments in calls:
        result = env.call_tool(name, arguments)
        assert not result.is_error, result.content
    verdict = verify_task(task, env, task.expected_answer)
    return verdict.reward, verdict.partial_score, {c.label for c in verdict.checks if not c.passed}


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
