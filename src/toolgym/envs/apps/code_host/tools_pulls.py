"""code_host tools over pull requests: list, read, review and merge (merging needs green CI, an approval
and write access)."""

from __future__ import annotations

from typing import Literal

from toolgym.envs import ToolContext, ToolError, tool
from toolgym.envs.apps.code_host.rules import approvals_of
from toolgym.envs.apps.code_host.tool_common import (
    MAX_LIMIT,
    find_pull,
    find_repo,
    pull_summary,
    repo_full_name,
    require_write,
)


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
    target = find_repo(ctx, repo)
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
        "pull_requests": [pull_summary(ctx, r, repo_full_name(target)) for r in rows[:MAX_LIMIT]],
    }


@tool
def get_pull_request(ctx: ToolContext, repo: str, number: int) -> dict:
    """One pull request with its CI status, reviews and merge details.

    Args:
        repo: Repository as 'owner/name'.
        number: Pull request number, e.g. 7 for #7.
    """
    target = find_repo(ctx, repo)
    pr = find_pull(ctx, target, number)
    reviews = ctx.query(
        "SELECT reviewer, state, body, created_at FROM reviews WHERE pr_id=? ORDER BY id", (pr["id"],)
    )
    return {
        **pull_summary(ctx, pr, repo_full_name(target)),
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
    target = find_repo(ctx, repo)
    pr = find_pull(ctx, target, number)
    user = ctx.env.require_user()
    if pr["state"] != "open":
        raise ToolError(
            f"pull request #{number} in {repo_full_name(target)} is {pr['state']}; only open ones can be reviewed"
        )
    if event != "approve" and not body.strip():
        raise ToolError(f"argument 'body' must not be empty for a '{event}' review")
    if event != "comment":
        require_write(ctx, target, "approve or request changes")
        if pr["author"] == user:
            raise ToolError(f"you cannot {event.replace('_', ' ')} on your own pull request #{number}")
    state = {"approve": "approved", "request_changes": "changes_requested", "comment": "commented"}[event]
    ctx.db.execute(
        "INSERT INTO reviews(pr_id, reviewer, state, body, created_at) VALUES (?, ?, ?, ?, ?)",
        (pr["id"], user, state, body, ctx.env.today.isoformat()),
    )
    return {
        "repo": repo_full_name(target),
        "number": number,
        "reviewer": user,
        "state": state,
        "approvals": approvals_of(ctx, pr["id"]),
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
    target = find_repo(ctx, repo)
    pr = find_pull(ctx, target, number)
    user = require_write(ctx, target, "merge pull requests")
    name = f"pull request #{number} in {repo_full_name(target)}"
    if pr["state"] != "open":
        raise ToolError(f"{name} is already {pr['state']}; only open pull requests can be merged")
    if pr["ci_status"] != "passing":
        raise ToolError(f"{name} cannot be merged: its CI is {pr['ci_status']}; CI must pass first")
    if not approvals_of(ctx, pr["id"]):
        raise ToolError(f"{name} cannot be merged: it has no approving review yet")
    ctx.db.execute(
        "UPDATE pull_requests SET state='merged', merged_at=?, merged_by=?, merge_method=? WHERE id=?",
        (ctx.env.today.isoformat(), user, merge_method, pr["id"]),
    )
    return {
        "repo": repo_full_name(target),
        "number": number,
        "title": pr["title"],
        "state": "merged",
        "merge_method": merge_method,
        "merged_by": user,
    }
