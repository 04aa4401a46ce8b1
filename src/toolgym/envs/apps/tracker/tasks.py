"""tracker task families: one TaskFamily per kind of request, covering all six task shapes.

A generator returns None when its draw does not make a clean task (ties, no candidates); the
dataset build then draws again.
"""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.tracker.tasks_flow import (
    closed_sprint,
    done_while_blocked,
    finish_ticket,
    mark_blocked,
    reopen_done,
    roll_over_sprint,
)
from toolgym.envs.apps.tracker.tasks_read import (
    my_due_tickets,
    sprint_points,
    ticket_pull_request,
    top_priority_assignee,
)
from toolgym.envs.apps.tracker.tasks_write import (
    assign_in_sprint,
    comment_on_ticket,
    estimate_ticket,
    file_ticket,
    log_my_work,
    take_oldest_bug,
)

FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("top_priority_assignee", "lookup", top_priority_assignee),
    TaskFamily("sprint_points", "lookup", sprint_points),
    TaskFamily("ticket_pull_request", "lookup", ticket_pull_request),
    TaskFamily("file_ticket", "write", file_ticket),
    TaskFamily("comment_on_ticket", "write", comment_on_ticket),
    TaskFamily("estimate_ticket", "write", estimate_ticket),
    TaskFamily("take_oldest_bug", "search_choose_write", take_oldest_bug),
    TaskFamily("assign_in_sprint", "search_choose_write", assign_in_sprint),
    TaskFamily("roll_over_sprint", "multi_step", roll_over_sprint),
    TaskFamily("mark_blocked", "multi_step", mark_blocked),
    TaskFamily("finish_ticket", "multi_step", finish_ticket),
    TaskFamily("done_while_blocked", "impossible", done_while_blocked),
    TaskFamily("closed_sprint", "impossible", closed_sprint),
    TaskFamily("reopen_done", "impossible", reopen_done),
    TaskFamily("my_due_tickets", "context", my_due_tickets),
    TaskFamily("log_my_work", "context", log_my_work),
)
