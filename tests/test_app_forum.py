"""forum app: seed data, tool rules and errors, context, cross-process determinism and hand-computed scores."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import subprocess
import sys
from collections import defaultdict

import pytest

from app_helpers import AppKit, error
from app_helpers import call as ok
from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs import EnvContext, make_env
from toolgym.envs.apps.forum import APP
from toolgym.envs.people import person
from toolgym.schema import Task
from toolgym.verify import verify_task

TODAY = "2026-08-25"

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.
KIT = AppKit("forum", today=TODAY, with_name=True)
tasks_30, family_tasks, seed_one, fresh_env, replay_calls = (
    KIT.tasks_30, KIT.tasks_of, KIT.seed_one, KIT.fresh_env, KIT.verdict)


def moderator_and_community(visibility: str = "public") -> tuple[str, str]:
    row = seed_one(
        "SELECT u.username, c.name FROM memberships m JOIN users u ON u.id = m.user_id JOIN communities c "
        "ON c.id = m.community_id WHERE m.role='moderator' AND c.visibility=? ORDER BY m.id LIMIT 1",
        (visibility,),
    )
    return row["username"], row["name"]


# ---------------------------------------------------------------- structure and data


def test_users_come_from_the_shared_population() -> None:
    for row in APP.world().query("SELECT username, display_name, email FROM users ORDER BY id"):
        someone = person(row["username"])
        assert (row["display_name"], row["email"]) == (someone.name, someone.email)


def test_seed_dates_lie_in_march_to_august_2026() -> None:
    for table in ("posts", "comments", "votes", "reports"):
        row = seed_one(f"SELECT MIN(created_on) AS lo, MAX(created_on) AS hi FROM {table}")
        assert row["lo"] >= "2026-03-01" and row["hi"] <= "2026-08-20", table
    # comments never predate their post, votes never predate what they vote on
    assert seed_one("SELECT COUNT(*) AS n FROM comments c JOIN posts p ON p.id=c.post_id WHERE c.created_on < p.created_on")["n"] == 0
    assert seed_one("SELECT COUNT(*) AS n FROM votes v JOIN posts p ON p.id=v.post_id WHERE v.created_on < p.created_on")["n"] == 0


def test_every_public_community_has_one_repeat_offender_in_its_report_queue() -> None:
    rows = APP.world().query(
        "SELECT c.name, p.author_id, COUNT(DISTINCT p.id) AS n FROM reports r JOIN posts p ON p.id=r.post_id "
        "JOIN communities c ON c.id=p.community_id JOIN community_rules cr ON cr.id=r.rule_id "
        "WHERE r.status='open' AND cr.number=2 AND c.visibility='public' GROUP BY c.name, p.author_id ORDER BY c.name"
    )
    repeaters: dict[str, int] = defaultdict(int)
    for row in rows:
        repeaters[row["name"]] += row["n"] >= 2
    assert len(repeaters) == 10 and set(repeaters.values()) == {1}


# ---------------------------------------------------------------- tool rules


def test_bad_arguments_get_errors_that_name_the_argument() -> None:
    env = fresh_env(_any_user())
    assert "'community'" in error(env, "search_posts", community="r/doesnotexist")
    assert "'limit'" in error(env, "search_posts", limit=500)
    assert "'since'" in error(env, "search_posts", since="the other week")
    assert "'post_id'" in error(env, "get_post", post_id=99999)
    assert "'post_id'" in error(env, "get_post", post_id="seven")
    assert "'sort'" in error(env, "list_comments", post_id=1, sort="best")
    assert "'flair'" in error(env, "search_posts", community="r/sourdough", flair="Memes")
    assert "'post_id'" in error(env, "get_post", post_id=10**30)
    assert "'direction'" in error(env, "vote", direction="sideways", post_id=1)
    assert "post_id" in error(env, "vote", direction="up")


def _any_user() -> str:
    return seed_one("SELECT username FROM users ORDER BY id LIMIT 1")["username"]


def test_flair_rules_for_posting() -> None:
    row = seed_one(
        "SELECT u.username, c.name FROM memberships m JOIN users u ON u.id=m.user_id JOIN communities c "
        "ON c.id=m.community_id WHERE c.flair_required=1 ORDER BY m.id LIMIT 1"
    )
    env = fresh_env(row["username"])
    message = error(env, "create_post", community=row["name"], title="A title here", body="text")
    assert "'flair'" in message and "requires a flair" in message
    message = error(env, "create_post", community=row["name"], title="A title here", body="text", flair="Nope")
    assert "'flair'" in message and "flairs are" in message
    assert env.diff() == []


def test_posting_needs_membership_and_private_communities_cannot_be_joined() -> None:
    private = seed_one("SELECT id, name FROM communities WHERE visibility='private' ORDER BY id LIMIT 1")
    outsider = seed_one(
        "SELECT username FROM users u WHERE NOT EXISTS (SELECT 1 FROM memberships m WHERE m.community_id=? "
        "AND m.user_id=u.id) ORDER BY id LIMIT 1", (private["id"],))["username"]
    env = fresh_env(outsider)
    assert "not a member" in error(env, "create_post", community=private["name"], title="Hello there", body="hi")
    assert "private" in error(env, "join_community", community=private["name"])
    assert "private" in error(env, "search_posts", community=private["name"])
    assert env.diff() == []


def test_one_vote_per_item_and_no_votes_on_own_content() -> None:
    vote = seed_one("SELECT v.user_id, v.post_id, u.username FROM votes v JOIN users u ON u.id=v.user_id "
                    "JOIN posts p ON p.id=v.post_id WHERE v.value=1 AND p.removed=0 ORDER BY v.id LIMIT 1")
    env = fresh_env(vote["username"])
    assert ok(env, "get_post", post_id=vote["post_id"])["my_vote"] == "up"
    assert "already upvoted" in error(env, "vote", direction="up", post_id=vote["post_id"])
    assert env.diff() == []
    before = ok(env, "get_post", post_id=vote["post_id"])["score"]
    flipped = ok(env, "vote", direction="down", post_id=vote["post_id"])
    assert flipped["score"] == before - 2
    own = seed_one("SELECT id FROM posts WHERE author_id=? AND removed=0 ORDER BY id LIMIT 1", (vote["user_id"],))
    assert "own post" in error(env, "vote", direction="up", post_id=own["id"])


def test_only_moderators_moderate_and_removal_closes_reports() -> None:
    moderator, community = moderator_and_community()
    cid = seed_one("SELECT id FROM communities WHERE name=?", (community,))["id"]
    regular = seed_one("SELECT u.username FROM memberships m JOIN users u ON u.id=m.user_id "
                       "WHERE m.community_id=? AND m.role='member' ORDER BY m.id LIMIT 1", (cid,))["username"]
    env = fresh_env(regular)
    reported = seed_one("SELECT r.post_id FROM reports r JOIN posts p ON p.id=r.post_id WHERE p.community_id=? "
                        "AND r.status='open' ORDER BY r.id LIMIT 1", (cid,))["post_id"]
    assert "not a moderator" in error(env, "remove_post", post_id=reported, reason="spam")
    assert "not a moderator" in error(env, "list_reports", community=community)
    assert "not a moderator" in error(env, "ban_user", community=community, username=moderator, reason="spam")
    assert env.diff() == []

    env = fresh_env(moderator)
    result = ok(env, "remove_post", post_id=reported, reason="Rule 2: no spam")
    assert result["reports_closed"] >= 1
    assert all(r["post_id"] != reported for r in ok(env, "list_reports", community=community)["reports"])
    assert "yourself" in error(env, "ban_user", community=community, username=moderator, reason="testing")
    assert "'duration_days'" in error(env, "ban_user", community=community, username=regular, reason="spam",
                                      duration_days=0)
    banned = ok(env, "ban_user", community=community, username=regular, reason="Spamming links", duration_days=7)
    assert banned["expires_on"] == "2026-09-01"
    assert "already banned" in error(env, "ban_user", community=community, username=regular, reason="again")
    env.context = EnvContext({**env.context.variables, "LOGGED_IN_USER": regular})  # same state, the banned user
    assert "banned" in error(env, "create_post", community=community, title="Back again", body="hi")


def test_logged_in_user_decides_what_my_posts_are() -> None:
    first, second = (r["username"] for r in APP.world().query(
        "SELECT u.username FROM users u WHERE EXISTS (SELECT 1 FROM posts p WHERE p.author_id=u.id) ORDER BY u.id LIMIT 2"))
    mine_first = ok(fresh_env(first), "list_my_posts", limit=25)
    mine_second = ok(fresh_env(second), "list_my_posts", limit=25)
    assert mine_first["posts"] and mine_second["posts"]
    ids_first = {p["post_id"] for p in mine_first["posts"]}
    assert ids_first.isdisjoint(p["post_id"] for p in mine_second["posts"])
    assert all(p["author"] == first for p in mine_first["posts"])
    assert "LOGGED_IN_USER" in error(fresh_env(None), "list_my_posts")


def test_current_date_decides_what_relative_dates_and_new_content_mean() -> None:
    user = _any_user()
    day = seed_one("SELECT p.created_on, COUNT(*) AS n FROM posts p JOIN communities c ON c.id=p.community_id "
                   "WHERE c.visibility='public' AND p.removed=0 GROUP BY p.created_on ORDER BY n DESC, p.created_on LIMIT 1")
    on_day = dt.date.fromisoformat(day["created_on"])
    seen: dict[str, set[int]] = {}
    for today in (on_day + dt.timedelta(days=1), on_day + dt.timedelta(days=2)):
        env = fresh_env(user, today.isoformat())
        found = ok(env, "search_posts", since="yesterday", until="yesterday", limit=25)
        assert {p["created_on"] for p in found["posts"]} <= {(today - dt.timedelta(days=1)).isoformat()}
        seen[today.isoformat()] = {p["post_id"] for p in found["posts"]}
        weekday = on_day.strftime("%A")
        last = ok(env, "search_posts", since=f"last {weekday}", until=f"last {weekday}", limit=25)
        assert last["total"] == day["n"]  # 'last <weekday>' is on_day from either date
    first, second = seen.values()
    assert len(first) == day["n"] and first.isdisjoint(second)
    # tomorrow's posts do not exist yet as of CURRENT_DATE
    before = fresh_env(user, (on_day - dt.timedelta(days=1)).isoformat())
    assert ok(before, "search_posts", since="tomorrow", limit=25)["total"] == 0
    community = seed_one("SELECT c.name FROM memberships m JOIN communities c ON c.id=m.community_id JOIN users u "
                         "ON u.id=m.user_id WHERE u.username=? AND c.flair_required=0 ORDER BY c.id LIMIT 1", (user,))["name"]
    for today in ("2026-08-22", "2026-08-30"):
        created = ok(fresh_env(user, today), "create_post", community=community, title="Dated by the context", body="")
        assert created["created_on"] == today


# ---------------------------------------------------------------- generated tasks


def test_tasks_log_in_forum_users() -> None:
    usernames = {r["username"] for r in APP.world().query("SELECT username FROM users ORDER BY id")}
    for task in tasks_30():
        assert task.env_variables["LOGGED_IN_USER"] in usernames, task.id


def _digest(tasks: list[Task] | tuple[Task, ...]) -> str:
    return hashlib.sha256("\n".join(t.model_dump_json() for t in tasks).encode()).hexdigest()


def test_same_seed_gives_identical_tasks_even_in_another_process() -> None:
    code = (
        "from toolgym.dataset.build import BuildConfig, generate_app_tasks\n"
        "from toolgym.envs.apps.forum import APP\n"
        "import hashlib\n"
        "tasks = generate_app_tasks(APP, BuildConfig(tasks_per_family=30))\n"
        "print(hashlib.sha256('\\n'.join(t.model_dump_json() for t in tasks).encode()).hexdigest())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert result.stdout.strip() == _digest(tasks_30())
    other_seed = generate_app_tasks(APP, BuildConfig(tasks_per_family=30, seed=8))
    assert _digest(other_seed) != _digest(tasks_30())


# ---------------------------------------------------------------- partial scores of wrong agents


def test_create_post_wrong_extra_and_missing_writes_fail_the_right_checks() -> None:
    task = family_tasks("create_post_with_flair")[0]
    gold = task.reference_solution[-1].arguments
    world = APP.world()
    community = seed_one("SELECT id FROM communities WHERE name=?", (gold["community"][2:],))
    other_flair = seed_one("SELECT name FROM flairs WHERE community_id=? AND name != ? ORDER BY id LIMIT 1",
                           (community["id"], gold["flair"]))["name"]
    # weights: post created 2, flair set 1, body as given 1, diff_only 1
    wrong = replay_calls(task, [("create_post", {**gold, "flair": other_flair})])
    assert wrong.reward == 0.0 and wrong.partial_score == pytest.approx(3 / 5)
    assert {c.label for c in wrong.checks if not c.passed} == {"flair set", "only the new post"}

    some_post = world.one("SELECT id FROM posts WHERE removed=0 AND community_id=? ORDER BY id LIMIT 1", (community["id"],))
    assert some_post is not None
    extra = replay_calls(task, [("create_post", gold), ("add_comment", {"post_id": some_post["id"], "body": "Nice!"})])
    assert extra.reward == 0.0 and extra.partial_score == pytest.approx(4 / 5)
    assert [c.label for c in extra.checks if not c.passed] == ["only the new post"]
    assert "unexpected: insert comments" in next(c.detail for c in extra.checks if not c.passed)

    missing = replay_calls(task, [])
    assert missing.reward == 0.0 and missing.partial_score == 0.0
    assert "missing: insert posts" in next(c.detail for c in missing.checks if c.kind == "diff_only")


def test_join_and_post_with_the_post_missing_keeps_credit_for_the_join() -> None:
    task = family_tasks("join_and_post")[0]
    join = task.reference_solution[0]
    verdict = replay_calls(task, [(join.name, join.arguments)])
    # weights: joined 1, post created 2, flair 1, body 1, diff_only 1 → only the join passes
    assert verdict.reward == 0.0 and verdict.partial_score == pytest.approx(1 / 6)
    assert [c.label for c in verdict.checks if c.passed] == ["joined the community"]


def test_moderation_that_removes_a_post_under_another_rule_fails_the_diff() -> None:
    task = family_tasks("moderate_reports")[0]
    calls = [(c.name, c.arguments) for c in task.reference_solution]
    community = task.reference_solution[0].arguments["community"][2:]
    distractor = seed_one(
        "SELECT r.post_id FROM reports r JOIN posts p ON p.id=r.post_id JOIN communities c ON c.id=p.community_id "
        "JOIN community_rules cr ON cr.id=r.rule_id WHERE c.name=? AND r.status='open' AND cr.number != 2 "
        "ORDER BY r.id LIMIT 1", (community,))["post_id"]
    verdict = replay_calls(task, [*calls, ("remove_post", {"post_id": distractor, "reason": "Rule 1"})])
    failed = [c for c in verdict.checks if not c.passed]
    assert verdict.reward == 0.0 and [c.label for c in failed] == ["only those removals and that ban"]
    total = sum(c.weight for c in verdict.checks)
    assert verdict.partial_score == pytest.approx((total - 2) / total)

    no_ban = replay_calls(task, calls[:-1])
    assert {c.label for c in no_ban.checks if not c.passed} == {"repeat offender banned", "only those removals and that ban"}


def test_an_agent_that_attempts_the_impossible_write_loses_credit() -> None:
    task = next(t for t in family_tasks("impossible_vote_or_post") if t.metadata["variant"] == "vote_again")
    post_id = task.reference_solution[-1].arguments["post_id"]
    env = make_env("forum")
    env.reset(task.env_variables)
    assert env.call_tool("vote", {"direction": "up", "post_id": post_id}).is_error
    verdict = verify_task(task, env, "Done, I upvoted it again.")
    assert {c.label for c in verdict.checks if not c.passed} == {"vote not attempted", "says it cannot"}
    assert verdict.partial_score == pytest.approx(2 / 4)


def test_lookup_answer_must_hold_the_facts() -> None:
    task = family_tasks("top_post_in_month")[0]
    env = make_env("forum")
    env.reset(task.env_variables)
    assert verify_task(task, env, task.expected_answer).reward == 1.0
    wrong = verify_task(task, env, "The top post was something else with a score of 1.")
    assert wrong.reward == 0.0 and wrong.partial_score == pytest.approx(1 / 3)
