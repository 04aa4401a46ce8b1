"""code_host task families: one TaskFamily per kind of request, covering all six task shapes.

A generator returns None when its draw does not make a clean task (ties, no candidates); the
dataset build then draws again.
"""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.code_host.tasks_issues import (
    assign_oldest_issue,
    close_with_comment,
    comment_on_issue,
    count_label_issues,
    no_write_access,
    open_labeled_issue,
)
from toolgym.envs.apps.code_host.tasks_mine import assign_to_me, milestone_due, my_assigned_issues
from toolgym.envs.apps.code_host.tasks_pulls import (
    merge_blocked,
    merge_ready_prs,
    pull_request_status,
    request_changes_failing,
    review_then_merge,
    top_starred_repo,
)

FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("count_label_issues", "lookup", count_label_issues),
    TaskFamily("pull_request_status", "lookup", pull_request_status),
    TaskFamily("top_starred_repo", "lookup", top_starred_repo),
    TaskFamily("open_labeled_issue", "write", open_labeled_issue),
    TaskFamily("comment_on_issue", "write", comment_on_issue),
    TaskFamily("assign_oldest_issue", "search_choose_write", assign_oldest_issue),
    TaskFamily("request_changes_failing", "search_choose_write", request_changes_failing),
    TaskFamily("review_then_merge", "multi_step", review_then_merge),
    TaskFamily("close_with_comment", "multi_step", close_with_comment),
    TaskFamily("merge_ready_prs", "multi_step", merge_ready_prs),
    TaskFamily("merge_blocked", "impossible", merge_blocked),
    TaskFamily("no_write_access", "impossible", no_write_access),
    TaskFamily("my_assigned_issues", "context", my_assigned_issues),
    TaskFamily("milestone_due", "context", milestone_due),
    TaskFamily("assign_to_me", "context", assign_to_me),
)
