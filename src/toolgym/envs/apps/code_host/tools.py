"""code_host tools: browse repositories, triage issues, review and merge pull requests.

Access follows GitHub: a private repository is invisible to non-collaborators; labelling,
assigning, closing, milestones, approving and merging need write access (a `write` or `admin`
collaborator; the owner is an `admin`). Every write is dated CURRENT_DATE and done as
LOGGED_IN_USER.
"""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, tool

MAX_LIMIT = 50
WRITE_PERMISSIONS = ("write", "admin")


# ---------------------------------------------------------------- lookups shared by the tools


def _viewer(ctx: ToolContext) -> str | None:
    return ctx.env.user


def _full_name(repo: dict[str, Any]) -> str:
    return f"{repo['owner']}/{repo['name']}"


def _permission(ctx: ToolContext, repo_id: int, username: str | None) -> str | None:
    if username is None:
        return None
    row = ctx.one("SELECT permission FROM collaborators WHERE repo_id=? AND username=?", (repo_id, username))
    return row["permission"] if row else None


def _visible(ctx: ToolContext, repo: dict[str, Any]) -> bool:
    return repo["visibility"] == "public" or _permission(ctx, repo["id"], _viewer(ctx)) is not None


def _repo(ctx: ToolContext, ref: str, arg: str = "repo") -> dict[str, Any]:
    """A repository from 'owner/name' (or a bare name that only one visible repository has)."""
    text = ref.strip().strip("/")
    if text.lower().startswith("https://"):
        text = "/".join(text.split("/")[-2:])
    not_found = (
        f"argument '{arg}': repository {ref!r} not found (it does not exist or is private); "
        "give it as 'owner/name', e.g. from list_repos"
    )
    if "/" in text:
        owner, _, name = text.partition("/")
        row = ctx.one(
            "SELECT * FROM repos WHERE lower(owner)=lower(?) AND lower(name)=lower(?)", (owner, name)
        )
        if row is None or not _visible(ctx, row):
            raise ToolError(not_found)
        return row
    matches = [
        r
        for r in ctx.query("SELECT * FROM repos WHERE lower(name)=lower(?) ORDER BY owner", (text,))
        if _visible(ctx, r)
    ]
    if not matches:
        raise ToolError(not_found)
    if len(matches) > 1:
        options = ", ".join(_full_name(r) for r in matches)
        raise ToolError(
            f"argument '{arg}': several repositories are named {text!r} ({options}); give 'owner/name'"
        )
    return matches[0]


def _require_write(ctx: ToolContext, repo: dict[str, Any], action: str) -> str:
    user = ctx.env.require_user()
    permission = _permission(ctx, repo["id"], user)
    if permission not in WRITE_PERMISSIONS:
        have = f"only '{permission}' access" if permission else "no collaborator access"
        raise ToolError(
            f"you ({user}) cannot {action} in {_full_name(repo)}: it needs write access and you have {have}"
        )
    return user


def _username(ctx: ToolContext, name: str, arg: str) -> str:
    text = name.strip().lstrip("@")
    if text.lower() == "me":
        return ctx.env.require_user()
    row = ctx.one("SELECT username FROM users WHERE lower(username)=lower(?)", (text,))
    if row is None:
        raise ToolError(f"argument '{arg}': no user named {name!r}; use a username like 'jane.doe'")
    return row["username"]


def _pull_number(ctx: ToolContext, repo: dict[str, Any], number: int) -> bool:
    return (
        ctx.one("SELECT 1 FROM pull_requests WHERE repo_id=? AND number=?", (repo["id"], number)) is not None
    )


def _issue(ctx: ToolContext, repo: dict[str, Any], number: int) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM issues WHERE repo_id=? AND number=?", (repo["id"], number))
    if row is None:
        if _pull_number(ctx, repo, number):
            raise ToolError(
                f"argument 'number': #{number} in {_full_name(repo)} is a pull request, not an issue; "
                "use the pull request tools"
            )
        raise ToolError(f"argument 'number': {_full_name(repo)} has no issue #{number}")
    return row


def _pull(ctx: ToolContext, repo: dict[str, Any], number: int) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM pull_requests WHERE repo_id=? AND number=?", (repo["id"], number))
    if row is None:
        if ctx.one("SELECT 1 FROM issues WHERE repo_id=? AND number=?", (repo["id"], number)):
            raise ToolError(
                f"argument 'number': #{number} in {_full_name(repo)} is an issue, not a pull request; "
                "use the issue tools"
            )
        raise ToolError(f"argument 'number': {_full_name(repo)} has no pull request #{number}")
    return row


def _label(ctx: ToolContext, repo: dict[str, Any], name: str, arg: str) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM labels WHERE repo_id=? AND lower(name)=lower(?)", (repo["id"], name.strip()))
    if row is None:
        names = ", ".join(
            r["name"]
            for r in ctx.query("SELECT name FROM labels WHERE repo_id=? ORDER BY name", (repo["id"],))
        )
        raise ToolError(
            f"argument '{arg}': {_full_name(repo)} has no label {name!r}; its labels are: {names}"
        )
    return row


def _milestone(ctx: ToolContext, repo: dict[str, Any], title: str) -> dict[str, Any]:
    row = ctx.one(
        "SELECT * FROM milestones WHERE repo_id=? AND lower(title)=lower(?)", (repo["id"], title.strip())
    )
    if row is None:
        titles = ", ".join(
            r["title"]
            for r in ctx.query("SELECT title FROM milestones WHERE repo_id=? ORDER BY title", (repo["id"],))
        )
        raise ToolError(
            f"argument 'milestone': {_full_name(repo)} has no milestone {title!r}; "
            f"its milestones are: {titles or 'none'}"
        )
    return row


def _check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolError(f"argument 'limit' must be between 1 and {MAX_LIMIT}; got {limit}")
    return limit


def _issue_labels(ctx: ToolContext, issue_id: int) -> list[str]:
    return [
        r["name"]
        for r in ctx.query(
            "SELECT l.name FROM issue_labels il JOIN labels l ON l.id = il.label_id WHERE il.issue_id=? ORDER BY l.name",
            (issue_id,),
        )
    ]


def _milestone_title(ctx: ToolContext, milestone_id: int | None) -> str | None:
    if milestone_id is None:
        return None
    row = ctx.one("SELECT title FROM milestones WHERE id=?", (milestone_id,))
    return row["title"] if row else None


def _issue_summary(ctx: ToolContext, issue: dict[str, Any], repo_name: str) -> dict[str, Any]:
    return {
        "repo": repo_name,
        "number": issue["number"],
        "title": issue["title"],
        "state": issue["state"],
        "author": issue["author"],
        "assignee": issue["assignee"],
        "labels": _issue_labels(ctx, issue["id"]),
        "milestone": _milestone_title(ctx, issue["milestone_id"]),
        "created_at": issue["created_at"],
    }


def _approvals(ctx: ToolContext, pr_id: int) -> list[str]:
    """Reviewers whose latest approve/request-changes review is an approval (comments don't count)."""
    latest: dict[str, str] = {}
    for row in ctx.query(
        "SELECT reviewer, state FROM reviews WHERE pr_id=? AND state != 'commented' ORDER BY id", (pr_id,)
    ):
        latest[row["reviewer"]] = row["state"]
    return sorted(r for r, s in latest.items() if s == "approved")


def _next_number(ctx: ToolContext, repo_id: int) -> int:
    row = ctx.one(
        "SELECT MAX(n) AS n FROM (SELECT MAX(number) AS n FROM issues WHERE repo_id=? "
        "UNION ALL SELECT MAX(number) FROM pull_requests WHERE repo_id=?)",
        (repo_id, repo_id),
    )
    return int(row["n"] or 0) + 1 if row else 1


# ---------------------------------------------------------------- repositories


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
        username = _username(ctx, owner, "owner")
        rows = [
            dict(r, permission=_permission(ctx, r["id"], _viewer(ctx)))
            for r in ctx.query("SELECT * FROM repos WHERE owner=? ORDER BY name", (username,))
        ]
        rows = [r for r in rows if r["visibility"] == "public" or r["permission"] is not None]
    return [
        {
            "repo": _full_name(r),
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
    row = _repo(ctx, repo)
    open_issues = ctx.one("SELECT COUNT(*) AS n FROM issues WHERE repo_id=? AND state='open'", (row["id"],))
    open_prs = ctx.one(
        "SELECT COUNT(*) AS n FROM pull_requests WHERE repo_id=? AND state='open'", (row["id"],)
    )
    return {
        "repo": _full_name(row),
        "description": row["description"],
        "language": row["language"],
        "stars": row["stars"],
        "visibility": row["visibility"],
        "default_branch": row["default_branch"],
        "created_at": row["created_at"],
        "your_permission": _permission(ctx, row["id"], _viewer(ctx)) or "none",
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
    row = _repo(ctx, repo)
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


# ---------------------------------------------------------------- issues


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
    _check_limit(limit)
    where: list[str] = []
    params: list[Any] = []
    if repo is not None:
        target = _repo(ctx, repo)
        where.append("i.repo_id=?")
        params.append(target["id"])
    else:
        where.append(
            "(r.visibility='public' OR EXISTS (SELECT 1 FROM collaborators c "
            "WHERE c.repo_id = r.id AND c.username=?))"
        )
        params.append(_viewer(ctx) or "")
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
            params.append(_username(ctx, assignee, "assignee"))
    if milestone is not None:
        if repo is None:
            raise ToolError("argument 'milestone' needs 'repo': milestone titles are per repository")
        where.append("i.milestone_id=?")
        params.append(_milestone(ctx, target, milestone)["id"])
    order = "i.created_at DESC, i.id DESC" if sort == "newest" else "i.created_at ASC, i.id ASC"
    source = f"FROM issues i JOIN repos r ON r.id = i.repo_id WHERE {' AND '.join(where)}"
    total = ctx.one(f"SELECT COUNT(*) AS n {source}", params)
    rows = ctx.query(
        f"SELECT i.*, r.owner || '/' || r.name AS repo_name {source} ORDER BY {order} LIMIT ?",
        [*params, limit],
    )
    return {
        "total_count": total["n"] if total else 0,
        "issues": [_issue_summary(ctx, r, r["repo_name"]) for r in rows],
    }


@tool
def get_issue(ctx: ToolContext, repo: str, number: int) -> dict:
    """One issue with its body, labels, milestone and comments (latest 10).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number, e.g. 12 for #12.
    """
    target = _repo(ctx, repo)
    issue = _issue(ctx, target, number)
    comments = ctx.query(
        "SELECT author, body, created_at FROM comments WHERE issue_id=? ORDER BY id DESC LIMIT 10",
        (issue["id"],),
    )
    return {
        **_issue_summary(ctx, issue, _full_name(target)),
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
    target = _repo(ctx, repo)
    user = ctx.env.require_user()
    if not title.strip():
        raise ToolError("argument 'title' must not be empty")
    label_rows = [_label(ctx, target, name, "labels") for name in dict.fromkeys(labels or [])]
    assignee_name = _username(ctx, assignee, "assignee") if assignee else None
    if label_rows or assignee_name:
        _require_write(ctx, target, "set labels or an assignee")
    if assignee_name and _permission(ctx, target["id"], assignee_name) is None:
        raise ToolError(f"argument 'assignee': {assignee_name} is not a collaborator of {_full_name(target)}")
    number = _next_number(ctx, target["id"])
    issue_id = ctx.db.execute(
        "INSERT INTO issues(repo_id, number, title, body, state, author, assignee, created_at) "
        "VALUES (?, ?, ?, ?, 'open', ?, ?, ?)",
        (target["id"], number, title.strip(), body, user, assignee_name, ctx.env.today.isoformat()),
    ).lastrowid
    for label in {r["id"]: r for r in label_rows}.values():
        ctx.db.execute("INSERT INTO issue_labels(issue_id, label_id) VALUES (?, ?)", (issue_id, label["id"]))
    return {
        "repo": _full_name(target),
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
    target = _repo(ctx, repo)
    issue = _issue(ctx, target, number)
    user = ctx.env.require_user()
    if not body.strip():
        raise ToolError("argument 'body' must not be empty")
    ctx.db.execute(
        "INSERT INTO comments(issue_id, author, body, created_at) VALUES (?, ?, ?, ?)",
        (issue["id"], user, body, ctx.env.today.isoformat()),
    )
    return {"repo": _full_name(target), "number": number, "author": user, "body": body}


@tool
def add_issue_label(ctx: ToolContext, repo: str, number: int, label: str) -> dict:
    """Add an existing label to an issue (needs write access).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number.
        label: Label name, e.g. 'bug' or 'help wanted'.
    """
    target = _repo(ctx, repo)
    issue = _issue(ctx, target, number)
    row = _label(ctx, target, label, "label")
    _require_write(ctx, target, "label issues")
    ctx.db.execute(
        "INSERT OR IGNORE INTO issue_labels(issue_id, label_id) VALUES (?, ?)", (issue["id"], row["id"])
    )
    return {"repo": _full_name(target), "number": number, "labels": _issue_labels(ctx, issue["id"])}


@tool
def assign_issue(ctx: ToolContext, repo: str, number: int, assignee: str) -> dict:
    """Assign an issue to a collaborator of the repository, replacing any assignee (needs write access).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number.
        assignee: Username of a collaborator; 'me' for yourself.
    """
    target = _repo(ctx, repo)
    issue = _issue(ctx, target, number)
    username = _username(ctx, assignee, "assignee")
    _require_write(ctx, target, "assign issues")
    if _permission(ctx, target["id"], username) is None:
        raise ToolError(
            f"argument 'assignee': {username} is not a collaborator of {_full_name(target)}; "
            "see get_repo for who is"
        )
    ctx.db.execute("UPDATE issues SET assignee=? WHERE id=?", (username, issue["id"]))
    return {"repo": _full_name(target), "number": number, "title": issue["title"], "assignee": username}


@tool
def close_issue(ctx: ToolContext, repo: str, number: int) -> dict:
    """Close an open issue (needs write access).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number.
    """
    target = _repo(ctx, repo)
    issue = _issue(ctx, target, number)
    user = _require_write(ctx, target, "close issues")
    if issue["state"] == "closed":
        raise ToolError(
            f"issue #{number} in {_full_name(target)} is already closed (on {issue['closed_at']})"
        )
    ctx.db.execute(
        "UPDATE issues SET state='closed', closed_at=?, closed_by=? WHERE id=?",
        (ctx.env.today.isoformat(), user, issue["id"]),
    )
    return {"repo": _full_name(target), "number": number, "title": issue["title"], "state": "closed"}


@tool
def set_issue_milestone(ctx: ToolContext, repo: str, number: int, milestone: str) -> dict:
    """Put an issue into a milestone of its repository, replacing any previous one (needs write access).

    Args:
        repo: Repository as 'owner/name'.
        number: Issue number.
        milestone: Milestone title, e.g. 'v1.5' (see list_milestones).
    """
    target = _repo(ctx, repo)
    issue = _issue(ctx, target, number)
    row = _milestone(ctx, target, milestone)
    _require_write(ctx, target, "set milestones")
    ctx.db.execute("UPDATE issues SET milestone_id=? WHERE id=?", (row["id"], issue["id"]))
    return {
        "repo": _full_name(target),
        "number": number,
        "milestone": row["title"],
        "due_date": row["due_date"],
    }


# ---------------------------------------------------------------- pull requests


def _pull_summary(ctx: ToolContext, pr: dict[str, Any], repo_name: str) -> dict[str, Any]:
    return {
        "repo": repo_name,
        "number": pr["number"],
        "title": pr["title"],
        "state": pr["state"],
        "author": pr["author"],
        "head_branch": pr["head_branch"],
        "base_branch": pr["base_branch"],
        "ci_status": pr["ci_status"],
        "approvals": _approvals(ctx, pr["id"]),
        "created_at": pr["created_at"],
    }


@tool
def list_pull_requests(
    ctx: ToolContext,
    repo: str,
    state: Literal["open", "merged", "closed", "all"] = "open",
    ci_status: Literal["passing", "failing"] | None = None,
    sort: Literal["newest", "oldest"] = "newest",
) -> dict:
    """List a repository's pull requests with CI status and approvals.

    Args:
        repo: Repository as 'owner/name'.
        state: 'open' (default), 'merged', 'closed' or 'all'.
        ci_status: Only pull requests whose CI is 'passing' or 'failing'.
        sort: 'newest' (default) or 'oldest' first, by creation date.
    """
    target = _repo(ctx, repo)
    where, params = ["repo_id=?"], [target["id"]]
    if state != "all":
        where.append("state=?")
        params.append(state)
    if ci_status is not None:
        where.append("ci_status=?")
        params.append(ci_status)
    order = "created_at DESC, id DESC" if sort == "newest" else "created_at ASC, id ASC"
    rows = ctx.query(f"SELECT * FROM pull_requests WHERE {' AND '.join(where)} ORDER BY {order}", params)
    return {
        "total_count": len(rows),
        "pull_requests": [_pull_summary(ctx, r, _full_name(target)) for r in rows[:MAX_LIMIT]],
    }


@tool
def get_pull_request(ctx: ToolContext, repo: str, number: int) -> dict:
    """One pull request with its CI status, reviews and merge details.

    Args:
        repo: Repository as 'owner/name'.
        number: Pull request number, e.g. 7 for #7.
    """
    target = _repo(ctx, repo)
    pr = _pull(ctx, target, number)
    reviews = ctx.query(
        "SELECT reviewer, state, body, created_at FROM reviews WHERE pr_id=? ORDER BY id", (pr["id"],)
    )
    return {
        **_pull_summary(ctx, pr, _full_name(target)),
        "body": pr["body"],
        "reviews": reviews,
        "merged_at": pr["merged_at"],
        "merged_by": pr["merged_by"],
        "merge_method": pr["merge_method"],
    }


@tool
def review_pull_request(
    ctx: ToolContext,
    repo: str,
    number: int,
    event: Literal["approve", "request_changes", "comment"],
    body: str = "",
) -> dict:
    """Review an open pull request as yourself. Approving or requesting changes needs write access
    and is not allowed on your own pull request; requesting changes or commenting needs a body.

    Args:
        repo: Repository as 'owner/name'.
        number: Pull request number.
        event: 'approve', 'request_changes' or 'comment'.
        body: Review text.
    """
    target = _repo(ctx, repo)
    pr = _pull(ctx, target, number)
    user = ctx.env.require_user()
    if pr["state"] != "open":
        raise ToolError(
            f"pull request #{number} in {_full_name(target)} is {pr['state']}; only open ones can be reviewed"
        )
    if event != "approve" and not body.strip():
        raise ToolError(f"argument 'body' must not be empty for a '{event}' review")
    if event != "comment":
        _require_write(ctx, target, "approve or request changes")
        if pr["author"] == user:
            raise ToolError(f"you cannot {event.replace('_', ' ')} on your own pull request #{number}")
    state = {"approve": "approved", "request_changes": "changes_requested", "comment": "commented"}[event]
    ctx.db.execute(
        "INSERT INTO reviews(pr_id, reviewer, state, body, created_at) VALUES (?, ?, ?, ?, ?)",
        (pr["id"], user, state, body, ctx.env.today.isoformat()),
    )
    return {
        "repo": _full_name(target),
        "number": number,
        "reviewer": user,
        "state": state,
        "approvals": _approvals(ctx, pr["id"]),
    }


@tool
def merge_pull_request(
    ctx: ToolContext,
    repo: str,
    number: int,
    merge_method: Literal["merge", "squash", "rebase"] = "merge",
) -> dict:
    """Merge an open pull request. Needs write access, passing CI and at least one approval.

    Args:
        repo: Repository as 'owner/name'.
        number: Pull request number.
        merge_method: 'merge' (default), 'squash' or 'rebase'.
    """
    target = _repo(ctx, repo)
    pr = _pull(ctx, target, number)
    user = _require_write(ctx, target, "merge pull requests")
    name = f"pull request #{number} in {_full_name(target)}"
    if pr["state"] != "open":
        raise ToolError(f"{name} is already {pr['state']}; only open pull requests can be merged")
    if pr["ci_status"] != "passing":
        raise ToolError(f"{name} cannot be merged: its CI is {pr['ci_status']}; CI must pass first")
    if not _approvals(ctx, pr["id"]):
        raise ToolError(f"{name} cannot be merged: it has no approving review yet")
    ctx.db.execute(
        "UPDATE pull_requests SET state='merged', merged_at=?, merged_by=?, merge_method=? WHERE id=?",
        (ctx.env.today.isoformat(), user, merge_method, pr["id"]),
    )
    return {
        "repo": _full_name(target),
        "number": number,
        "title": pr["title"],
        "state": "merged",
        "merge_method": merge_method,
        "merged_by": user,
    }


TOOLS = [
    list_repos,
    get_repo,
    list_milestones,
    search_issues,
    get_issue,
    create_issue,
    comment_on_issue,
    add_issue_label,
    assign_issue,
    close_issue,
    set_issue_milestone,
    list_pull_requests,
    get_pull_request,
    review_pull_request,
    merge_pull_request,
]
