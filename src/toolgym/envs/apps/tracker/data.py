"""Seed data for tracker: projects tied to code_host repositories, sprints, tickets and activity.

Each project works on two or three code_host repositories: its members are those repositories'
collaborators (the same people, by username, as in code_host) and some of its tickets reference
real pull requests of them ('owner/repo#12'), with a status that matches the pull request (merged
-> Done; open -> In Review, or In Progress where the workflow has no review step). The code_host seed is read through its `world()`, never edited.

Time: all seeded activity happens on or before ACTIVITY_END; every project has closed sprints
before it, one active sprint around it and planned sprints after it, so tasks set CURRENT_DATE
from FIRST_TODAY on. Ticket numbers of a project follow creation dates, which are distinct per
project, so "oldest" is never a tie inside a project.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from dataclasses import dataclass
from typing import Any

from faker import Faker

from toolgym.envs import kit
from toolgym.envs.apps.tracker.content import (
    COMMENTS,
    CONDITIONS,
    DEPENDENCIES,
    DESCRIPTIONS,
    FEATURES,
    GOALS,
    JOB_TITLES,
    PROJECTS,
    TARGETS,
    TEMPLATES,
    WORKLOG_NOTES,
)
from toolgym.envs.apps.tracker.rules import PRIORITIES, WORKFLOWS, ticket_key
from toolgym.envs.people import population

ACTIVITY_END = dt.date(2026, 5, 31)  # last day with seeded activity
FIRST_TODAY = dt.date(2026, 6, 1)  # earliest CURRENT_DATE of a task
FIRST_CREATED = dt.date(2026, 2, 2)
SPRINT_DAYS = 14
CLOSED_SPRINTS = 4
PLANNED_SPRINTS = 2
MAX_MEMBERS = 9

PRIORITY_WEIGHTS = [8, 22, 45, 18, 7]
POINT_WEIGHTS = {1: 10, 2: 18, 3: 22, 5: 22, 8: 14, 13: 8, 21: 2}


def _between(rng: random.Random, low: dt.date, high: dt.date) -> dt.date:
    """kit.random_day, except that an empty range gives `low` without a draw (the seed depends on it)."""
    if high < low:
        return low
    return low + dt.timedelta(days=rng.randint(0, (high - low).days))


def fill_template(rng: random.Random, template: str, area: str) -> str:
    text = template.format(
        area=area,
        cond=rng.choice(CONDITIONS),
        feat=rng.choice(FEATURES),
        dep=rng.choice(DEPENDENCIES),
        target=rng.choice(TARGETS),
    )
    return text[0].upper() + text[1:]


@dataclass
class _Plan:
    """One ticket before numbering: where it lives and what state it is in."""

    bucket: str  # 'closed0'.., 'active', 'planned0'.., 'backlog', 'epic'
    type: str
    status: str
    created: dt.date
    summary: str = ""
    assignee: str | None = None
    code_ref: str | None = None


def seed_tracker(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    """Fill every table; the order of rng calls is part of the data's identity."""
    from toolgym.envs.registry import get_app  # late import: the registry imports the apps

    code_host = get_app("code_host").world()
    people = population()
    for index, p in enumerate(people, start=1):
        joined = fake.date_between(start_date=dt.date(2020, 1, 1), end_date=dt.date(2025, 12, 31))
        db.execute(
            "INSERT INTO users(id, username, name, email, job_title, joined_at) VALUES (?, ?, ?, ?, ?, ?)",
            (index, p.username, p.name, p.email, rng.choice(JOB_TITLES), kit.iso(joined)),
        )
    usernames = [p.username for p in people]
    repos = code_host.query("SELECT id, owner, name FROM repos ORDER BY id")
    rng.shuffle(repos)
    for key, name, description, workflow, areas in PROJECTS:
        linked = [repos.pop() for _ in range(rng.choice([2, 2, 3]))]
        _seed_project(db, rng, code_host, usernames, key, name, description, workflow, areas, linked)
    db.execute(
        "UPDATE tickets SET updated_at = MAX(created_at, COALESCE(resolved_at, ''), "
        "COALESCE((SELECT MAX(created_at) FROM comments c WHERE c.ticket_id = tickets.id), ''), "
        "COALESCE((SELECT MAX(created_at) FROM worklogs w WHERE w.ticket_id = tickets.id), ''))"
    )


def _members(
    rng: random.Random, code_host: Any, usernames: list[str], linked: list[dict[str, Any]]
) -> tuple[str, list[str]]:
    lead = linked[0]["owner"]
    members = [lead]
    for repo in linked:
        for row in code_host.query(
            "SELECT username FROM collaborators WHERE repo_id=? ORDER BY id", (repo["id"],)
        ):
            if row["username"] not in members and len(members) < MAX_MEMBERS - 1:
                members.append(row["username"])
    outsiders = [u for u in usernames[70:] if u not in members]  # product, design, QA colleagues
    members.append(rng.choice(outsiders))
    while len(members) < 6:
        members.append(rng.choice([u for u in usernames[:70] if u not in members]))
    return lead, members


def _seed_project(
    db: sqlite3.Connection,
    rng: random.Random,
    code_host: Any,
    usernames: list[str],
    key: str,
    name: str,
    description: str,
    workflow: str,
    areas: list[str],
    linked: list[dict[str, Any]],
) -> None:
    lead, members = _members(rng, code_host, usernames, linked)
    created = _between(rng, dt.date(2024, 1, 10), dt.date(2025, 9, 30))
    project_id = db.execute(
        "INSERT INTO projects(key, name, description, lead, workflow, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        (key, name, description, lead, workflow, kit.iso(created)),
    ).lastrowid
    assert project_id is not None
    admins = {lead, *rng.sample(members[1:], 1)}
    for member in members:
        db.execute(
            "INSERT INTO project_members(project_id, username, role) VALUES (?, ?, ?)",
            (project_id, member, "admin" if member in admins else "member"),
        )
    for repo in linked:
        db.execute(
            "INSERT INTO project_repos(project_id, repo) VALUES (?, ?)",
            (project_id, f"{repo['owner']}/{repo['name']}"),
        )
    spec = WORKFLOWS[workflow]
    for position, (status, category) in enumerate(spec["statuses"], start=1):
        db.execute(
            "INSERT INTO statuses(project_id, name, position, category) VALUES (?, ?, ?, ?)",
            (project_id, status, position, category),
        )
    for source, target in spec["transitions"]:
        db.execute(
            "INSERT INTO transitions(project_id, from_status, to_status) VALUES (?, ?, ?)",
            (project_id, source, target),
        )
    sprints = _seed_sprints(db, rng, project_id, key, areas)
    statuses = [s for s, _ in spec["statuses"]]
    plans = _plan_tickets(rng, code_host, linked, members, statuses, sprints, areas)
    _insert_tickets(db, rng, project_id, key, members, lead, sprints, plans)


def _seed_sprints(
    db: sqlite3.Connection, rng: random.Random, project_id: int, key: str, areas: list[str]
) -> dict[str, dict[str, Any]]:
    active_start = _between(rng, dt.date(2026, 5, 25), dt.date(2026, 6, 1))
    first_number = rng.randint(8, 30)
    sprints: dict[str, dict[str, Any]] = {}
    order = [f"closed{i}" for i in range(CLOSED_SPRINTS)] + ["active"] + [
        f"planned{i}" for i in range(PLANNED_SPRINTS)
    ]
    for offset, bucket in enumerate(order):
        start = active_start + dt.timedelta(days=SPRINT_DAYS * (offset - CLOSED_SPRINTS))
        end = start + dt.timedelta(days=SPRINT_DAYS - 1)
        state = "closed" if bucket.startswith("closed") else bucket.rstrip("0123456789")
        goal = rng.choice(GOALS).format(area=rng.choice(areas), feat=rng.choice(FEATURES))
        sprint_name = f"{key} Sprint {first_number + offset}"
        sprint_id = db.execute(
            "INSERT INTO sprints(project_id, name, goal, start_date, end_date, state) VALUES (?, ?, ?, ?, ?, ?)",
            (project_id, sprint_name, goal, kit.iso(start), kit.iso(end), state),
        ).lastrowid
        sprints[bucket] = {"id": sprint_id, "name": sprint_name, "start": start, "end": end}
    return sprints


def _created_window(bucket: str, sprints: dict[str, dict[str, Any]]) -> tuple[dt.date, dt.date]:
    if bucket.startswith("closed") or bucket == "active":
        start = sprints[bucket]["start"]
        return start - dt.timedelta(days=30), min(start + dt.timedelta(days=2), ACTIVITY_END)
    if bucket.startswith("planned"):
        return sprints["active"]["start"] - dt.timedelta(days=30), ACTIVITY_END
    if bucket == "epic":
        return FIRST_CREATED, dt.date(2026, 3, 10)
    return FIRST_CREATED, ACTIVITY_END


def _pick_status(rng: random.Random, bucket: str, statuses: list[str]) -> str:
    if bucket.startswith("closed"):
        return "Done"
    if bucket == "active":
        weights = {"Done": 20, "In Review": 15, "QA": 8, "In Progress": 27, "To Do": 20, "Blocked": 10}
    elif bucket.startswith("planned"):
        weights = {"To Do": 90, "Blocked": 10}
    elif bucket == "epic":
        weights = {"In Progress": 60, "To Do": 40}
    else:
        weights = {"To Do": 80, "Blocked": 8, "In Progress": 12}
    options = [s for s in statuses if s in weights]
    return rng.choices(options, weights=[weights[s] for s in options])[0]


def _plan_tickets(
    rng: random.Random,
    code_host: Any,
    linked: list[dict[str, Any]],
    members: list[str],
    statuses: list[str],
    sprints: dict[str, dict[str, Any]],
    areas: list[str],
) -> list[_Plan]:
    counts = {f"closed{i}": rng.randint(4, 6) for i in range(CLOSED_SPRINTS)}
    counts.update(active=rng.randint(10, 13), planned0=rng.randint(4, 6), planned1=rng.randint(2, 4))
    counts.update(backlog=rng.randint(9, 13), epic=2)
    review = "In Review" if "In Review" in statuses else "In Progress"
    plans: list[_Plan] = []
    used_days: set[dt.date] = set()
    summaries: set[str] = set()

    def created_in(bucket: str) -> dt.date:
        low, high = _created_window(bucket, sprints)
        while True:
            free = [
                low + dt.timedelta(days=i)
                for i in range((high - low).days + 1)
                if low + dt.timedelta(days=i) not in used_days
            ]
            if free:
                day = rng.choice(free)
                used_days.add(day)
                return day
            low -= dt.timedelta(days=7)  # a crowded window borrows the week before it

    # tickets that track real pull requests of the project's repositories
    prs = []
    for repo in linked:
        for pr in code_host.query(
            "SELECT number, title, state, author FROM pull_requests WHERE repo_id=? AND state IN ('open', 'merged') "
            "ORDER BY number",
            (repo["id"],),
        ):
            prs.append({**pr, "repo": f"{repo['owner']}/{repo['name']}"})
    for pr in rng.sample(prs, min(len(prs), rng.randint(4, 7))):
        if pr["title"] in summaries:
            continue
        if pr["state"] == "merged":
            bucket = rng.choice([b for b in counts if b.startswith("closed")] + ["active"])
            status = "Done"
        else:
            bucket, status = "active", review
        if counts[bucket] == 0:
            continue
        counts[bucket] -= 1
        summaries.add(pr["title"])
        kind = "bug" if pr["title"].startswith(("Fix", "Handle")) else "task" if pr["title"].startswith(
            ("Bump", "Refactor", "Document", "Speed")
        ) else "story"
        plans.append(
            _Plan(
                bucket,
                kind,
                status,
                created_in(bucket),
                summary=pr["title"],
                assignee=pr["author"] if pr["author"] in members else rng.choice(members),
                code_ref=f"{pr['repo']}#{pr['number']}",
            )
        )
    for bucket, count in counts.items():
        for _ in range(count):
            kind = "epic" if bucket == "epic" else rng.choices(["bug", "story", "task"], weights=[35, 40, 25])[0]
            for _ in range(50):
                summary = fill_template(rng, rng.choice(TEMPLATES[kind]), rng.choice(areas))
                if summary not in summaries:
                    break
            summaries.add(summary)
            plans.append(_Plan(bucket, kind, _pick_status(rng, bucket, statuses), created_in(bucket), summary))
    plans.sort(key=lambda p: p.created)
    return plans


def _assignee(rng: random.Random, plan: _Plan, members: list[str], lead: str) -> str | None:
    if plan.assignee is not None:
        return plan.assignee
    if plan.bucket == "epic":
        return lead
    if plan.status != "To Do":
        return rng.choice(members)
    chance = {"active": 0.6, "backlog": 0.35}.get(plan.bucket, 0.5)
    return rng.choice(members) if rng.random() < chance else None


def _points(rng: random.Random, plan: _Plan) -> int | None:
    if plan.type == "epic":
        return None
    if plan.bucket == "backlog" and rng.random() < 0.4:
        return None
    if plan.type == "bug" and rng.random() < 0.5:
        return None
    return rng.choices(list(POINT_WEIGHTS), weights=list(POINT_WEIGHTS.values()))[0]


def _due(rng: random.Random, plan: _Plan, sprint: dict[str, Any] | None) -> dt.date | None:
    if plan.bucket == "active":
        if plan.status == "Done":
            return _between(rng, sprint["start"], sprint["end"]) if sprint and rng.random() < 0.4 else None
        return _between(rng, FIRST_TODAY, sprint["end"] + dt.timedelta(days=5)) if sprint and rng.random() < 0.75 else None
    if plan.bucket.startswith("closed"):
        return _between(rng, sprint["start"], sprint["end"]) if sprint and rng.random() < 0.3 else None
    if plan.bucket.startswith("planned"):
        return _between(rng, sprint["start"], sprint["end"] + dt.timedelta(days=7)) if sprint and rng.random() < 0.4 else None
    if plan.bucket == "epic":
        return _between(rng, dt.date(2026, 7, 15), dt.date(2026, 9, 30)) if rng.random() < 0.6 else None
    return _between(rng, dt.date(2026, 6, 2), dt.date(2026, 9, 15)) if rng.random() < 0.35 else None


def _insert_tickets(
    db: sqlite3.Connection,
    rng: random.Random,
    project_id: int,
    key: str,
    members: list[str],
    lead: str,
    sprints: dict[str, dict[str, Any]],
    plans: list[_Plan],
) -> None:
    number = rng.randint(60, 240)
    rows: list[dict[str, Any]] = []
    for plan in plans:
        number += rng.choice([1, 1, 1, 2])  # a few numbers went to tickets deleted long ago
        sprint = sprints.get(plan.bucket)
        resolved = None
        if plan.status == "Done":
            low = max(plan.created, sprint["start"]) if sprint else plan.created
            high = min(sprint["end"], ACTIVITY_END) if sprint else ACTIVITY_END
            resolved = _between(rng, min(low, high), high)  # a sprint starting after ACTIVITY_END: done early
        assignee = _assignee(rng, plan, members, lead)
        reporter = rng.choice(members)
        priority = rng.choices(PRIORITIES, weights=PRIORITY_WEIGHTS)[0]
        description = rng.choice(DESCRIPTIONS[plan.type])
        if plan.code_ref:
            description += f" Code: pull request {plan.code_ref}."
        due = _due(rng, plan, sprint)
        ticket_id = db.execute(
            "INSERT INTO tickets(project_id, number, key, type, summary, description, status, priority, assignee, "
            "reporter, story_points, sprint_id, due_date, code_ref, created_at, updated_at, resolved_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                project_id,
                number,
                ticket_key(key, number),
                plan.type,
                plan.summary,
                description,
                plan.status,
                priority,
                assignee,
                reporter,
                _points(rng, plan),
                sprint["id"] if sprint else None,
                kit.iso(due) if due else None,
                plan.code_ref,
                kit.iso(plan.created),
                kit.iso(plan.created),
                kit.iso(resolved) if resolved else None,
            ),
        ).lastrowid
        rows.append({"id": ticket_id, "plan": plan, "assignee": assignee, "reporter": reporter,
                     "last": resolved or ACTIVITY_END})
    for row in rows:
        _seed_activity(db, rng, row, members)
    _seed_links(db, rng, rows)


def _seed_activity(db: sqlite3.Connection, rng: random.Random, row: dict[str, Any], members: list[str]) -> None:
    plan: _Plan = row["plan"]
    first, last = plan.created, row["last"]
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        db.execute(
            "INSERT INTO comments(ticket_id, author, body, created_at) VALUES (?, ?, ?, ?)",
            (row["id"], rng.choice(members), rng.choice(COMMENTS), kit.iso(_between(rng, first, last))),
        )
    if plan.code_ref and row["assignee"]:
        db.execute(
            "INSERT INTO comments(ticket_id, author, body, created_at) VALUES (?, ?, ?, ?)",
            (row["id"], row["assignee"], f"PR is up: {plan.code_ref}", kit.iso(_between(rng, first, last))),
        )
    if plan.type != "epic" and plan.status not in ("To Do", "Blocked") and row["assignee"]:
        for _ in range(rng.randint(1, 3)):
            day = _between(rng, first, last)
            db.execute(
                "INSERT INTO worklogs(ticket_id, author, minutes, work_date, note, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (row["id"], row["assignee"], rng.choice([30, 60, 90, 120, 180, 240, 300, 360, 480]),
                 kit.iso(day), rng.choice(WORKLOG_NOTES), kit.iso(day)),
            )
    watchers = [row["reporter"]] + ([row["assignee"]] if row["assignee"] else [])
    watchers += rng.sample(members, rng.choice([0, 0, 1, 2]))
    for username in dict.fromkeys(watchers):
        db.execute("INSERT INTO watchers(ticket_id, username) VALUES (?, ?)", (row["id"], username))


def _link(db: sqlite3.Connection, source: dict[str, Any], target: dict[str, Any], kind: str) -> bool:
    if source["id"] == target["id"]:
        return False
    exists = db.execute(
        "SELECT 1 FROM ticket_links WHERE (source_id=? AND target_id=?) OR (source_id=? AND target_id=?)",
        (source["id"], target["id"], target["id"], source["id"]),
    ).fetchone()
    if exists:
        return False
    day = max(source["plan"].created, target["plan"].created)
    db.execute(
        "INSERT INTO ticket_links(source_id, target_id, link_type, created_at) VALUES (?, ?, ?, ?)",
        (source["id"], target["id"], kind, kit.iso(day)),
    )
    return True


def _seed_links(db: sqlite3.Connection, rng: random.Random, rows: list[dict[str, Any]]) -> None:
    """Blocked tickets get an unfinished blocker; some tickets in review wait on one too; a Done
    ticket is only ever blocked by Done tickets (the rule the tools enforce)."""
    work = [r for r in rows if r["plan"].type != "epic"]
    unfinished = [r for r in work if r["plan"].status != "Done"]
    done = [r for r in work if r["plan"].status == "Done"]
    for row in work:
        status = row["plan"].status
        if status == "Blocked" or (status in ("In Review", "QA") and rng.random() < 0.4):
            candidates = [r for r in unfinished if r["id"] != row["id"] and r["plan"].status != "Blocked"]
            _link(db, rng.choice(candidates), row, "blocks")
    for _ in range(3):
        blocker, blocked = rng.choice(done), rng.choice(work)
        _link(db, blocker, blocked, "blocks")
    for _ in range(3):
        first, second = rng.sample(work, 2)
        _link(db, first, second, "relates")
    bugs = [r for r in work if r["plan"].type == "bug"]
    if len(bugs) >= 2:
        later, earlier = sorted(rng.sample(bugs, 2), key=lambda r: -r["id"])
        _link(db, later, earlier, "duplicates")
