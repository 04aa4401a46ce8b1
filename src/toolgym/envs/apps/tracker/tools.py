"""tracker tools: browse projects and sprints, search and read tickets, and change them under the rules.

Rules the write tools enforce (policy.md says the same in words): only project members change a
project's tickets; assignees must be members; a status change must be an allowed transition of
the project's workflow and Done is final; a ticket blocked by an unfinished ticket cannot reach
Done; closed sprints take no tickets; story points are on the Fibonacci scale and epics have none;
only project admins start or close sprints. Every write is dated CURRENT_DATE and done as
LOGGED_IN_USER.
"""

from __future__ import annotations

from toolgym.envs.apps.tracker.tools_projects import (
    close_sprint,
    get_project,
    get_sprint,
    list_projects,
    list_sprints,
    move_to_sprint,
    start_sprint,
)
from toolgym.envs.apps.tracker.tools_tickets import (
    add_comment_to_ticket,
    assign_ticket,
    create_ticket,
    get_ticket,
    link_tickets,
    log_work,
    search_tickets,
    transition_ticket,
    update_ticket,
    watch_ticket,
)

TOOLS = [
    list_projects,
    get_project,
    list_sprints,
    get_sprint,
    start_sprint,
    close_sprint,
    search_tickets,
    get_ticket,
    create_ticket,
    update_ticket,
    transition_ticket,
    assign_ticket,
    add_comment_to_ticket,
    move_to_sprint,
    link_tickets,
    log_work,
    watch_ticket,
]
