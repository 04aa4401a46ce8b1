"""code_host tools over repositories and issues: browse, search, open, comment, label, assign, close and
set milestones."""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, tool
from toolgym.envs.apps.code_host.tool_common import (
    check_limit,
    find_issue,
    find_label,
    find_milestone,
    find_repo,
    find_username,
    issue_summary,
    labels_of_issue,
    next_number,
    permission_of,
    repo_full_name,
    require_write,
    viewer,
)


@tool
def list_repos(ctx: ToolContext, owner: str | None = None) -> list[dict]:
    """List repositories: those of `owner`, or, without it, the ones you own or collaborate on.

    Args:
        owner: Username whose repositories to list; leave out (or 'me') for your own repositories.
    """
    if owner is None or owner.strip().lower() == "me":
        user = ctx.env.require_user()
        rows = ctx.query(
            "SELECT r.*, c.permission FROM repos r JOIN collaborators c ON c.repo_id = r.id "
            "WHERE c.username=? ORDER BY r.owner, r.name",
            (user,),
        )
    else:
        username = find_username(ctx, owner, "owner")
        rows = [
            dict(r, permission=permission_of(ctx, r["id"], viewer(ctx)))
            for r in ctx.query("SELECT * FROM repos WHERE owner=? ORDER BY name", (username,))
        ]
        rows = [r for r in rows if r["visibility"] == "public" or r["permission"] is not None]
    return [
        {
            "repo": repo_full_name(r),
            "description": r["description"],
            "language": r["language"],
            "stars": r["stars"],
            "visibility": r["visibility"],
            "your_permission": r["permission"] or "none",
        }
        for r in rows
    ]


@tool
def get_repo(ctx: ToolContext, repo: str) -> dict:
    """Details of a repository: collaborators and their permissions, labels, counts, your own access.

    Args:
        repo: Repository as 'owner/name'.
    """
    row = find_repo(ctx, repo)
    open_issues = ctx.one("SELECT COUNT(*) AS n FROM issues WHERE repo_id=? AND state='open'", (row["id"],))
    open_prs = ctx.one(
        "SELECT COUNT(*) AS n FROM pull_requests WHERE repo_id=? AND state='open'", (row["id"],)
    )
    return {
        "repo": repo_full_name(row),
        "description": row["description"],
        "language": row["language"],
        "stars": row["stars"],
        "visibility": row["visibility"],
        "default_branch": row["default_branch"],
        "created_at": row["created_at"],
        "your_permission": permission_of(ctx, row["id"], viewer(ctx)) or "none",
        "collaborators": ctx.query(
            "SELECT username, permission FROM collaborators WHERE repo_id=? ORDER BY username", (row["id"],)
        ),
        "labels": [
            r["name"]
            for r in ctx.query("SELECT name FROM labels WHERE repo_id=? ORDER BY name", (row["id"],))
        ],
        "open_issues": open_issues["n"] if open_issues else 0,
        "open_pull_requests": open_prs["n"] if open_prs else 0,
    }


@tool
def list_milestones(ctx: ToolContext, repo: str, due: str | None = None) -> list[dict]:
    """List a repository's milestones with due dates and open-issue counts, soonest due first.

    Args:
        repo: Repository as 'owner/name'.
        due: Only the milestone due on this date: YYYY-MM-DD, 'today', 'tomorrow', 'next Friday'.
    """
    row = find_repo(ctx, repo)
    params: list[Any] = [row["id"]]
    where = "m.repo_id=?"
    if due is not None:
        where += " AND m.due_date=?"
        params.append(ctx.env.date(due))
    return ctx.query(
        "SELECT m.title, m.due_date, m.state, "
        "(SELECT COUNT(*) FROM issues i WHERE i.milestone_id = m.id AND i.state='open') AS open_issues "
        f"FROM milestones m WHERE {where} ORDER BY m.due_date, m.title",
        params,
    )


@tool
def search_issues(
    ctx: ToolContext,
    repo: str | None = None,
    state: Literal["open", "closed", "all"] = "open",
    label: str | None = None,
    assignee: str | None = None,
    milestone: str | None = None,
    sort: Literal["newest", "oldest"] = "newest",
    limit: int = 20,
) -> dict:
    """Search issues (not pull requests) in one repository, or in every repository you can see.

    Args:
        repo: Repository as 'owner/name'; leave out to search all repositories visible to you.
        state: 'open' (default), 'closed' or 'all'.
        label: Only issues with this label, e.g. 'bug'.
        assignee: Only issues assigned to this username; 'me' for yourself, 'none' for unassigned.
        milestone: Only issues in this milestone (title); needs `repo`.
        sort: 'newest' (default) or 'oldest' first, by creation date.
        limit: Most issues to return (1-50, default 20); total_count counts all matches.
    """
    check_limit(limit)
    where: list[str] = []
    params: list[Any] = []
    if repo is not None:
        target = find_repo(ctx, repo)
        where.append("i.repo_id=?")
        params.append(target["id"])
    else:
        where.append(
            "(r.visibility='public' OR EXISTS (SELECT 1 FROM collaborators c "
            "WHERE c.repo_id = r.id AND c.username=?))"
        )
        params.append(viewer(ctx) or "")
    if state != "all":
        where.append("i.state=?")
        params.append(state)
    if label is not None:
        where.append(
            "EXISTS (SELECT 1 FROM issue_labels il JOIN labels l ON l.id = il.label_id "
            "WHERE il.issue_id = i.id AND lower(l.name)=lower(?))"
        )
        params.append(label.strip())
    if assignee is not None:
        if assignee.strip().lower() == "none":
            where.append("i.assignee IS NULL")
        else:
            where.append("i.assignee=?")
            params.append(find_username(ctx, assignee, "assignee"))
    if milestone is not None:
        if repo is None:
            raise ToolError("argument 'milestone' needs 'repo': milestone titles are per repository")
        where.append("i.milestone_id=?")
        params.append(find_milestone(ctx, target, milestone)["id"])
    order = "i.created_at DESC, i.id DESC" if sort == "newest" else "i.created_at ASC, i.id ASC"
    source = f"FROM issues i JOIN repos r ON r.id = i.repo_id WHERE {' AND '.join(where)}"
    total = ctx.one(f"SELECT COUNT(*) AS n {source}", params)
    rows = ctx.query(
        f"SELECT i.*, r.owner || '/' || r.name AS repo_name {source} ORDER BY {order} LIMIT ?",
        [*params, limit],
    )
    return {
        "total_count": total["n"] if total else 0,
        "issues": [issue_summary(ctx, r, r["repo_name"]) for r in rows],
    }


@tool
def get_issue(ctx: ToolContext, repo: str, number: int) -> dict:
    """One issue with its body, labels, milestone and comments (latest 10).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number, e.g. 12 for #12.
    """
    target = find_repo(ctx, repo)
    issue = find_issue(ctx, target, number)
    comments = ctx.query(
        "SELECT author, body, created_at FROM comments WHERE issue_id=? ORDER BY id DESC LIMIT 10",
        (issue["id"],),
    )
    return {
        **issue_summary(ctx, issue, repo_full_name(target)),
        "body": issue["body"],
        "closed_at": issue["closed_at"],
        "closed_by": issue["closed_by"],
        "comments": comments[::-1],
    }


@tool
def create_issue(
    ctx: ToolContext,
    repo: str,
    title: str,
    body: str = "",
    labels: list[str] | None = None,
    assignee: str | None = None,
) -> dict:
    """Open a new issue as yourself. Anyone who can see a repository may open one; setting labels or an
    assignee at creation needs write access.

    Args:
        repo: Repository as 'owner/name'.
        title: Issue title.
        body: Issue description.
        labels: Existing label names of the repository, e.g. ['bug'].
        assignee: Username of a collaborator to assign ('me' for yourself).
    """
    target = find_repo(ctx, repo)
    user = ctx.env.require_user()
    if not title.strip():
        raise ToolError("argument 'title' must not be empty")
    label_rows = [find_label(ctx, target, name, "labels") for name in dict.fromkeys(labels or [])]
    assignee_name = find_username(ctx, assignee, "assignee") if assignee else None
    if label_rows or assignee_name:
        require_write(ctx, target, "set labels or an assignee")
    if assignee_name and permission_of(ctx, target["id"], assignee_name) is None:
        raise ToolError(f"argument 'assignee': {assignee_name} is not a collaborator of {repo_full_name(target)}")
    number = next_number(ctx, target["id"])
    issue_id = ctx.db.execute(
        "INSERT INTO issues(repo_id, number, title, body, state, author, assignee, created_at) "
        "VALUES (?, ?, ?, ?, 'open', ?, ?, ?)",
        (target["id"], number, title.strip(), body, user, assignee_name, ctx.env.today.isoformat()),
    ).lastrowid
    for label in {r["id"]: r for r in label_rows}.values():
        ctx.db.execute("INSERT INTO issue_labels(issue_id, label_id) VALUES (?, ?)", (issue_id, label["id"]))
    return {
        "repo": repo_full_name(target),
        "number": number,
        "title": title.strip(),
        "state": "open",
        "labels": sorted(r["name"] for r in label_rows),
        "assignee": assignee_name,
    }


@tool
def comment_on_issue(ctx: ToolContext, repo: str, number: int, body: str) -> dict:
    """Add a comment to an issue as yourself (anyone who can see the repository may comment).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number.
        body: Text of the comment.
    """
    target = find_repo(ctx, repo)
    issue = find_issue(ctx, target, number)
    user = ctx.env.require_user()
    if not body.strip():
        raise ToolError("argument 'body' must not be empty")
    ctx.db.execute(
        "INSERT INTO comments(issue_id, author, body, created_at) VALUES (?, ?, ?, ?)",
        (issue["id"], user, body, ctx.env.today.isoformat()),
    )
    return {"repo": repo_full_name(target), "number": number, "author": user, "body": body}


@tool
def add_issue_label(ctx: ToolContext, repo: str, number: int, label: str) -> dict:
    """Add an existing label to an issue (needs write access).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number.
        label: Label name, e.g. 'bug' or 'help wanted'.
    """
    target = find_repo(ctx, repo)
    issue = find_issue(ctx, target, number)
    row = find_label(ctx, target, label, "label")
    require_write(ctx, target, "label issues")
    ctx.db.execute(
        "INSERT OR IGNORE INTO issue_labels(issue_id, label_id) VALUES (?, ?)", (issue["id"], row["id"])
    )
    return {"repo": repo_full_name(target), "number": number, "labels": labels_of_issue(ctx, issue["id"])}


@tool
def assign_issue(ctx: ToolContext, repo: str, number: int, assignee: str) -> dict:
    """Assign an issue to a collaborator of the repository, replacing any assignee (needs write access).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number.
        assignee: Username of a collaborator; 'me' for yourself.
    """
    target = find_repo(ctx, repo)
    issue = find_issue(ctx, target, number)
    username = find_username(ctx, assignee, "assignee")
    require_write(ctx, target, "assign issues")
    if permission_of(ctx, target["id"], username) is None:
        raise ToolError(
            f"argument 'assignee': {username} is not a collaborator of {repo_full_name(target)}; "
            "see get_repo for who is"
        )
    ctx.db.execute("UPDATE issues SET assignee=? WHERE id=?", (username, issue["id"]))
    return {"repo": repo_full_name(target), "number": number, "title": issue["title"], "assignee": username}


@tool
def close_issue(ctx: ToolContext, repo: str, number: int) -> dict:
    """Close an open issue (needs write access).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number.
    """
    target = find_repo(ctx, repo)
    issue = find_issue(ctx, target, number)
    user = require_write(ctx, target, "close issues")
    if issue["state"] == "closed":
        raise ToolError(
            f"issue #{number} in {repo_full_name(target)} is already closed (on {issue['closed_at']})"
        )
    ctx.db.execute(
        "UPDATE issues SET state='closed', closed_at=?, closed_by=? WHERE id=?",
        (ctx.env.today.isoformat(), user, issue["id"]),
    )
    return {"repo": repo_full_name(target), "number": number, "title": issue["title"], "state": "closed"}


@tool
def set_issue_milestone(ctx: ToolContext, repo: str, number: int, milestone: str) -> dict:
    """Put an issue into a milestone of its repository, replacing any previous one (needs write access).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number.
        milestone: Milestone title, e.g. 'v1.5' (see list_milestones).
    """
    target = find_repo(ctx, repo)
    issue = find_issue(ctx, target, number)
    row = find_milestone(ctx, target, milestone)
    require_write(ctx, target, "set milestones")
    ctx.db.execute("UPDATE issues SET milestone_id=? WHERE id=?", (row["id"], issue["id"]))
    return {
        "repo": repo_full_name(target),
        "number": number,
        "milestone": row["title"],
        "due_date": row["due_date"],
    }
