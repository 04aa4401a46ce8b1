"""The forum's tools: browse communities and posts, post and comment, vote, report, and moderate.

Every tool acts as LOGGED_IN_USER and sees the forum as of CURRENT_DATE. Results are short
dicts with ids, so a model can chain search → read → write without guessing.
"""

from __future__ import annotations

from toolgym.envs.apps.forum.tools_communities import (
    ban_user,
    get_community,
    get_user_profile,
    join_community,
    leave_community,
    list_communities,
    list_my_communities,
    list_reports,
    remove_post,
)
from toolgym.envs.apps.forum.tools_posts import (
    add_comment,
    create_post,
    get_post,
    list_comments,
    list_my_posts,
    report_post,
    search_posts,
    vote,
)

TOOLS = [
    list_communities,
    get_community,
    list_my_communities,
    join_community,
    leave_community,
    search_posts,
    get_post,
    list_comments,
    list_my_posts,
    get_user_profile,
    create_post,
    add_comment,
    vote,
    report_post,
    list_reports,
    remove_post,
    ban_user,
]
