"""code_host task families about "me" and "today": my assigned issues, a milestone due on a relative
day, and taking an issue myself. LOGGED_IN_USER and CURRENT_DATE decide what the request means."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.code_host.task_common import (
    FIRST_TODAY,
    WRITE,
    all_repos,
    assignment_checks,
    env_on_a_day,
    full_name,
    label_phrase,
    members,
    open_issues_with_label,
)
from toolgym.envs.kit.row_checks import field_is, only, updated

TEXTS = kit.module_texts(__file__)


def my_assigned_issues(rng: random.Random, world: World) -> TaskDraft | None:
    """List the open issues of a repository that are assigned to the logged-in user."""
    pairs = world.query(
        "SELECT i.repo_id, i.assignee, COUNT(*) AS n FROM issues i WHERE i.state='open' AND i.assignee IS NOT NULL "
        "GROUP BY i.repo_id, i.assignee HAVING n <= 4 ORDER BY i.repo_id, i.assignee"
    )
    pair = rng.choice(pairs)
    repo = world.one("SELECT * FROM repos WHERE id=?", (pair["repo_id"],))
    assert repo is not None
    user = pair["assignee"]
    issues = world.query(
        "SELECT * FROM issues WHERE repo_id=? AND assignee=? AND state='open' ORDER BY number",
        (repo["id"], user),
    )
    name = full_name(repo)
    phrasing, prompt = kit.phrase(rng, TEXTS["MY_ASSIGNED_ISSUES"], name=name)
    titles = [i["title"] for i in issues]
    listed = "; ".join(f"#{i['number']} {i['title']}" for i in issues)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[kit.call("search_issues", repo=name, state="open", assignee="me")],
        expected_answer=f"You have {len(issues)} open issue(s) assigned in {name}: {listed}.",
        checks=kit.lookup_checks(titles, per_fact=False),
        difficulty=2,
        metadata={"phrasing": phrasing},
    )


RELATIVE_KINDS = ("tomorrow", "today", "in_days", "next_weekday", "this_weekday")  # one draw picks one


def milestone_due(rng: random.Random, world: World) -> TaskDraft | None:
    """Put an issue into the milestone due on a relative date ("tomorrow", "next Friday")."""
    milestone = rng.choice(world.query("SELECT * FROM milestones ORDER BY id"))
    repo = world.one("SELECT * FROM repos WHERE id=?", (milestone["repo_id"],))
    assert repo is not None
    resolved = kit.relative_day(rng, dt.date.fromisoformat(milestone["due_date"]), RELATIVE_KINDS, first=FIRST_TODAY,
                                max_in_days=10, this_lead=(0, 6))
    if resolved is None:
        return None
    phrase, today = resolved
    issues = world.query(
        "SELECT * FROM issues WHERE repo_id=? AND state='open' AND milestone_id IS NOT ? ORDER BY number",
        (repo["id"], milestone["id"]),
    )
    if not issues:
        return None
    issue = rng.choice(issues)
    owner_is_user = rng.random() < 0.4
    user = repo["owner"] if owner_is_user else rng.choice(members(world, repo["id"], WRITE))
    name, number = full_name(repo), issue["number"]
    where = f"my {repo['name']} repo" if user == repo["owner"] else name
    phrasing, prompt = kit.phrase(rng, TEXTS["MILESTONE_DUE"], number=number, where=where, phrase=phrase)
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, today),
        reference_solution=[
            kit.call("list_milestones", repo=name, due=phrase),
            kit.call("set_issue_milestone", repo=name, number=number, milestone=milestone["title"]),
        ],
        expected_answer=f"Issue #{number} in {name} is now in milestone '{milestone['title']}' "
        f"(due {milestone['due_date']}).",
        checks=[
            field_is("issues", {"id": issue["id"]}, "milestone_id", milestone["id"], "right milestone", weight=2),
            only("only the milestone", [updated("issues", {"id": issue["id"]}, ["milestone_id"])]),
        ],
        difficulty=2,
        metadata={"phrasing": phrasing, "phrase": phrase},
    )


def assign_to_me(rng: random.Random, world: World) -> TaskDraft | None:
    """Take the oldest unassigned open issue with a label: assign it to the logged-in user."""
    repo = rng.choice(all_repos(world))
    label = rng.choice(["bug", "enhancement", "documentation", "question"])
    issues = [i for i in open_issues_with_label(world, repo["id"], label) if i["assignee"] is None]
    if not issues:
        return None
    target = issues[0]
    user = rng.choice(members(world, repo["id"], WRITE))
    name, what = full_name(repo), label_phrase(label)
    phrasing, prompt = kit.phrase(rng, TEXTS["ASSIGN_TO_ME"], what=what, name=name)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[
            kit.call("search_issues", repo=name, state="open", label=label, assignee="none", sort="oldest"),
            kit.call("assign_issue", repo=name, number=target["number"], assignee="me"),
        ],
        expected_answer=f"I assigned issue #{target['number']} ('{target['title']}') in {name} to you.",
        checks=assignment_checks(target["id"], user, "assigned to me"),
        difficulty=2,
        metadata={"phrasing": phrasing},
    )
