"""Task families of the forum: lookups, posts and comments, votes, reports, moderation, impossible asks.

Each generator picks entities from the seed world with `rng` only, computes the gold answer and
the exact expected diff, and emits a reference solution that replays to reward 1.
"""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.forum.tasks_impossible import impossible_moderation, impossible_vote_or_post
from toolgym.envs.apps.forum.tasks_read import (
    my_latest_post,
    post_author_and_comments,
    posts_on_a_day,
    top_post_in_month,
    top_post_recent,
)
from toolgym.envs.apps.forum.tasks_write import (
    comment_on_post,
    create_post_with_flair,
    join_and_post,
    moderate_reports,
    reply_to_newest_flaired,
    report_post_for_rule,
    upvote_top_comment,
)

FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("top_post_in_month", "lookup", top_post_in_month),
    TaskFamily("post_author_and_comments", "lookup", post_author_and_comments),
    TaskFamily("create_post_with_flair", "write", create_post_with_flair),
    TaskFamily("comment_on_post", "write", comment_on_post),
    TaskFamily("report_post_for_rule", "write", report_post_for_rule),
    TaskFamily("upvote_top_comment", "search_choose_write", upvote_top_comment),
    TaskFamily("reply_to_newest_flaired", "search_choose_write", reply_to_newest_flaired),
    TaskFamily("moderate_reports", "multi_step", moderate_reports),
    TaskFamily("join_and_post", "multi_step", join_and_post),
    TaskFamily("impossible_moderation", "impossible", impossible_moderation),
    TaskFamily("impossible_vote_or_post", "impossible", impossible_vote_or_post),
    TaskFamily("my_latest_post", "context", my_latest_post),
    TaskFamily("posts_on_a_day", "context", posts_on_a_day),
    TaskFamily("top_post_recent", "context", top_post_recent),
)
