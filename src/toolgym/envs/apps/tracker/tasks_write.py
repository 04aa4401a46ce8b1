"""tracker task families with one or two writes: filing, commenting, estimating, picking up a ticket,
assigning by a criterion, and logging "my" work on a relative day."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.tracker.content import PROJECTS, TEMPLATES
from toolgym.envs.apps.tracker.data import FIRST_TODAY, fill_template
from toolgym.envs.apps.tracker.rules import PRIORITIES, STORY_POINTS, hours_text, priority_rank
from toolgym.envs.apps.tracker.task_common import (
    COMMENT_TEXTS,
    WORK_NOTES,
    by_priority,
    common_day,
    day_in_sprint,
    members,
    open_tickets,
    projects,
    sprint_in,
)
from toolgym.envs.context import WEEKDAYS, resolve_date
from toolgym.schema import Check, DiffOnly, ExpectedChange, FieldEquals, RowExists

TEXTS = kit.module_texts(__file__)

AREAS = {key: areas for key, _, _, _, areas in PROJECTS}
UPDATED = ["updated_at"]


def file_ticket(rng: random.Random, world: World) -> TaskDraft | None:
    """Create a ticket with a type, summary, priority and sometimes points, an assignee or a sprint."""
    project = rng.choice(projects(world))
    key = project["key"]
    kind = rng.choice(["bug", "story", "task"])
    summary = fill_template(rng, rng.choice(TEMPLATES[kind]), rng.choice(AREAS[key]))
    if world.one("SELECT 1 FROM tickets WHERE project_id=? AND summary=?", (project["id"], summary)):
        return None
    team = members(world, project["id"])
    user = rng.choice(team)
    priority = rng.choice(PRIORITIES)
    points = rng.choice(STORY_POINTS[:6]) if rng.random() < 0.6 else None
    assignee = rng.choice(team) if rng.random() < 0.5 else None
    sprint = sprint_in(world, project["id"], rng.choice(["active", "planned"])) if rng.random() < 0.35 else None
    parts = [f"priority {priority}"]
    if points is not None:
        parts.append(f"{points} story points")
    if assignee is not None:
        parts.append("assigned to me" if assignee == user else f"assigned to {assignee}")
    if sprint is not None:
        parts.append(f"in sprint {sprint['name']}")
    details = ", ".join(parts)
    phrasing, prompt = kit.phrase(rng, TEXTS["file_ticket"], kind=kind, key=key, summary=summary, details=details, project=project)
    top = world.one("SELECT MAX(number) AS n FROM tickets WHERE project_id=?", (project["id"],))
    new_key = f"{key}-{int(top['n']) + 1}"  # type: ignore[index]
    arguments: dict[str, Any] = {"project": key, "type": kind, "summary": summary, "priority": priority}
    where = {"project_id": project["id"], "summary": summary}
    checks: list[Check] = [
        RowExists(
            table="tickets",
            where={**where, "type": kind, "reporter": user, "status": "To Do"},
            count=1,
            weight=2,
            label="ticket created",
        ),
        FieldEquals(table="tickets", where=where, field="priority", value=priority, weight=1, label="priority set"),
    ]
    if points is not None:
        arguments["story_points"] = points
        checks.append(
            FieldEquals(table="tickets", where=where, field="story_points", value=points, weight=1, label="points set")
        )
    if assignee is not None:
        arguments["assignee"] = assignee
        checks.append(
            FieldEquals(table="tickets", where=where, field="assignee", value=assignee, weight=1, label="assignee set")
        )
    if sprint is not None:
        arguments["sprint"] = sprint["name"]
        checks.append(
            FieldEquals(table="tickets", where=where, field="sprint_id", value=sprint["id"], weight=1, label="sprint set")
        )
    checks.append(
        DiffOnly(
            expected=[ExpectedChange(table="tickets", op="insert", where=where)], weight=1, label="only that ticket"
        )
    )
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, common_day(rng)),
        reference_solution=[kit.call("create_ticket", **arguments)],
        expected_answer=f"I created {new_key}: '{summary}' ({kind}, {details}).",
        checks=checks,
        difficulty=1,
        metadata={"phrasing": phrasing, "new_key": new_key},
    )


def comment_on_ticket(rng: random.Random, world: World) -> TaskDraft | None:
    """Post a given comment on an unfinished ticket."""
    project = rng.choice(projects(world))
    ticket = rng.choice(open_tickets(world, project["id"]))
    user = rng.choice(members(world, project["id"]))
    text = rng.choice(COMMENT_TEXTS)
    key = ticket["key"]
    phrasing, prompt = kit.phrase(rng, TEXTS["comment_on_ticket"], key=key, text=text)
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, common_day(rng)),
        reference_solution=[kit.call("add_comment_to_ticket", key=key, body=text)],
        expected_answer=f"I added your comment to {key}.",
        checks=[
            RowExists(
                table="comments",
                where={"ticket_id": ticket["id"], "author": user, "body": text},
                count=1,
                weight=2,
                label="comment posted",
            ),
            DiffOnly(
                expected=[
                    ExpectedChange(table="comments", op="insert", where={"ticket_id": ticket["id"], "author": user}),
                    ExpectedChange(table="tickets", op="update", where={"id": ticket["id"]}, fields=UPDATED),
                ],
                weight=1,
                label="only the comment",
            ),
        ],
        difficulty=1,
        metadata={"phrasing": phrasing},
    )


def estimate_ticket(rng: random.Random, world: World) -> TaskDraft | None:
    """Set a ticket's story points (and sometimes its priority)."""
    project = rng.choice(projects(world))
    rows = [t for t in open_tickets(world, project["id"]) if t["type"] != "epic"]
    ticket = rng.choice(rows)
    points = rng.choice([p for p in STORY_POINTS[:6] if p != ticket["story_points"]])
    priority = rng.choice([p for p in PRIORITIES if p != ticket["priority"]]) if rng.random() < 0.4 else None
    user = rng.choice(members(world, project["id"]))
    key = ticket["key"]
    also = f" and set its priority to {priority}" if priority else ""
    phrasing, prompt = kit.phrase(rng, TEXTS["estimate_ticket"], key=key, points=points, also=also)
    arguments: dict[str, Any] = {"key": key, "story_points": points}
    checks: list[Check] = [
        FieldEquals(table="tickets", where={"id": ticket["id"]}, field="story_points", value=points, weight=2,
                    label="points set"),
    ]
    if priority:
        arguments["priority"] = priority
        checks.append(
            FieldEquals(table="tickets", where={"id": ticket["id"]}, field="priority", value=priority, weight=1,
                        label="priority set")
        )
    checks.append(
        DiffOnly(
            expected=[
                ExpectedChange(
                    table="tickets", op="update", where={"id": ticket["id"]},
                    fields=["story_points", "priority", "updated_at"],
                )
            ],
            weight=1,
            label="only that ticket's estimate",
        )
    )
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, common_day(rng)),
        reference_solution=[kit.call("update_ticket", **arguments)],
        expected_answer=f"{key} is now estimated at {points} story points"
        + (f" with priority {priority}." if priority else "."),
        checks=checks,
        difficulty=1,
        metadata={"phrasing": phrasing},
    )


def take_oldest_bug(rng: random.Random, world: World) -> TaskDraft | None:
    """Assign the oldest (or most urgent) unassigned open bug of a project, its current sprint or its
    backlog to me and start it."""
    project = rng.choice(projects(world))
    sprint = sprint_in(world, project["id"], "active")
    assert sprint is not None
    scope = rng.choice(["project", "project", "sprint", "backlog"])
    where, params = "type='bug' AND assignee IS NULL", ()
    if scope == "sprint":
        where, params = where + " AND sprint_id=?", (sprint["id"],)
    elif scope == "backlog":
        where += " AND sprint_id IS NULL"
    bugs = open_tickets(world, project["id"], where, params)
    if not bugs:
        return None
    oldest = rng.random() < 0.65
    target = bugs[0] if oldest else kit.unique_best(bugs, by_priority)
    if target is None or target["status"] != "To Do":
        return None
    user = rng.choice(members(world, project["id"]))
    key = project["key"]
    which = "oldest" if oldest else "highest-priority"
    place = {"project": key, "sprint": f"the current {key} sprint", "backlog": f"the {key} backlog"}[scope]
    phrasing, prompt = kit.phrase(rng, TEXTS["take_oldest_bug"], which=which, place=place)
    search: dict[str, Any] = {"project": key, "type": "bug", "assignee": "none", "status": "open",
                              "sort": "created" if oldest else "priority"}
    if scope != "project":
        search["sprint"] = "active" if scope == "sprint" else "backlog"
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, day_in_sprint(rng, sprint)),
        reference_solution=[
            kit.call("search_tickets", **search),
            kit.call("assign_ticket", key=target["key"], assignee="me"),
            kit.call("transition_ticket", key=target["key"], status="In Progress"),
        ],
        expected_answer=f"I assigned {target['key']} ('{target['summary']}') to you and moved it to In Progress.",
        checks=[
            FieldEquals(table="tickets", where={"id": target["id"]}, field="assignee", value=user, weight=2,
                        label="assigned to me"),
            FieldEquals(table="tickets", where={"id": target["id"]}, field="status", value="In Progress", weight=1,
                        label="started"),
            DiffOnly(
                expected=[
                    ExpectedChange(table="tickets", op="update", where={"id": target["id"]},
                                   fields=["assignee", "status", "updated_at"])
                ],
                weight=1,
                label="only that ticket",
            ),
        ],
        difficulty=2,
        metadata={"phrasing": phrasing, "which": which, "scope": scope},
    )


CRITERIA: dict[str, tuple[str, Any]] = {
    "due": ("is due soonest", lambda t: t["due_date"]),
    "priority": ("has the highest priority", lambda t: priority_rank(t["priority"])),
    "points": ("has the biggest estimate", lambda t: -(t["story_points"] or 0)),
}


def assign_in_sprint(rng: random.Random, world: World) -> TaskDraft | None:
    """Among the unassigned open tickets of the active sprint, assign the one that best fits a criterion."""
    project = rng.choice(projects(world))
    sprint = sprint_in(world, project["id"], "active")
    assert sprint is not None
    rows = open_tickets(world, project["id"], "sprint_id=? AND assignee IS NULL", (sprint["id"],))
    criterion = rng.choice(sorted(CRITERIA))
    phrase, rank = CRITERIA[criterion]
    if criterion == "due":
        rows = [r for r in rows if r["due_date"]]
    if criterion == "points":
        rows = [r for r in rows if r["story_points"]]
    if len(rows) < 2:
        return None
    target = kit.unique_best(rows, rank)
    if target is None:
        return None
    team = members(world, project["id"])
    user, assignee = rng.choice(team), rng.choice(team)
    key = project["key"]
    who = "me" if assignee == user else assignee
    phrasing, prompt = kit.phrase(rng, TEXTS["assign_in_sprint"], key=key, phrase=phrase, who=who, project=project)
    sort = {"due": "due", "priority": "priority", "points": "created"}[criterion]
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, day_in_sprint(rng, sprint)),
        reference_solution=[
            kit.call("search_tickets", project=key, sprint="active", assignee="none", status="open", sort=sort),
            kit.call("assign_ticket", key=target["key"], assignee=assignee),
        ],
        expected_answer=f"I assigned {target['key']} ('{target['summary']}') to {assignee}.",
        checks=[
            FieldEquals(table="tickets", where={"id": target["id"]}, field="assignee", value=assignee, weight=2,
                        label="right ticket assigned"),
            DiffOnly(
                expected=[
                    ExpectedChange(table="tickets", op="update", where={"id": target["id"]},
                                   fields=["assignee", "updated_at"])
                ],
                weight=1,
                label="only that assignment",
            ),
        ],
        difficulty=2,
        metadata={"phrasing": f"{criterion}/{phrasing}", "criterion": criterion},
    )


def _past_phrase(rng: random.Random, today: dt.date) -> tuple[str, dt.date]:
    kind = rng.choice(["today", "yesterday", "days_ago", "last_weekday"])
    if kind == "today":
        phrase = "today"
    elif kind == "yesterday":
        phrase = "yesterday"
    elif kind == "days_ago":
        phrase = f"{rng.randint(2, 4)} days ago"
    else:
        phrase = f"last {WEEKDAYS[rng.randrange(5)].capitalize()}"
    return phrase, resolve_date(phrase, today)


def log_my_work(rng: random.Random, world: World) -> TaskDraft | None:
    """Log hours on 'my' only In Progress ticket of a project's current sprint, on a relative day."""
    project = rng.choice(projects(world))
    sprint = sprint_in(world, project["id"], "active")
    assert sprint is not None
    rows = world.query(
        "SELECT assignee, COUNT(*) AS n FROM tickets WHERE sprint_id=? AND status='In Progress' "
        "AND assignee IS NOT NULL GROUP BY assignee HAVING n = 1 ORDER BY assignee",
        (sprint["id"],),
    )
    if not rows:
        return None
    user = rng.choice(rows)["assignee"]
    ticket = world.one(
        "SELECT * FROM tickets WHERE sprint_id=? AND status='In Progress' AND assignee=?", (sprint["id"], user)
    )
    assert ticket is not None
    today = day_in_sprint(rng, sprint)
    phrase, day = _past_phrase(rng, today)
    if day < FIRST_TODAY - dt.timedelta(days=7):
        return None
    hours = rng.choice([0.5, 1, 1.5, 2, 2.5, 3, 4, 6])
    note = rng.choice(WORK_NOTES)
    amount = hours_text(round(hours * 60)).replace("h", " hours") if hours != 1 else "1 hour"
    key = project["key"]
    phrasing, prompt = kit.phrase(rng, TEXTS["log_my_work"], amount=amount, phrase=phrase, key=key, note=note)
    minutes = round(hours * 60)
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, today),
        reference_solution=[
            kit.call("search_tickets", project=key, sprint="active", assignee="me", status="In Progress"),
            kit.call("log_work", key=ticket["key"], hours=float(hours), date=phrase, note=note),
        ],
        expected_answer=f"I logged {hours_text(minutes)} on {ticket['key']} for {kit.iso(day)}.",
        checks=[
            RowExists(
                table="worklogs",
                where={"ticket_id": ticket["id"], "author": user, "minutes": minutes, "work_date": kit.iso(day)},
                count=1,
                weight=2,
                label="work logged",
            ),
            DiffOnly(
                expected=[ExpectedChange(table="worklogs", op="insert", where={"ticket_id": ticket["id"]})],
                weight=1,
                label="only that worklog",
            ),
        ],
        difficulty=2,
        metadata={"phrasing": phrasing, "phrase": phrase},
    )
