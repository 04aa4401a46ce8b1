"""code_host task families about repositories and pull requests: status, reviews, merges."""

from __future__ import annotations

import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.code_host.rules import approvals_of
from toolgym.envs.apps.code_host.task_common import (
    CHANGES_TEXTS,
    FIRST_TODAY,
    METHOD_PHRASES,
    WRITE,
    all_repos,
    env_on_a_day,
    fresh_reviewers,
    full_name,
    members,
)
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, only, updated
from toolgym.schema import Check, DiffOnly

TEXTS = kit.module_texts(__file__)


def top_starred_repo(rng: random.Random, world: World) -> TaskDraft | None:
    """The most (or least) starred public repository of an owner."""
    owners = [
        r["owner"]
        for r in world.query(
            "SELECT owner FROM repos WHERE visibility='public' GROUP BY owner HAVING COUNT(*) >= 2 ORDER BY owner"
        )
    ]
    owner = rng.choice(owners)
    repos = world.query(
        "SELECT * FROM repos WHERE owner=? AND visibility='public' ORDER BY stars DESC, name", (owner,)
    )
    most = rng.random() < 0.6
    ranked = repos if most else repos[::-1]
    if ranked[0]["stars"] == ranked[1]["stars"]:
        return None
    pick = ranked[0]
    viewers = [
        r["username"]
        for r in world.query(
            "SELECT DISTINCT username FROM collaborators WHERE username != ? ORDER BY username", (owner,)
        )
    ]
    user = rng.choice(viewers)
    word = "most" if most else "fewest"
    phrasing, prompt = kit.phrase(rng, TEXTS["TOP_STARRED_REPO"], owner=owner, word=word)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[kit.call("list_repos", owner=owner)],
        expected_answer=f"{full_name(pick)} has the {word} stars of {owner}'s public repositories: {pick['stars']}.",
        checks=kit.lookup_checks([pick["name"], str(pick["stars"])], per_fact=False),
        difficulty=1,
        metadata={"phrasing": phrasing},
    )


def pull_request_status(rng: random.Random, world: World) -> TaskDraft | None:
    """CI status and author of one pull request."""
    repo = rng.choice(all_repos(world))
    prs = world.query("SELECT * FROM pull_requests WHERE repo_id=? ORDER BY number", (repo["id"],))
    if not prs:
        return None
    pr = rng.choice(prs)
    user = rng.choice(members(world, repo["id"]))
    name, number = full_name(repo), pr["number"]
    phrasing, prompt = kit.phrase(rng, TEXTS["PULL_REQUEST_STATUS"], number=number, name=name)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[kit.call("get_pull_request", repo=name, number=number)],
        expected_answer=f"Pull request #{number} in {name} was opened by {pr['author']}; its CI is {pr['ci_status']}.",
        checks=kit.lookup_checks([pr["author"], pr["ci_status"]], per_fact=False),
        difficulty=1,
        metadata={"phrasing": phrasing},
    )


def request_changes_failing(rng: random.Random, world: World) -> TaskDraft | None:
    """Request changes on the newest (or oldest) open pull request whose CI is failing."""
    repo = rng.choice(all_repos(world))
    failing = world.query(
        "SELECT * FROM pull_requests WHERE repo_id=? AND state='open' AND ci_status='failing' "
        "ORDER BY created_at, id",
        (repo["id"],),
    )
    open_count = world.one(
        "SELECT COUNT(*) AS n FROM pull_requests WHERE repo_id=? AND state='open'", (repo["id"],)
    )
    if not failing or (open_count or {"n": 0})["n"] < 2:
        return None
    newest = rng.random() < 0.6
    target = failing[-1] if newest else failing[0]
    users = fresh_reviewers(world, target)
    if not users:
        return None
    user = rng.choice(users)
    text = rng.choice(CHANGES_TEXTS)
    name = full_name(repo)
    age = "most recently opened" if newest else "oldest"
    phrasing, prompt = kit.phrase(rng, TEXTS["REQUEST_CHANGES_FAILING"], age=age, name=name, text=text)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[
            kit.call(
                "list_pull_requests",
                repo=name,
                state="open",
                ci_status="failing",
                sort="newest" if newest else "oldest",
            ),
            kit.call(
                "review_pull_request", repo=name, number=target["number"], event="request_changes", body=text
            ),
        ],
        expected_answer=f"I requested changes on pull request #{target['number']} in {name}.",
        checks=[
            has_row("reviews", {"pr_id": target["id"], "reviewer": user, "state": "changes_requested"},
                    "changes requested on the right PR", weight=2, count=1),
            has_row("reviews", {"pr_id": target["id"], "reviewer": user, "body": text}, "review text"),
            only("only that review", [inserted("reviews", {"pr_id": target["id"], "reviewer": user})]),
        ],
        difficulty=2,
        metadata={"phrasing": phrasing},
    )


def _open_prs_reviewable(world: World) -> list[dict[str, Any]]:
    return world.query(
        "SELECT p.*, r.owner, r.name FROM pull_requests p JOIN repos r ON r.id = p.repo_id "
        "WHERE p.state='open' ORDER BY p.id"
    )


def review_then_merge(rng: random.Random, world: World) -> TaskDraft | None:
    """If CI passes, approve and merge (with a method); otherwise request changes."""
    pr = rng.choice(_open_prs_reviewable(world))
    users = fresh_reviewers(world, pr)
    if not users:
        return None
    user = rng.choice(users)
    method = rng.choice(["merge", "squash", "rebase"])
    text = rng.choice(CHANGES_TEXTS)
    name, number = f"{pr['owner']}/{pr['name']}", pr["number"]
    verb = METHOD_PHRASES[method]
    phrasing, prompt = kit.phrase(rng, TEXTS["REVIEW_THEN_MERGE"], number=number, name=name, verb=verb,
                                  text=text)
    today = kit.random_day(rng, FIRST_TODAY)
    if pr["ci_status"] == "passing":
        solution = [
            kit.call("get_pull_request", repo=name, number=number),
            kit.call(
                "review_pull_request", repo=name, number=number, event="approve", body="Looks good to me."
            ),
            kit.call("merge_pull_request", repo=name, number=number, merge_method=method),
        ]
        checks: list[Check] = [
            has_row("reviews", {"pr_id": pr["id"], "reviewer": user, "state": "approved"}, "approved", count=1),
            field_is("pull_requests", {"id": pr["id"]}, "state", "merged", "merged", weight=2),
            field_is("pull_requests", {"id": pr["id"]}, "merge_method", method, "merge method"),
            only("only the approval and the merge", [
                inserted("reviews", {"pr_id": pr["id"], "reviewer": user, "state": "approved"}),
                updated("pull_requests", {"id": pr["id"]}, ["state", "merged_at", "merged_by", "merge_method"]),
            ]),
        ]
        answer = f"CI is passing, so I approved pull request #{number} in {name} and merged it ({method})."
    else:
        solution = [
            kit.call("get_pull_request", repo=name, number=number),
            kit.call("review_pull_request", repo=name, number=number, event="request_changes", body=text),
        ]
        checks = [
            has_row("reviews", {"pr_id": pr["id"], "reviewer": user, "state": "changes_requested", "body": text},
                    "changes requested", weight=2, count=1),
            field_is("pull_requests", {"id": pr["id"]}, "state", "open", "still open"),
            only("only the review", [
                inserted("reviews", {"pr_id": pr["id"], "reviewer": user, "state": "changes_requested"}),
            ]),
        ]
        answer = f"CI is failing on pull request #{number} in {name}, so I requested changes."
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, today),
        reference_solution=solution,
        expected_answer=answer,
        checks=checks,
        difficulty=2,
        metadata={"phrasing": phrasing, "branch": pr["ci_status"]},
    )


def merge_ready_prs(rng: random.Random, world: World) -> TaskDraft | None:
    """Merge every open PR that is ready (passing CI + an approval) and leave the others open."""
    repo = rng.choice(all_repos(world))
    prs = world.query(
        "SELECT * FROM pull_requests WHERE repo_id=? AND state='open' ORDER BY number", (repo["id"],)
    )
    ready = [p for p in prs if p["ci_status"] == "passing" and approvals_of(world, p["id"])]
    if not ready or len(ready) == len(prs) or len(ready) > 3:
        return None
    user = rng.choice(members(world, repo["id"], WRITE))
    name = full_name(repo)
    phrasing, prompt = kit.phrase(rng, TEXTS["MERGE_READY_PRS"], name=name)
    numbers = [p["number"] for p in ready]
    checks: list[Check] = [
        field_is("pull_requests", {"id": p["id"]}, "state", "merged", f"#{p['number']} merged")
        for p in ready
    ]
    checks.append(
        DiffOnly(
            expected=[
                updated("pull_requests", {"id": p["id"]}, ["state", "merged_at", "merged_by", "merge_method"])
                for p in ready
            ],
            weight=1,
            label="only the ready PRs merged",
        )
    )
    listed = ", ".join(f"#{n}" for n in numbers)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[kit.call("list_pull_requests", repo=name, state="open")]
        + [kit.call("merge_pull_request", repo=name, number=n) for n in numbers],
        expected_answer=f"I merged {listed} in {name}; the other open pull requests are not ready.",
        checks=checks,
        difficulty=3,
        metadata={"phrasing": phrasing, "merged": numbers},
    )


def merge_blocked(rng: random.Random, world: World) -> TaskDraft | None:
    """Merge a PR that the rules forbid: failing CI, already closed/merged, own PR without approval,
    or no write access."""
    pr = rng.choice(
        world.query(
            "SELECT p.*, r.owner, r.name, r.visibility FROM pull_requests p "
            "JOIN repos r ON r.id = p.repo_id ORDER BY p.id"
        )
    )
    name, number = f"{pr['owner']}/{pr['name']}", pr["number"]
    writers = members(world, pr["repo_id"], WRITE)
    approvals = approvals_of(world, pr["id"])
    if pr["state"] != "open":
        reason, user = f"it is already {pr['state']}", rng.choice(writers)
    elif pr["ci_status"] == "failing":
        reason, user = "its CI is failing", rng.choice(writers)
    elif not approvals and pr["author"] in writers:
        reason, user = "it has no approval and you cannot approve your own pull request", pr["author"]
    elif approvals:
        outsiders = members(world, pr["repo_id"], ("read",))
        if not outsiders:
            return None
        reason, user = "you do not have write access to the repository", rng.choice(outsiders)
    else:
        return None
    phrasing, prompt = kit.phrase(rng, TEXTS["MERGE_BLOCKED"], number=number, name=name)
    return TaskDraft(
        prompt=prompt,
        env_variables=env_on_a_day(rng, world, user),
        reference_solution=[
            kit.call("get_pull_request", repo=name, number=number),
            kit.call("get_repo", repo=name),
        ],
        expected_answer=f"I cannot merge pull request #{number} in {name}: {reason}.",
        checks=kit.impossible_checks("merge_pull_request", reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata={"phrasing": phrasing, "reason": reason},
    )
