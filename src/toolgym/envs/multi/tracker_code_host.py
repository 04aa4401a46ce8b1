"""tracker + code_host: tickets that track real pull requests, and issues that become tickets.

The tracker seed links tickets to code_host pull requests ('owner/repo#12' in `code_ref`) and
projects to repositories, over the same people. Tasks cross that link both ways: merge a ticket's
pull request and close the ticket, approve-then-merge, refuse when the pull request cannot be
merged (failing CI, no approval, no write access) or the ticket cannot be closed (an open blocker),
report a pull request's readiness, and file a code_host issue as a tracker ticket.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import deque
from typing import Any

from toolgym.envs import kit
from toolgym.envs.app import TaskDraft
from toolgym.envs.apps.tracker.data import FIRST_TODAY
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, only, updated
from toolgym.envs.multi.base import (
    MultiTaskFamily,
    Scratch,
    Unusable,
    Worlds,
    choice,
    draft,
    guarded,
    no_change,
    refusal_checks,
)
from toolgym.schema import AnswerContains, DiffOnly

TEXTS = kit.module_texts(__file__)

METHODS = TEXTS["METHODS"]
PRIORITIES = ("Highest", "High", "Medium", "Low", "Lowest")
TICKET_TYPES = ("bug", "task", "story")
WRITE = ("write", "admin")


def _today(rng: random.Random) -> dt.date:
    """After the tracker's seeded activity (which ends the day before FIRST_TODAY)."""
    return kit.random_day(rng, FIRST_TODAY, kit.LAST_DAY)


def _approvals(worlds: Worlds, pr_id: int) -> list[str]:
    """Same rule as code_host: a reviewer's latest approve/request-changes review decides."""
    latest: dict[str, str] = {}
    for row in worlds["code_host"].query(
        "SELECT reviewer, state FROM reviews WHERE pr_id=? AND state != 'commented' ORDER BY id", (pr_id,)
    ):
        latest[row["reviewer"]] = row["state"]
    return sorted(r for r, s in latest.items() if s == "approved")


def linked_tickets(worlds: Worlds) -> list[dict[str, Any]]:
    """Every ticket that names a pull request, with that pull request's state from the code_host seed."""
    tracker, code_host = worlds["tracker"], worlds["code_host"]
    rows = tracker.query(
        "SELECT t.id, t.key, t.status, t.summary, t.project_id, t.code_ref, p.key AS project_key FROM tickets t "
        "JOIN projects p ON p.id = t.project_id WHERE t.code_ref IS NOT NULL ORDER BY t.id"
    )
    linked = []
    for row in rows:
        repo, _, number = row["code_ref"].rpartition("#")
        owner, _, name = repo.partition("/")
        repo_row = code_host.one("SELECT id, visibility FROM repos WHERE owner=? AND name=?", (owner, name))
        if repo_row is None:
            continue
        pr = code_host.one("SELECT * FROM pull_requests WHERE repo_id=? AND number=?", (repo_row["id"], int(number)))
        if pr is None:
            continue
        linked.append({**row, "repo": repo, "repo_id": repo_row["id"], "visibility": repo_row["visibility"],
                       "number": int(number), "pr_id": pr["id"], "pr_state": pr["state"], "ci": pr["ci_status"],
                       "author": pr["author"], "approvals": _approvals(worlds, pr["id"])})
    return linked


def permissions(worlds: Worlds, repo_id: int) -> dict[str, str]:
    return {r["username"]: r["permission"] for r in worlds["code_host"].query(
        "SELECT username, permission FROM collaborators WHERE repo_id=? ORDER BY username", (repo_id,))}


def members(worlds: Worlds, project_id: int) -> list[str]:
    return [r["username"] for r in worlds["tracker"].query(
        "SELECT username FROM project_members WHERE project_id=? ORDER BY username", (project_id,))]


def user_env(worlds: Worlds, username: str, today: dt.date) -> dict[str, str]:
    row = worlds["tracker"].one("SELECT name FROM users WHERE username=?", (username,))
    return kit.env_vars(username, row["name"] if row else username, today)


def path_to_done(scratch: Scratch, project: str, status: str) -> list[str]:
    """The shortest run of allowed transitions from `status` to Done, read from the project's workflow."""
    moves: dict[str, list[str]] = scratch("get_project", project=project)["transitions"]
    seen: dict[str, list[str]] = {status: []}
    queue = deque([status])
    while queue:
        current = queue.popleft()
        if current == "Done":
            return seen[current]
        for target in moves.get(current, []):
            if target not in seen:
                seen[target] = [*seen[current], target]
                queue.append(target)
    raise Unusable(f"no path from {status!r} to Done in {project}")


def _merge_phrase(rng: random.Random) -> tuple[str, str]:
    method = rng.choice(sorted(METHODS))
    return method, rng.choice(METHODS[method])


def _merge_checks(ticket: dict[str, Any], method: str, me: str, approved_by_me: bool) -> list:
    """The pull request merged by me with the asked method, the ticket Done, and nothing else changed."""
    expected = [
        updated("code_host.pull_requests", {"id": ticket["pr_id"]}, ["state", "merged_at", "merged_by", "merge_method"]),
        updated("tracker.tickets", {"id": ticket["id"]}, ["status", "updated_at", "resolved_at"]),
    ]
    checks: list = [
        field_is("code_host.pull_requests", {"id": ticket["pr_id"]},
                "state", "merged", f"{ticket['repo']}#{ticket['number']} merged", weight=2.0),
        field_is("code_host.pull_requests", {"id": ticket["pr_id"]},
                "merge_method", method, f"merged with {method}", weight=1.0),
        field_is("tracker.tickets", {"id": ticket["id"]}, "status", "Done", f"{ticket['key']} is Done", weight=2.0),
    ]
    if approved_by_me:
        expected.append(inserted("code_host.reviews", {"pr_id": ticket["pr_id"], "reviewer": me, "state": "approved"}))
        checks.append(has_row("code_host.reviews", {"pr_id": ticket["pr_id"], "reviewer": me, "state": "approved"}, f"{me} approved the pull request", weight=1.0, count=1))
    checks.append(DiffOnly(expected=expected, weight=2.0, label="only the merge and the ticket changed"))
    checks.append(AnswerContains(values=[ticket["key"]], weight=1.0, label="names the ticket"))
    return checks


# -- families ----------------------------------------------------------------------------------------------

MERGE_PHRASINGS = TEXTS["MERGE_PHRASINGS"]
APPROVE_PHRASINGS = TEXTS["APPROVE_PHRASINGS"]


@guarded
def merge_and_close(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """Merge a ticket's approved, green pull request and walk the ticket to Done (code_host -> tracker)."""
    pool = [t for t in linked_tickets(worlds) if t["pr_state"] == "open" and t["ci"] == "passing" and t["approvals"]]
    ticket = choice(rng, pool)
    access = permissions(worlds, ticket["repo_id"])
    me = choice(rng, [m for m in members(worlds, ticket["project_id"]) if access.get(m) in WRITE])
    return _merge_draft(rng, worlds, ticket, me, approve=False)


@guarded
def approve_merge_and_close(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """Approve a green pull request nobody approved yet (not my own), merge it, close its ticket."""
    pool = [t for t in linked_tickets(worlds)
            if t["pr_state"] == "open" and t["ci"] == "passing" and not t["approvals"]]
    ticket = choice(rng, pool)
    access = permissions(worlds, ticket["repo_id"])
    me = choice(rng, [m for m in members(worlds, ticket["project_id"])
                      if access.get(m) in WRITE and m != ticket["author"]])
    return _merge_draft(rng, worlds, ticket, me, approve=True)


def _merge_draft(rng: random.Random, worlds: Worlds, ticket: dict[str, Any], me: str, approve: bool) -> TaskDraft:
    today = _today(rng)
    env = user_env(worlds, me, today)
    scratch = worlds.scratch(env)
    details = scratch("get_ticket", key=ticket["key"])
    if details["open_blockers"]:
        raise Unusable("the ticket is blocked")
    steps = path_to_done(scratch, ticket["project_key"], details["status"])
    method, how = _merge_phrase(rng)
    writes = [
        *([kit.call("review_pull_request", repo=ticket["repo"], number=ticket["number"], event="approve")] if approve else []),
        kit.call("merge_pull_request", repo=ticket["repo"], number=ticket["number"], merge_method=method),
        *(kit.call("transition_ticket", key=ticket["key"], status=status) for status in steps),
    ]
    scratch.rehearse(writes)
    index, prompt = kit.phrase(rng, APPROVE_PHRASINGS if approve else MERGE_PHRASINGS, key=ticket["key"], how=how)
    via = f" (through {', '.join(steps[:-1])})" if len(steps) > 1 else ""
    answer = (f"{'I approved and merged' if approve else 'I merged'} {ticket['repo']}#{ticket['number']} ({method}) "
              f"and moved {ticket['key']} to Done{via}.")
    return draft(
        prompt, env, [kit.call("get_ticket", key=ticket["key"]),
                      kit.call("get_pull_request", repo=ticket["repo"], number=ticket["number"]), *writes],
        answer,
        _merge_checks(ticket, method, me, approved_by_me=approve), 3 if approve or len(steps) > 1 else 2, index,
        ticket=ticket["key"], pull_request=f"{ticket['repo']}#{ticket['number']}",
    )


IMPOSSIBLE_PHRASINGS = MERGE_PHRASINGS[:3]


@guarded
def merge_and_close_impossible(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """The merge or the Done move is refused by a rule (CI, approval, access, a blocker): change nothing."""
    ticket = choice(rng, [t for t in linked_tickets(worlds) if t["pr_state"] == "open"])
    access = permissions(worlds, ticket["repo_id"])
    team = members(worlds, ticket["project_id"])
    writers = [m for m in team if access.get(m) in WRITE]
    readers = [m for m in team if access.get(m) not in WRITE
               and (ticket["visibility"] == "public" or m in access)]
    if ticket["ci"] == "failing":
        me, kind, reason = choice(rng, writers), "ci_failing", "its CI is failing"
    elif not ticket["approvals"]:
        me, kind, reason = choice(rng, writers), "no_approval", "it has no approving review"
    elif readers and rng.random() < 0.5:
        me, kind = choice(rng, readers), "no_write_access"
        have = access.get(me)
        reason = f"you only have {have} access to {ticket['repo']}" if have else \
            f"you have no write access to {ticket['repo']}"
    else:
        me, kind, reason = choice(rng, writers), "blocked", ""
    today = _today(rng)
    env = user_env(worlds, me, today)
    scratch = worlds.scratch(env)
    details = scratch("get_ticket", key=ticket["key"])
    if kind == "blocked":
        if not details["open_blockers"]:
            raise Unusable("nothing stops this merge")
        reason = f"{ticket['key']} is blocked by unfinished {', '.join(details['open_blockers'])}"
    elif scratch.fails("merge_pull_request", repo=ticket["repo"], number=ticket["number"]) is None:
        raise Unusable("the merge would succeed")
    method, how = _merge_phrase(rng)
    index, prompt = kit.phrase(rng, IMPOSSIBLE_PHRASINGS, key=ticket["key"], how=how)
    return draft(
        prompt, env, [kit.call("get_ticket", key=ticket["key"]),
                      kit.call("get_pull_request", repo=ticket["repo"], number=ticket["number"])],
        f"I cannot merge {ticket['repo']}#{ticket['number']} and close {ticket['key']}: {reason}.",
        refusal_checks(["merge_pull_request", "transition_ticket"]), 2, index,
        ticket=ticket["key"], reason=kind, method=method,
    )


OPEN_PR_PHRASINGS = TEXTS["OPEN_PR_PHRASINGS"]
MERGED_PR_PHRASINGS = TEXTS["MERGED_PR_PHRASINGS"]


@guarded
def pull_request_status(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """Read a ticket, follow its code_ref into code_host, and report the pull request's state."""
    ticket = choice(rng, [t for t in linked_tickets(worlds) if t["pr_state"] in ("open", "merged")])
    access = permissions(worlds, ticket["repo_id"])
    me = choice(rng, [m for m in members(worlds, ticket["project_id"])
                      if ticket["visibility"] == "public" or m in access])
    env = user_env(worlds, me, _today(rng))
    scratch = worlds.scratch(env)
    pr = scratch("get_pull_request", repo=ticket["repo"], number=ticket["number"])
    ref = f"{ticket['repo']}#{ticket['number']}"
    checks: list = [AnswerContains(values=[f"#{ticket['number']}"], weight=1.0, label="names the pull request")]
    if pr["state"] == "open":
        index, prompt = kit.phrase(rng, OPEN_PR_PHRASINGS, key=ticket["key"])
        approvers = pr["approvals"]
        checks.append(AnswerContains(values=[pr["ci_status"]], weight=2.0, label="gives the CI status"))
        checks += [AnswerContains(values=[name], weight=1.0, label=f"names approver {name}") for name in approvers]
        ready = pr["ci_status"] == "passing" and bool(approvers)
        approved = f"approved by {', '.join(approvers)}" if approvers else "no approvals yet"
        answer = f"{ref} has {pr['ci_status']} CI and {approved}; it is {'' if ready else 'not '}ready to merge."
    else:
        index, prompt = kit.phrase(rng, MERGED_PR_PHRASINGS, key=ticket["key"])
        index += len(OPEN_PR_PHRASINGS)
        checks += [AnswerContains(values=[pr["merged_by"]], weight=2.0, label="names who merged it"),
                   AnswerContains(values=[pr["merge_method"]], weight=1.0, label="gives the merge method")]
        answer = f"{ref} was merged by {pr['merged_by']} with the {pr['merge_method']} method on {pr['merged_at']}."
    return draft(
        prompt, env, [kit.call("get_ticket", key=ticket["key"]),
                      kit.call("get_pull_request", repo=ticket["repo"], number=ticket["number"])],
        answer,
        [*checks, no_change()], 1, index, ticket=ticket["key"], pull_request=ref,
    )


ISSUE_PHRASINGS = TEXTS["ISSUE_PHRASINGS"]


@guarded
def issue_to_ticket(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """A code_host issue becomes a tracker ticket in the repository's project; the issue gets the key."""
    link = choice(rng, worlds["tracker"].query(
        "SELECT r.project_id, r.repo, p.key AS project_key FROM project_repos r JOIN projects p "
        "ON p.id = r.project_id ORDER BY r.id"))
    owner, _, name = link["repo"].partition("/")
    code_host = worlds["code_host"]
    repo = code_host.one("SELECT id, visibility FROM repos WHERE owner=? AND name=?", (owner, name))
    if repo is None:
        raise Unusable("linked repository missing")
    issue = choice(rng, code_host.query(
        "SELECT id, number, title FROM issues WHERE repo_id=? AND state='open' ORDER BY number", (repo["id"],)))
    access = permissions(worlds, repo["id"])
    me = choice(rng, [m for m in members(worlds, link["project_id"])
                      if repo["visibility"] == "public" or m in access])
    if worlds["tracker"].one("SELECT 1 AS x FROM tickets WHERE project_id=? AND summary=?",
                             (link["project_id"], issue["title"].strip())):
        raise Unusable("a ticket with this summary exists")
    kind, priority = rng.choice(TICKET_TYPES), rng.choice(PRIORITIES)
    env = user_env(worlds, me, _today(rng))
    scratch = worlds.scratch(env)
    create = kit.call("create_ticket", project=link["project_key"], summary=issue["title"], type=kind,
                  priority=priority)
    key = scratch.rehearse([create])[0]["key"]
    note = kit.call("comment_on_issue", repo=link["repo"], number=issue["number"], body=f"Tracked in {key}.")
    scratch.rehearse([note])
    index, prompt = kit.phrase(rng, ISSUE_PHRASINGS, repo=link["repo"], number=issue["number"], type=kind,
                           priority=priority)
    ticket_where = {"project_id": link["project_id"], "summary": issue["title"].strip()}
    earlier = len(code_host.query("SELECT id FROM comments WHERE issue_id=? AND author=? ORDER BY id",
                                  (issue["id"], me)))
    checks = [
        has_row("tracker.tickets", {**ticket_where, "type": kind, "priority": priority, "reporter": me},
                f"{kind} '{issue['title']}' filed in {link['project_key']}", weight=3.0, count=1),
        has_row("code_host.comments", {"issue_id": issue["id"], "author": me},
                f"comment on {link['repo']}#{issue['number']}", weight=1.0, count=earlier + 1),
        only("only the new ticket and the comment", [inserted("tracker.tickets", ticket_where), inserted("code_host.comments", {"issue_id": issue["id"], "author": me})], weight=2.0),
        AnswerContains(values=[key], weight=1.0, label="gives the new ticket key"),
    ]
    return draft(
        prompt, env, [kit.call("get_issue", repo=link["repo"], number=issue["number"]), kit.call("list_projects"),
                      create, note],
        f"I created {key} ({kind}, {priority}) in {link['project_key']} for {link['repo']}"
        f"#{issue['number']} and commented on the issue.",
        checks, 2, index, issue=f"{link['repo']}#{issue['number']}", ticket=key,
    )


FAMILIES: tuple[MultiTaskFamily, ...] = (
    MultiTaskFamily("merge_linked_pr_and_close_ticket", "multi_step", merge_and_close),
    MultiTaskFamily("approve_merge_and_close_ticket", "multi_step", approve_merge_and_close),
    MultiTaskFamily("merge_and_close_impossible", "impossible", merge_and_close_impossible),
    MultiTaskFamily("linked_pull_request_status", "lookup", pull_request_status),
    MultiTaskFamily("code_host_issue_to_ticket", "multi_step", issue_to_ticket),
)
