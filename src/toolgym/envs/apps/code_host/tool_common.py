"""What the code_host tools share: who may see and write a repository, lookups of repositories, issues,
pull requests, labels and milestones that name the argument on failure, and the summaries tools return."""

from __future__ import annotations

from typing import Any

from toolgym.envs import ToolContext, ToolError
from toolgym.envs.apps.code_host.rules import approvals_of

MAX_LIMIT = 50
WRITE_PERMISSIONS = ("write", "admin")


def viewer(ctx: ToolContext) -> str | None:
    return ctx.env.user


def repo_full_name(repo: dict[str, Any]) -> str:
    return f"{repo['owner']}/{repo['name']}"


def permission_of(ctx: ToolContext, repo_id: int, username: str | None) -> str | None:
    if username is None:
        return None
    row = ctx.one("SELECT permission FROM collaborators WHERE repo_id=? AND username=?", (repo_id, username))
    return row["permission"] if row else None


def is_visible(ctx: ToolContext, repo: dict[str, Any]) -> bool:
    return repo["visibility"] == "public" or permission_of(ctx, repo["id"], viewer(ctx)) is not None


def find_repo(ctx: ToolContext, ref: str, arg: str = "repo") -> dict[str, Any]:
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
        if row is None or not is_visible(ctx, row):
            raise ToolError(not_found)
        return row
    matches = [
        r
        for r in ctx.query("SELECT * FROM repos WHERE lower(name)=lower(?) ORDER BY owner", (text,))
        if is_visible(ctx, r)
    ]
    if not matches:
        raise ToolError(not_found)
    if len(matches) > 1:
        options = ", ".join(repo_full_name(r) for r in matches)
        raise ToolError(
            f"argument '{arg}': several repositories are named {text!r} ({options}); give 'owner/name'"
        )
    return matches[0]


def require_write(ctx: ToolContext, repo: dict[str, Any], action: str) -> str:
    user = ctx.env.require_user()
    permission = permission_of(ctx, repo["id"], user)
    if permission not in WRITE_PERMISSIONS:
        have = f"only '{permission}' access" if permission else "no collaborator access"
        raise ToolError(
            f"you ({user}) cannot {action} in {repo_full_name(repo)}: it needs write access and you have {have}"
        )
    return user


def find_username(ctx: ToolContext, name: str, arg: str) -> str:
    text = name.strip().lstrip("@")
    if text.lower() == "me":
        return ctx.env.require_user()
    row = ctx.one("SELECT username FROM users WHERE lower(username)=lower(?)", (text,))
    if row is None:
        raise ToolError(f"argument '{arg}': no user named {name!r}; use a username like 'jane.doe'")
    return row["username"]


def pull_number_taken(ctx: ToolContext, repo: dict[str, Any], number: int) -> bool:
    return (
        ctx.one("SELECT 1 FROM pull_requests WHERE repo_id=? AND number=?", (repo["id"], number)) is not None
    )


def find_issue(ctx: ToolContext, repo: dict[str, Any], number: int) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM issues WHERE repo_id=? AND number=?", (repo["id"], number))
    if row is None:
        if pull_number_taken(ctx, repo, number):
            raise ToolError(
                f"argument 'number': #{number} in {repo_full_name(repo)} is a pull request, not an issue; "
                "use the pull request tools"
            )
        raise ToolError(f"argument 'number': {repo_full_name(repo)} has no issue #{number}")
    return row


def find_pull(ctx: ToolContext, repo: dict[str, Any], number: int) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM pull_requests WHERE repo_id=? AND number=?", (repo["id"], number))
    if row is None:
        if ctx.one("SELECT 1 FROM issues WHERE repo_id=? AND number=?", (repo["id"], number)):
            raise ToolError(
                f"argument 'number': #{number} in {repo_full_name(repo)} is an issue, not a pull request; "
                "use the issue tools"
            )
        raise ToolError(f"argument 'number': {repo_full_name(repo)} has no pull request #{number}")
    return row


def find_label(ctx: ToolContext, repo: dict[str, Any], name: str, arg: str) -> dict[str, Any]:
    return _find_named(ctx, repo, "labels", "name", name, arg, "label")


def find_milestone(ctx: ToolContext, repo: dict[str, Any], title: str) -> dict[str, Any]:
    return _find_named(ctx, repo, "milestones", "title", title, "milestone", "milestone")


def _find_named(
    ctx: ToolContext, repo: dict[str, Any], table: str, column: str, value: str, arg: str, noun: str
) -> dict[str, Any]:
    """A repository's label or milestone by its name (any case); failing, the error lists the names it has."""
    row = ctx.one(
        f"SELECT * FROM {table} WHERE repo_id=? AND lower({column})=lower(?)", (repo["id"], value.strip())
    )
    if row is None:
        names = ", ".join(
            r[column]
            for r in ctx.query(f"SELECT {column} FROM {table} WHERE repo_id=? ORDER BY {column}", (repo["id"],))
        )
        raise ToolError(
            f"argument '{arg}': {repo_full_name(repo)} has no {noun} {value!r}; "
            f"its {noun}s are: {names or 'none'}"
        )
    return row


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolError(f"argument 'limit' must be between 1 and {MAX_LIMIT}; got {limit}")
    return limit


def labels_of_issue(ctx: ToolContext, issue_id: int) -> list[str]:
    return [
        r["name"]
        for r in ctx.query(
            "SELECT l.name FROM issue_labels il JOIN labels l ON l.id = il.label_id WHERE il.issue_id=? ORDER BY l.name",
            (issue_id,),
        )
    ]


def milestone_title(ctx: ToolContext, milestone_id: int | None) -> str | None:
    if milestone_id is None:
        return None
    row = ctx.one("SELECT title FROM milestones WHERE id=?", (milestone_id,))
    return row["title"] if row else None


def issue_summary(ctx: ToolContext, issue: dict[str, Any], repo_name: str) -> dict[str, Any]:
    return {
        "repo": repo_name,
        "number": issue["number"],
        "title": issue["title"],
        "state": issue["state"],
        "author": issue["author"],
        "assignee": issue["assignee"],
        "labels": labels_of_issue(ctx, issue["id"]),
        "milestone": milestone_title(ctx, issue["milestone_id"]),
        "created_at": issue["created_at"],
    }


def next_number(ctx: ToolContext, repo_id: int) -> int:
    row = ctx.one(
        "SELECT MAX(n) AS n FROM (SELECT MAX(number) AS n FROM issues WHERE repo_id=? "
        "UNION ALL SELECT MAX(number) FROM pull_requests WHERE repo_id=?)",
        (repo_id, repo_id),
    )
    return int(row["n"] or 0) + 1 if row else 1


def pull_summary(ctx: ToolContext, pr: dict[str, Any], repo_name: str) -> dict[str, Any]:
    return {
        "repo": repo_name,
        "number": pr["number"],
        "title": pr["title"],
        "state": pr["state"],
        "author": pr["author"],
        "head_branch": pr["head_branch"],
        "base_branch": pr["base_branch"],
        "ci_status": pr["ci_status"],
        "approvals": approvals_of(ctx, pr["id"]),
        "created_at": pr["created_at"],
    }
