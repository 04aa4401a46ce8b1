"""code_host tools: browse repositories, triage issues, review and merge pull requests.

Access follows GitHub: a private repository is invisible to non-collaborators; labelling,
assigning, closing, milestones, approving and merging need write access (a `write` or `admin`
collaborator; the owner is an `admin`). Every write is dated CURRENT_DATE and done as
LOGGED_IN_USER.
"""

from __future__ import annotations

from toolgym.envs.apps.code_host.tools_issues import (
    add_issue_label,
    assign_issue,
    close_issue,
    comment_on_issue,
    create_issue,
    get_issue,
    get_repo,
    list_milestones,
    list_repos,
    search_issues,
    set_issue_milestone,
)
from toolgym.envs.apps.code_host.tools_pulls import (
    get_pull_request,
    list_pull_requests,
    merge_pull_request,
    review_pull_request,
)

TOOLS = [
    list_repos,
    get_repo,
    list_milestones,
    search_issues,
    get_issue,
    create_issue,
    comment_on_issue,
    add_issue_label,
    assign_issue,
    close_issue,
    set_issue_milestone,
    list_pull_requests,
    get_pull_request,
    review_pull_request,
    merge_pull_request,
]
