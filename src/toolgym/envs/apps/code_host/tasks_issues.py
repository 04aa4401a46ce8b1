"""code_host task families about issues: counting, filing, commenting, triage, and a write without access."""

from __future__ import annotations

import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.code_host.data import COMPONENTS, CONDITIONS, FEATURES, TEMPLATES
from toolgym.envs.apps.code_host.task_common import (
    BODY_TEXTS,
    CLOSE_TEXTS,
    COMMENT_TEXTS,
    WRITE,
    all_repos,
    assignment_checks,
    env_on_a_day,
    full_name,
    label_phrase,
    members,
    open_issues,
    open_issues_with_label,
)
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, only, updated

TEXTS = kit.module_texts(__file__)


def count_label_issues(rng: random.Random, world: World) -> TaskDraft | None:
    """How many open issues carry a label in one repository."""
    repo = rng.choice(all_repos(world))
    labels = [
        r["name"] for r in world.query("SELECT name FROM labels WHERE repo_id=? ORDER BY name", (repo["id"],))
    ]
    label = rng.choice(labels)
    count = len(open_issues_with_label(world, repo["id"], label))
    if count == 0 and rng.random() < 0.7:
        return None  # keep some zero answers, mostly real counts
    user = rng.choice(members(world, repo["id"]))
    name = full_name(repo)
    phrasing, prompt = kit.phrase(rng, TEXTS["COUNT_LABEL_ISSUES"], label=label, name=name)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[kit.call("search_issues", repo=name, state="open", label=label)],
        expected_answer=f"There are {count} open issues labelled '{label}' in {name}.",
        checks=kit.lookup_checks([str(count)], per_fact=False),
        difficulty=1,
        metadata={"phrasing": phrasing},
    )


def _new_title(rng: random.Random, world: World, repo_id: int, kind: str) -> str | None:
    template = rng.choice(TEMPLATES[kind])
    text = template.format(
        comp=rng.choice(COMPONENTS), cond=rng.choice(CONDITIONS), feat=rng.choice(FEATURES)
    )
    title = text[0].upper() + text[1:]
    if world.one("SELECT 1 FROM issues WHERE repo_id=? AND title=?", (repo_id, title)):
        return None
    return title


def open_labeled_issue(rng: random.Random, world: World) -> TaskDraft | None:
    """Open an issue with a title and a label (sometimes an assignee) as a writer of the repository."""
    repo = rng.choice(all_repos(world))
    writers = members(world, repo["id"], WRITE)
    user = rng.choice(writers)
    kind = rng.choice(["bug", "enhancement", "documentation"])
    title = _new_title(rng, world, repo["id"], kind)
    if title is None:
        return None
    label = world.one("SELECT * FROM labels WHERE repo_id=? AND name=?", (repo["id"], kind))
    assert label is not None
    assignee = rng.choice(writers) if rng.random() < 0.4 else None
    body = rng.choice(BODY_TEXTS)
    name = full_name(repo)
    new_id = int(world.one("SELECT MAX(id) AS n FROM issues")["n"]) + 1  # type: ignore[index]
    who = (
        ""
        if assignee is None
        else (" and assign it to me" if assignee == user else f" and assign it to {assignee}")
    )
    said = f" Description: {body}" if body else ""
    phrasing, prompt = kit.phrase(rng, TEXTS["OPEN_LABELED_ISSUE"], name=name, title=title, kind=kind, who=who,
                                  said=said)
    arguments: dict[str, Any] = {"repo": name, "title": title, "body": body, "labels": [kind]}
    if assignee:
        arguments["assignee"] = assignee
    where: dict[str, Any] = {"repo_id": repo["id"], "title": title, "state": "open", "author": user}
    if assignee:
        where["assignee"] = assignee
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[kit.call("create_issue", **arguments)],
        expected_answer=f"I opened the issue '{title}' in {name} with the label '{kind}'.",
        checks=[
            has_row("issues", where, "issue opened", weight=2, count=1),
            has_row("issue_labels", {"issue_id": new_id, "label_id": label["id"]}, "label set"),
            only("only the issue and its label", [
                inserted("issues", {"repo_id": repo["id"], "title": title}),
                inserted("issue_labels", {"issue_id": new_id, "label_id": label["id"]}),
            ]),
        ],
        difficulty=1,
        metadata={"phrasing": phrasing, "new_issue_id": new_id},
    )


def comment_on_issue(rng: random.Random, world: World) -> TaskDraft | None:
    """Post a given comment on an open issue."""
    repo = rng.choice(all_repos(world))
    issues = open_issues(world, repo["id"])
    if not issues:
        return None
    issue = rng.choice(issues)
    user = rng.choice(members(world, repo["id"]))
    text = rng.choice(COMMENT_TEXTS)
    name, number = full_name(repo), issue["number"]
    phrasing, prompt = kit.phrase(rng, TEXTS["COMMENT_ON_ISSUE"], number=number, name=name, text=text)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[kit.call("comment_on_issue", repo=name, number=number, body=text)],
        expected_answer=f"I commented on issue #{number} in {name}.",
        checks=[
            has_row("comments", {"issue_id": issue["id"], "author": user, "body": text},
                    "comment posted", weight=2, count=1),
            only("only the comment", [inserted("comments", {"issue_id": issue["id"], "author": user})]),
        ],
        difficulty=1,
        metadata={"phrasing": phrasing},
    )


def assign_oldest_issue(rng: random.Random, world: World) -> TaskDraft | None:
    """Find the oldest (or newest) open issue with a label and assign it to a named collaborator."""
    repo = rng.choice(all_repos(world))
    label = rng.choice(["bug", "bug", "enhancement", "documentation", "question"])
    issues = open_issues_with_label(world, repo["id"], label)
    if len(issues) < 2:
        return None
    oldest = rng.random() < 0.65
    target = issues[0] if oldest else issues[-1]
    writers = members(world, repo["id"], WRITE)
    user = rng.choice(writers)
    assignee = rng.choice(members(world, repo["id"]))
    if target["assignee"] == assignee:
        return None
    name, what = full_name(repo), label_phrase(label)
    age = "oldest" if oldest else "most recently opened"
    phrasing, prompt = kit.phrase(rng, TEXTS["ASSIGN_OLDEST_ISSUE"], age=age, what=what, name=name,
                                  assignee=assignee)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[
            kit.call(
                "search_issues", repo=name, state="open", label=label, sort="oldest" if oldest else "newest"
            ),
            kit.call("assign_issue", repo=name, number=target["number"], assignee=assignee),
        ],
        expected_answer=f"I assigned issue #{target['number']} ('{target['title']}') in {name} to {assignee}.",
        checks=assignment_checks(target["id"], assignee, "right issue assigned"),
        difficulty=2,
        metadata={"phrasing": phrasing},
    )


def close_with_comment(rng: random.Random, world: World) -> TaskDraft | None:
    """Comment on an open issue and close it."""
    repo = rng.choice(all_repos(world))
    issues = open_issues(world, repo["id"])
    if not issues:
        return None
    issue = rng.choice(issues)
    user = rng.choice(members(world, repo["id"], WRITE))
    text = rng.choice(CLOSE_TEXTS)
    name, number = full_name(repo), issue["number"]
    phrasing, prompt = kit.phrase(rng, TEXTS["CLOSE_WITH_COMMENT"], number=number, name=name, text=text)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[
            kit.call("comment_on_issue", repo=name, number=number, body=text),
            kit.call("close_issue", repo=name, number=number),
        ],
        expected_answer=f"I commented on issue #{number} in {name} and closed it.",
        checks=[
            field_is("issues", {"id": issue["id"]}, "state", "closed", "issue closed", weight=2),
            has_row("comments", {"issue_id": issue["id"], "author": user, "body": text}, "comment posted", count=1),
            only("only the comment and the close", [
                updated("issues", {"id": issue["id"]}, ["state", "closed_at", "closed_by"]),
                inserted("comments", {"issue_id": issue["id"], "author": user}),
            ]),
        ],
        difficulty=2,
        metadata={"phrasing": phrasing},
    )


def no_write_access(rng: random.Random, world: World) -> TaskDraft | None:
    """Close, label or assign an issue in a repository where the user has at most read access."""
    repo = rng.choice(world.query("SELECT * FROM repos WHERE visibility='public' ORDER BY id"))
    issues = open_issues(world, repo["id"])
    if not issues:
        return None
    issue = rng.choice(issues)
    readers = members(world, repo["id"], ("read",))
    others = [
        r["username"]
        for r in world.query(
            "SELECT DISTINCT username FROM collaborators WHERE username NOT IN "
            "(SELECT username FROM collaborators WHERE repo_id=?) ORDER BY username",
            (repo["id"],),
        )
    ]
    user = rng.choice(readers if readers and rng.random() < 0.4 else others)
    name, number = full_name(repo), issue["number"]
    action = rng.choice(["close", "label", "assign"])
    tool_name = {"close": "close_issue", "label": "add_issue_label", "assign": "assign_issue"}[action]
    phrasing, prompt = kit.phrase(rng, TEXTS["NO_WRITE_ACCESS"][action], number=number, name=name,
                                  repo_owner=repo["owner"])
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[kit.call("get_repo", repo=name)],
        expected_answer=f"I cannot {action} issue #{number} in {name}: you need write access to that repository.",
        checks=kit.impossible_checks(tool_name, reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata={"phrasing": f"{action}/{phrasing}", "action": action},
    )
