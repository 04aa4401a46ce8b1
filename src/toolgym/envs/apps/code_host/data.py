"""Seed data for code_host: repositories with collaborators, labels, milestones, issues and PRs.

Everything comes from the `fake` and `rng` handed to `seed()`, so the same data_seed gives the
same database byte for byte. Issues and pull requests of a repository are created in number
order with strictly increasing dates, so "oldest" and "newest" are never ties.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from dataclasses import dataclass, field

from faker import Faker

from toolgym.envs import kit
from toolgym.envs.people import Person, population

TEXTS = kit.module_texts(__file__)

OWNER_COUNT = 24
DEVELOPER_POOL = 70
REPO_PREFIXES = TEXTS["REPO_PREFIXES"]
REPO_KINDS = TEXTS["REPO_KINDS"]
DOMAINS = TEXTS["DOMAINS"]
LANGUAGES = ["Python", "Go", "TypeScript", "Rust", "Java", "Ruby", "Kotlin", "C++"]

LABEL_COLORS = TEXTS["LABEL_COLORS"]
BASE_LABELS = ["bug", "enhancement", "documentation", "question", "good first issue", "help wanted"]
EXTRA_LABELS = ["performance", "security"]

COMPONENTS = TEXTS["COMPONENTS"]
CONDITIONS = TEXTS["CONDITIONS"]
FEATURES = TEXTS["FEATURES"]
TEMPLATES = TEXTS["TEMPLATES"]
PR_TEMPLATES = TEXTS["PR_TEMPLATES"]
ISSUE_BODIES = TEXTS["ISSUE_BODIES"]
COMMENT_BODIES = TEXTS["COMMENT_BODIES"]
REVIEW_BODIES = TEXTS["REVIEW_BODIES"]
MILESTONE_TITLES = ["v1.4", "v1.5", "v2.0", "Q3 cleanup", "Beta launch", "Security review"]


def _slug(text: str) -> str:
    words = "".join(c if c.isalnum() else " " for c in text.lower()).split()
    return "-".join(words[:4])


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        comp=rng.choice(COMPONENTS), cond=rng.choice(CONDITIONS), feat=rng.choice(FEATURES)
    )


def _capitalize(text: str) -> str:
    return text[0].upper() + text[1:]


def seed_code_host(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    """Fill every table; the order of rng calls is part of the data's identity."""
    people: tuple[Person, ...] = population()
    for index, p in enumerate(people, start=1):
        joined = fake.date_between(start_date=dt.date(2019, 1, 1), end_date=dt.date(2025, 12, 31))
        db.execute(
            "INSERT INTO users(id, username, name, email, company, joined_at) VALUES (?, ?, ?, ?, ?, ?)",
            (index, p.username, p.name, p.email, p.company, kit.iso(joined)),
        )
    usernames = [p.username for p in people]
    developers = usernames[:DEVELOPER_POOL]
    owners = rng.sample(developers, OWNER_COUNT)
    repo_names = [f"{prefix}-{kind}" for prefix in REPO_PREFIXES for kind in REPO_KINDS]
    rng.shuffle(repo_names)

    for owner in owners:
        for _ in range(rng.choice([1, 1, 2, 2, 3])):
            _seed_repo(db, fake, rng, owner, repo_names.pop(), developers, usernames)


def _seed_repo(
    db: sqlite3.Connection,
    fake: Faker,
    rng: random.Random,
    owner: str,
    name: str,
    developers: list[str],
    everyone: list[str],
) -> None:
    kind = name.split("-", 1)[1]
    public = rng.random() < 0.8
    created = fake.date_between(start_date=dt.date(2023, 1, 1), end_date=dt.date(2025, 10, 31))
    stars = int(rng.paretovariate(1.2) * 40) if public else rng.randint(0, 12)
    repo_id = db.execute(
        "INSERT INTO repos(owner, name, description, language, stars, visibility, default_branch, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            owner,
            name,
            REPO_KINDS[kind].format(domain=rng.choice(DOMAINS)),
            rng.choice(LANGUAGES),
            min(stars, 9800),
            "public" if public else "private",
            rng.choice(["main", "main", "main", "develop"]),
            kit.iso(created),
        ),
    ).lastrowid
    assert repo_id is not None
    branch = db.execute("SELECT default_branch FROM repos WHERE id=?", (repo_id,)).fetchone()[0]

    others = rng.sample([d for d in developers if d != owner], rng.randint(2, 5))
    permissions = {owner: "admin"}
    for member in others:
        permissions[member] = rng.choices(["write", "read", "admin"], weights=[70, 18, 12])[0]
    for member, permission in permissions.items():
        db.execute(
            "INSERT INTO collaborators(repo_id, username, permission) VALUES (?, ?, ?)",
            (repo_id, member, permission),
        )
    writers = sorted(m for m, p in permissions.items() if p in ("write", "admin"))
    members = sorted(permissions)
    outsiders = [u for u in everyone if u not in permissions]

    label_ids: dict[str, int] = {}
    for label in BASE_LABELS + rng.sample(EXTRA_LABELS, rng.randint(0, 2)):
        label_ids[label] = (
            db.execute(
                "INSERT INTO labels(repo_id, name, color) VALUES (?, ?, ?)",
                (repo_id, label, LABEL_COLORS[label]),
            ).lastrowid
            or 0
        )

    milestone_ids: list[int] = []
    for title in sorted(rng.sample(MILESTONE_TITLES, rng.randint(1, 3))):
        due = dt.date(2026, 4, 1) + dt.timedelta(days=rng.randint(0, 175))
        if db.execute(
            "SELECT 1 FROM milestones WHERE repo_id=? AND due_date=?", (repo_id, kit.iso(due))
        ).fetchone():
            continue  # one milestone per due date keeps "the milestone due tomorrow" unambiguous
        milestone_ids.append(
            db.execute(
                "INSERT INTO milestones(repo_id, title, due_date, state) VALUES (?, ?, ?, ?)",
                (repo_id, title, kit.iso(due), "open"),
            ).lastrowid
            or 0
        )

    day = dt.date(2026, 1, 5) + dt.timedelta(days=rng.randint(0, 40))
    repo = _Repo(
        db, rng, repo_id, branch, label_ids, milestone_ids, writers, members,
        author_pool=members + (outsiders[:30] if public else []),
    )
    for number in range(1, rng.randint(10, 18) + 1):
        day += dt.timedelta(days=rng.randint(1, 3))
        if rng.random() < 0.66:
            _seed_issue(repo, number, day)
        else:
            _seed_pull_request(repo, number, day)


def _unique_title(rng: random.Random, templates: list[str], titles: set[str]) -> str:
    for _ in range(50):
        title = _capitalize(_fill(rng.choice(templates), rng))
        if title not in titles:
            titles.add(title)
            return title
    raise RuntimeError("could not draw a unique title")  # never happens with these word lists


@dataclass
class _Repo:
    """A repository being seeded: what its issues and pull requests draw from, and the titles taken so far."""

    db: sqlite3.Connection
    rng: random.Random
    id: int
    branch: str
    label_ids: dict[str, int]
    milestone_ids: list[int]
    writers: list[str]
    members: list[str]
    author_pool: list[str]
    titles: set[str] = field(default_factory=set)


def _seed_issue(repo: _Repo, number: int, day: dt.date) -> None:
    db, rng = repo.db, repo.rng
    kinds = [
        k
        for k in ["bug", "enhancement", "documentation", "question", "performance", "security"]
        if k in repo.label_ids
    ]
    kind = rng.choices(kinds, weights=[{"bug": 40, "enhancement": 28}.get(k, 9) for k in kinds])[0]
    title = _unique_title(rng, TEMPLATES[kind], repo.titles)
    closed = rng.random() < 0.3
    closed_at = kit.iso(day + dt.timedelta(days=rng.randint(2, 20))) if closed else None
    issue_id = db.execute(
        "INSERT INTO issues(repo_id, number, title, body, state, author, assignee, milestone_id, created_at, "
        "closed_at, closed_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            repo.id,
            number,
            title,
            rng.choice(ISSUE_BODIES),
            "closed" if closed else "open",
            rng.choice(repo.author_pool),
            rng.choice(repo.writers) if rng.random() < 0.5 else None,
            rng.choice(repo.milestone_ids) if repo.milestone_ids and rng.random() < 0.4 else None,
            kit.iso(day),
            closed_at,
            rng.choice(repo.writers) if closed else None,
        ),
    ).lastrowid
    labels = [kind] + [extra for extra in ("good first issue", "help wanted") if rng.random() < 0.15]
    for label in labels:
        db.execute("INSERT INTO issue_labels(issue_id, label_id) VALUES (?, ?)", (issue_id, repo.label_ids[label]))
    when = day
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        when += dt.timedelta(days=rng.randint(0, 4))
        db.execute(
            "INSERT INTO comments(issue_id, author, body, created_at) VALUES (?, ?, ?, ?)",
            (issue_id, rng.choice(repo.author_pool + repo.members), rng.choice(COMMENT_BODIES), kit.iso(when)),
        )


def _seed_pull_request(repo: _Repo, number: int, day: dt.date) -> None:
    db, rng = repo.db, repo.rng
    prefix, template = rng.choice(PR_TEMPLATES)
    title = _unique_title(rng, [template], repo.titles)
    author = rng.choice(repo.writers) if rng.random() < 0.75 else rng.choice(repo.author_pool)
    state = rng.choices(["open", "merged", "closed"], weights=[60, 30, 10])[0]
    passing = True if state == "merged" else rng.random() < 0.62
    reviewers = [w for w in repo.writers if w != author]
    review_states: list[str] = []
    for _ in range(min(len(reviewers), rng.choice([0, 1, 1, 2]))):
        review_states.append(
            rng.choices(["approved", "changes_requested", "commented"], weights=[50, 25, 25])[0]
        )
    if state == "merged" and "approved" not in review_states and reviewers:
        review_states = ["approved"]
    if state == "merged" and not reviewers:
        state = "closed"
    merged = state == "merged"
    pr_id = db.execute(
        "INSERT INTO pull_requests(repo_id, number, title, body, head_branch, base_branch, state, author, ci_status, "
        "created_at, merged_at, merged_by, merge_method) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            repo.id,
            number,
            title,
            f"This PR: {title[0].lower() + title[1:]}.",
            f"{prefix}/{_slug(title)}",
            repo.branch,
            state,
            author,
            "passing" if passing else "failing",
            kit.iso(day),
            kit.iso(day + dt.timedelta(days=rng.randint(3, 7))) if merged else None,
            rng.choice(reviewers) if merged else None,
            rng.choice(["merge", "squash", "rebase"]) if merged else None,
        ),
    ).lastrowid
    for reviewer, review_state in zip(rng.sample(reviewers, len(review_states)), review_states, strict=True):
        db.execute(
            "INSERT INTO reviews(pr_id, reviewer, state, body, created_at) VALUES (?, ?, ?, ?, ?)",
            (
                pr_id,
                reviewer,
                review_state,
                rng.choice(REVIEW_BODIES[review_state]),
                kit.iso(day + dt.timedelta(days=rng.randint(0, 2))),
            ),
        )
