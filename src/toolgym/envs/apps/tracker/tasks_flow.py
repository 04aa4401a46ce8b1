"""tracker task families about workflow and sprint rules: rolling a sprint over, blocking a ticket,
walking a ticket to Done, and the requests the rules forbid."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.tracker.data import FIRST_TODAY
from toolgym.envs.apps.tracker.rules import BLOCKED, DONE, allowed_moves, open_blockers, workflow_path
from toolgym.envs.apps.tracker.task_common import common_day, members, open_tickets, projects, sprint_in
from toolgym.schema import Check, DiffOnly, ExpectedChange, FieldEquals, RowExists, ToolCall

TEXTS = kit.module_texts(__file__)

TICKET_FIELDS = ["status", "updated_at", "resolved_at"]


def roll_over_sprint(rng: random.Random, world: World) -> TaskDraft | None:
    """The active sprint ends: move its unfinished tickets to the next sprint or the backlog, and
    sometimes also close it and start the next one."""
    project = rng.choice(projects(world))
    active = sprint_in(world, project["id"], "active")
    upcoming = sprint_in(world, project["id"], "planned")
    assert active is not None and upcoming is not None
    moving = open_tickets(world, project["id"], "sprint_id=?", (active["id"],))
    if not 2 <= len(moving) <= 9:
        return None
    to_backlog = rng.random() < 0.3
    full = not to_backlog and rng.random() < 0.45
    team = members(world, project["id"], ("admin",) if full else ("admin", "member"))
    user = rng.choice(team)
    end = kit.day_of(active["end_date"])
    ends_today = rng.random() < 0.5
    today = end if ends_today else end - dt.timedelta(days=1)
    if today < FIRST_TODAY:
        return None
    when = "today" if ends_today else "tomorrow"
    key = project["key"]
    current = rng.choice([f"the current {key} sprint", f"{key}'s active sprint", active["name"]])
    opening = current[0].upper() + current[1:]
    if to_backlog:
        destination, target = "the backlog", "backlog"
    else:
        destination = rng.choice(["the next sprint", upcoming["name"]])
        target = upcoming["name"]
    if full:
        phrasings = [
            f"{opening} ends {when}. Move every ticket that isn't Done into {destination}, then close it and "
            "start the next sprint.",
            f"Wrap up {current} (it ends {when}): carry all unfinished tickets over to {destination}, close the "
            "sprint and start the next one.",
            f"Sprint change in {project['name']}: unfinished tickets of {current} go to {destination}; after that "
            "close it and kick off the next sprint.",
        ]
    else:
        phrasings = [
            f"{opening} ends {when}. Move every ticket in it that isn't Done into {destination}.",
            f"{opening} is over {when}: carry all of its unfinished tickets over to {destination}.",
            f"Move the unfinished work of {current} to {destination}, please.",
            f"Before {current} ends {when}, push everything not Done from it into {destination}.",
        ]
    phrasing, prompt = kit.pick_phrasing(rng, phrasings)
    new_sprint = None if to_backlog else upcoming["id"]
    calls = [
        kit.call("get_sprint", project=key, sprint="active"),
        kit.call("list_sprints", project=key, state="planned"),
    ] + [kit.call("move_to_sprint", key=t["key"], sprint=target) for t in moving]
    checks: list[Check] = [
        FieldEquals(table="tickets", where={"id": t["id"]}, field="sprint_id", value=new_sprint, weight=1,
                    label=f"{t['key']} moved")
        for t in moving
    ]
    expected = [
        ExpectedChange(table="tickets", op="update", where={"id": t["id"]}, fields=["sprint_id", "updated_at"])
        for t in moving
    ]
    if full:
        calls += [
            kit.call("close_sprint", project=key, sprint=active["name"]),
            kit.call("start_sprint", project=key, sprint=upcoming["name"]),
        ]
        checks += [
            FieldEquals(table="sprints", where={"id": active["id"]}, field="state", value="closed", weight=1,
                        label="current sprint closed"),
            FieldEquals(table="sprints", where={"id": upcoming["id"]}, field="state", value="active", weight=1,
                        label="next sprint started"),
        ]
        expected += [
            ExpectedChange(table="sprints", op="update", where={"id": active["id"]}, fields=["state"]),
            ExpectedChange(table="sprints", op="update", where={"id": upcoming["id"]}, fields=["state"]),
        ]
    checks.append(DiffOnly(expected=expected, weight=2, label="only the unfinished tickets moved"))
    listed = ", ".join(t["key"] for t in moving)
    closing = f" {active['name']} is closed and {upcoming['name']} is now active." if full else ""
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, today),
        reference_solution=calls,
        expected_answer=f"I moved {listed} from {active['name']} to {'the backlog' if to_backlog else target}."
        f"{closing}",
        checks=checks,
        difficulty=3,
        metadata={"phrasing": f"{'full' if full else 'move'}/{phrasing}", "moved": [t["key"] for t in moving],
                  "full": full, "to_backlog": to_backlog},
    )


def _linked(world: World, first: int, second: int) -> bool:
    return world.one(
        "SELECT 1 FROM ticket_links WHERE (source_id=? AND target_id=?) OR (source_id=? AND target_id=?)",
        (first, second, second, first),
    ) is not None


def mark_blocked(rng: random.Random, world: World) -> TaskDraft | None:
    """Record that one ticket blocks another, set the blocked one to Blocked and comment on it."""
    project = rng.choice(projects(world))
    rows = [t for t in open_tickets(world, project["id"]) if t["type"] != "epic"]
    candidates = [t for t in rows if BLOCKED in allowed_moves(world, project["id"], t["status"])]
    if not candidates:
        return None
    ticket = rng.choice(candidates)
    blocker = rng.choice([t for t in rows if t["id"] != ticket["id"]])
    if _linked(world, ticket["id"], blocker["id"]):
        return None
    user = rng.choice(members(world, project["id"]))
    a, b = ticket["key"], blocker["key"]
    note = rng.choice([f"Waiting on {b}.", f"Blocked until {b} is done.", f"Can't continue before {b} lands."])
    phrasing, prompt = kit.phrase(rng, TEXTS["mark_blocked"], a=a, b=b, note=note)
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, common_day(rng)),
        reference_solution=[
            kit.call("get_ticket", key=a),
            kit.call("link_tickets", key=a, link_type="is blocked by", other_key=b),
            kit.call("transition_ticket", key=a, status=BLOCKED),
            kit.call("add_comment_to_ticket", key=a, body=note),
        ],
        expected_answer=f"{b} now blocks {a}; {a} is Blocked and has your comment.",
        checks=[
            RowExists(table="ticket_links", where={"source_id": blocker["id"], "target_id": ticket["id"],
                                                   "link_type": "blocks"}, count=1, weight=1, label="link added"),
            FieldEquals(table="tickets", where={"id": ticket["id"]}, field="status", value=BLOCKED, weight=1,
                        label="status Blocked"),
            RowExists(table="comments", where={"ticket_id": ticket["id"], "author": user, "body": note}, count=1,
                      weight=1, label="comment posted"),
            DiffOnly(
                expected=[
                    ExpectedChange(table="ticket_links", op="insert",
                                   where={"source_id": blocker["id"], "target_id": ticket["id"]}),
                    ExpectedChange(table="tickets", op="update", where={"id": ticket["id"]}, fields=TICKET_FIELDS),
                    ExpectedChange(table="comments", op="insert", where={"ticket_id": ticket["id"]}),
                ],
                weight=1,
                label="only the link, the status and the comment",
            ),
        ],
        difficulty=3,
        metadata={"phrasing": phrasing},
    )


def finish_ticket(rng: random.Random, world: World) -> TaskDraft | None:
    """Take an unblocked ticket to Done: the workflow needs two or more transitions to get there."""
    project = rng.choice(projects(world))
    rows = [
        t for t in open_tickets(world, project["id"])
        if t["type"] != "epic" and t["status"] != BLOCKED and not open_blockers(world, t["id"])
    ]
    paths = [(t, workflow_path(world, project["id"], t["status"], DONE, avoid=(BLOCKED,))) for t in rows]
    paths = [(t, p) for t, p in paths if len(p) >= 2]
    if not paths:
        return None
    ticket, path = rng.choice(paths)
    user = ticket["assignee"] if ticket["assignee"] and rng.random() < 0.6 else rng.choice(members(world, project["id"]))
    today = common_day(rng)
    key = ticket["key"]
    phrasing, prompt = kit.phrase(rng, TEXTS["finish_ticket"], key=key)
    steps = " → ".join([ticket["status"], *path])
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, today),
        reference_solution=[kit.call("get_ticket", key=key)]
        + [kit.call("transition_ticket", key=key, status=status) for status in path],
        expected_answer=f"{key} is Done ({steps}).",
        checks=[
            FieldEquals(table="tickets", where={"id": ticket["id"]}, field="status", value=DONE, weight=2,
                        label="ticket Done"),
            FieldEquals(table="tickets", where={"id": ticket["id"]}, field="resolved_at", value=kit.iso(today), weight=1,
                        label="resolved today"),
            DiffOnly(
                expected=[ExpectedChange(table="tickets", op="update", where={"id": ticket["id"]},
                                         fields=TICKET_FIELDS)],
                weight=1,
                label="only that ticket",
            ),
        ],
        difficulty=3 if len(path) >= 3 else 2,
        metadata={"phrasing": phrasing, "path": path},
    )


# ---------------------------------------------------------------- impossible requests


def _refusal(rng: random.Random, world: World, user: str, prompt: str, look: ToolCall, answer: str, write_tool: str,
             metadata: dict[str, Any]) -> TaskDraft:
    """A request the workflow forbids: `user` asks, the agent looks (`look`), writes nothing and says why."""
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, common_day(rng)),
        reference_solution=[look],
        expected_answer=answer,
        checks=kit.impossible_checks(write_tool, reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata=metadata,
    )


def done_while_blocked(rng: random.Random, world: World) -> TaskDraft | None:
    """Move a ticket to Done while an unfinished ticket still blocks it."""
    project = rng.choice(projects(world))
    rows: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for ticket in open_tickets(world, project["id"]):
        blockers = open_blockers(world, ticket["id"])
        if blockers:
            rows.append((ticket, blockers))
    if not rows:
        return None
    ticket, blockers = rng.choice(rows)
    user = ticket["assignee"] if ticket["assignee"] and rng.random() < 0.6 else rng.choice(members(world, project["id"]))
    key = ticket["key"]
    phrasing, prompt = kit.phrase(rng, TEXTS["done_while_blocked"], key=key)
    listed = ", ".join(f"{b['key']} ({b['status']})" for b in blockers)
    answer = f"I cannot move {key} to Done: it is blocked by {listed}, which is not finished yet."
    return _refusal(rng, world, user, prompt, kit.call("get_ticket", key=key), answer, "transition_ticket",
                    {"phrasing": phrasing, "key": key, "blockers": [b["key"] for b in blockers]})


def closed_sprint(rng: random.Random, world: World) -> TaskDraft | None:
    """Move a ticket into a sprint that is already closed."""
    project = rng.choice(projects(world))
    sprint = rng.choice(
        world.query("SELECT * FROM sprints WHERE project_id=? AND state='closed' ORDER BY start_date", (project["id"],))
    )
    ticket = rng.choice([t for t in open_tickets(world, project["id"]) if t["type"] != "epic"])
    user = rng.choice(members(world, project["id"]))
    key, name = ticket["key"], sprint["name"]
    phrasing, prompt = kit.phrase(rng, TEXTS["closed_sprint"], key=key, name=name)
    answer = f"I cannot move {key} into {name}: that sprint is closed, and closed sprints take no tickets."
    return _refusal(rng, world, user, prompt, kit.call("list_sprints", project=project["key"]), answer, "move_to_sprint",
                    {"phrasing": phrasing, "key": key, "sprint": name})


def reopen_done(rng: random.Random, world: World) -> TaskDraft | None:
    """Move a Done ticket back to an earlier status: Done is final in every workflow."""
    project = rng.choice(projects(world))
    ticket = rng.choice(
        world.query("SELECT * FROM tickets WHERE project_id=? AND status=? ORDER BY id", (project["id"], DONE))
    )
    user = rng.choice(members(world, project["id"]))
    key = ticket["key"]
    status = rng.choice(["In Progress", "To Do"])
    phrasing, prompt = kit.phrase(rng, TEXTS["reopen_done"], key=key, status=status)
    answer = f"I cannot move {key} back to {status}: it is Done, and Done is final in this workflow."
    return _refusal(rng, world, user, prompt, kit.call("get_ticket", key=key), answer, "transition_ticket",
                    {"phrasing": phrasing, "key": key, "status": status})
