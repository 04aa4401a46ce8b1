"""tracker task families that only read: who holds the most urgent ticket, sprint points, linked
pull requests, and "my tickets due tomorrow"."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.tracker.data import FIRST_TODAY
from toolgym.envs.apps.tracker.task_common import (
    by_priority,
    common_day,
    day_in_sprint,
    members,
    open_tickets,
    projects,
    sprint_in,
    unfinished,
)

TEXTS = kit.module_texts(__file__)

DUE_LAST_TODAY = dt.date(2026, 6, 14)
DUE_PHRASES = ("tomorrow", "tomorrow", "today", "in_days", "next_weekday", "this_weekday")  # tomorrow twice as often
KIND_WORDS = {"bug": "bug", "story": "story", "task": "task"}


def top_priority_assignee(rng: random.Random, world: World) -> TaskDraft | None:
    """Who is assigned the most urgent open bug/story/task, in the active sprint or the whole project."""
    project = rng.choice(projects(world))
    kind = rng.choice(["bug", "bug", "story", "task"])
    sprint = sprint_in(world, project["id"], "active")
    assert sprint is not None
    in_sprint = rng.random() < 0.6
    if in_sprint:
        rows = open_tickets(world, project["id"], "type=? AND sprint_id=?", (kind, sprint["id"]))
    else:
        rows = open_tickets(world, project["id"], "type=?", (kind,))
    top = kit.unique_best(rows, by_priority)
    if top is None or top["assignee"] is None:
        return None
    user = rng.choice(members(world, project["id"]))
    key, word = project["key"], KIND_WORDS[kind]
    where = f"the active {key} sprint" if in_sprint else f"project {project['name']} ({key})"
    phrasing, prompt = kit.phrase(rng, TEXTS["top_priority_assignee"], word=word, where=where)
    arguments = {"project": key, "type": kind, "status": "open", "sort": "priority"}
    if in_sprint:
        arguments["sprint"] = "active"
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, day_in_sprint(rng, sprint)),
        reference_solution=[kit.call("search_tickets", **arguments)],
        expected_answer=f"The highest-priority open {word} in {where} is {top['key']} ('{top['summary']}', "
        f"{top['priority']}); it is assigned to {top['assignee']}.",
        checks=kit.lookup_checks([top["key"], top["assignee"]], per_fact=False),
        difficulty=2,
        metadata={"phrasing": phrasing, "scope": "sprint" if in_sprint else "project"},
    )


def sprint_points(rng: random.Random, world: World) -> TaskDraft | None:
    """Story points still open (or already done) in the active sprint, or done in a closed sprint."""
    project = rng.choice(projects(world))
    key = project["key"]
    active = sprint_in(world, project["id"], "active")
    assert active is not None
    mode = rng.choice(["remaining", "remaining", "done", "closed"])
    todo = unfinished(world, project["id"])
    if mode == "closed":
        sprint = rng.choice(
            world.query("SELECT * FROM sprints WHERE project_id=? AND state='closed' ORDER BY start_date", (project["id"],))
        )
    else:
        sprint = active
    rows = world.query("SELECT status, story_points FROM tickets WHERE sprint_id=? ORDER BY id", (sprint["id"],))
    if mode == "remaining":
        points = sum(r["story_points"] or 0 for r in rows if r["status"] in todo)
    else:
        points = sum(r["story_points"] or 0 for r in rows if r["status"] not in todo)
    if points == 0:
        return None
    user = rng.choice(members(world, project["id"]))
    name = sprint["name"]
    if mode == "remaining":
        phrasings = [
            f"How many story points are still open in the current {key} sprint?",
            f"What's the remaining story-point total of the active sprint in {project['name']}?",
            f"Sum up the story points of the tickets that aren't Done yet in {key}'s current sprint.",
            f"For the sprint {key} is running now, how many points are left to finish?",
        ]
        said = f"{points} story points are still open in {name}."
    elif mode == "done":
        phrasings = [
            f"How many story points has the current {key} sprint completed so far?",
            f"In the active {project['name']} sprint, what's the total of story points on Done tickets?",
            f"Tell me how many points the team has finished in {key}'s current sprint.",
        ]
        said = f"{points} story points are done in {name}."
    else:
        phrasings = [
            f"How many story points were completed in {name}?",
            f"What was the finished story-point total of {name}?",
            f"Add up the story points of the Done tickets in {name}.",
        ]
        said = f"{name} completed {points} story points."
    phrasing, prompt = kit.pick_phrasing(rng, phrasings)
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, day_in_sprint(rng, active)),
        reference_solution=[kit.call("get_sprint", project=key, sprint="active" if mode != "closed" else name)],
        expected_answer=said,
        checks=kit.lookup_checks([str(points)], per_fact=False),
        difficulty=2,
        metadata={"phrasing": f"{mode}/{phrasing}", "mode": mode},
    )


def ticket_pull_request(rng: random.Random, world: World) -> TaskDraft | None:
    """Which code_host pull request a ticket references, and the ticket's status."""
    ticket = rng.choice(world.query("SELECT * FROM tickets WHERE code_ref IS NOT NULL ORDER BY id"))
    project_id = ticket["project_id"]
    user = rng.choice(members(world, project_id))
    repo, number = ticket["code_ref"].split("#")
    key = ticket["key"]
    phrasing, prompt = kit.phrase(rng, TEXTS["ticket_pull_request"], key=key)
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, common_day(rng)),
        reference_solution=[kit.call("get_ticket", key=key)],
        expected_answer=f"{key} is linked to pull request #{number} in {repo}; the ticket is {ticket['status']}.",
        checks=kit.lookup_checks([repo, f"#{number}", ticket["status"]], per_fact=False),
        difficulty=1,
        metadata={"phrasing": phrasing, "code_ref": ticket["code_ref"]},
    )


def my_due_tickets(rng: random.Random, world: World) -> TaskDraft | None:
    """The logged-in user's unfinished tickets (all projects) due on a relative day."""
    pairs = world.query(
        "SELECT t.assignee, t.due_date FROM tickets t JOIN statuses s ON s.project_id = t.project_id "
        "AND s.name = t.status WHERE s.category != 'done' AND t.assignee IS NOT NULL AND t.due_date IS NOT NULL "
        "GROUP BY t.assignee, t.due_date ORDER BY t.assignee, t.due_date"
    )
    pair = rng.choice(pairs)
    resolved = kit.relative_day(rng, kit.day_of(pair["due_date"]), DUE_PHRASES, first=FIRST_TODAY, last=DUE_LAST_TODAY)
    if resolved is None:
        return None
    phrase, today = resolved
    user = pair["assignee"]
    tickets = world.query(
        "SELECT t.key, t.summary FROM tickets t JOIN statuses s ON s.project_id = t.project_id AND s.name = t.status "
        "WHERE s.category != 'done' AND t.assignee=? AND t.due_date=? ORDER BY t.key",
        (user, pair["due_date"]),
    )
    if len(tickets) > 4:
        return None
    phrasing, prompt = kit.phrase(rng, TEXTS["my_due_tickets"], phrase=phrase)
    listed = "; ".join(f"{t['key']} ({t['summary']})" for t in tickets)
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for_username(world, user, today),
        reference_solution=[kit.call("search_tickets", assignee="me", due=phrase, status="open")],
        expected_answer=f"You have {len(tickets)} open ticket(s) due {phrase} ({pair['due_date']}): {listed}.",
        checks=kit.lookup_checks([t["key"] for t in tickets], per_fact=False),
        difficulty=2,
        metadata={"phrasing": phrasing, "phrase": phrase, "due": pair["due_date"], "today": kit.iso(today)},
    )
