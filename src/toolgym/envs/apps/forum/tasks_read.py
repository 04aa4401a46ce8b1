"""Forum task families that only read: the top post of a month or of recent days, a post's author and
comments, my latest post, the posts of a day."""

from __future__ import annotations

import calendar
import datetime as dt
import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.forum.task_common import (
    CONTEXT_FIRST,
    LATE_LAST,
    comment_count,
    communities,
    late_today,
    viewers,
    visible_posts,
)

TEXTS = kit.module_texts(__file__)

LAST_SEEDED = dt.date(2026, 8, 20)


def top_post_in_month(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    month = rng.randint(3, 8)
    first = dt.date(2026, month, 1)
    last = dt.date(2026, month, calendar.monthrange(2026, month)[1])
    today = late_today(rng)
    rows = [p for p in visible_posts(world, community["id"], today)
            if first.isoformat() <= p["created_on"] <= last.isoformat()]
    top = kit.unique_best(rows, "score", largest=True)
    if top is None:
        return None
    asker = rng.choice(viewers(world, community))
    month_text = f"{calendar.month_name[month]} 2026"
    index, prompt = kit.phrase(rng, TEXTS["TOP_MONTH"], c=community["name"], month=month_text)
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(asker, today, "display_name"),
        reference_solution=[kit.call("search_posts", community=f"r/{community['name']}", since=first.isoformat(),
                                 until=last.isoformat(), sort="top", limit=5)],
        expected_answer=f'The top post in r/{community["name"]} in {month_text} is "{top["title"]}" '
                        f'with a score of {top["score"]}.',
        checks=kit.lookup_checks([top["title"], str(top["score"])], per_fact=False),
        difficulty=1,
        metadata={"phrasing": index},
    )


def post_author_and_comments(rng: random.Random, world: World) -> TaskDraft | None:
    community = rng.choice(communities(world))
    today = late_today(rng)
    post = rng.choice(visible_posts(world, community["id"], today))
    askers = [u for u in viewers(world, community) if u["id"] != post["author_id"]]
    asker = rng.choice(askers)
    count = comment_count(world, post["id"], today)
    index, prompt = kit.phrase(rng, TEXTS["POST_DETAILS"], c=community["name"], title=post["title"])
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(asker, today, "display_name"),
        reference_solution=[
            kit.call("search_posts", community=f"r/{community['name']}", query=post["title"], limit=5),
            kit.call("get_post", post_id=post["id"]),
        ],
        expected_answer=f'"{post["title"]}" was posted by {post["author"]} and has {kit.plural(count, "comment")}.',
        checks=kit.lookup_checks([post["author"], str(count)], per_fact=False),
        difficulty=1,
        metadata={"phrasing": index},
    )


def my_latest_post(rng: random.Random, world: World) -> TaskDraft | None:
    today = kit.random_day(rng, CONTEXT_FIRST, LAST_SEEDED).isoformat()
    me = rng.choice(world.query("SELECT * FROM users ORDER BY id"))
    mine = world.query(
        "SELECT p.*, c.name AS community FROM posts p JOIN communities c ON c.id = p.community_id "
        "WHERE p.author_id=? AND p.created_on <= ? ORDER BY p.created_on DESC, p.id DESC",
        (me["id"], today),
    )
    if not mine:
        return None
    scoped = rng.random() < 0.6
    community = rng.choice(sorted({p["community"] for p in mine})) if scoped else None
    if community is not None:
        mine = [p for p in mine if p["community"] == community]
    if len(mine) > 1 and mine[1]["created_on"] == mine[0]["created_on"]:
        return None
    latest = mine[0]
    ask = rng.choice(["score", "comments", "both"])
    where = f" in r/{community}" if community else ""
    index, prompt = kit.phrase(rng, TEXTS["MY_LATEST"][ask], where=where)
    count = comment_count(world, latest["id"], today)
    values = [latest["title"]]
    facts = []
    if ask in ("score", "both"):
        values.append(str(latest["score"]))
        facts.append(f"a score of {latest['score']}")
    if ask in ("comments", "both"):
        values.append(str(count))
        facts.append(kit.plural(count, "comment"))
    arguments: dict[str, Any] = {"limit": 3}
    if community:
        arguments["community"] = f"r/{community}"
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(me, today, "display_name"),
        reference_solution=[kit.call("list_my_posts", **arguments)],
        expected_answer=f'Your most recent post{where} is "{latest["title"]}" (r/{latest["community"]}, '
                        f'{latest["created_on"]}), with {" and ".join(facts)}.',
        checks=kit.lookup_checks(values, per_fact=False),
        difficulty=1,
        metadata={"phrasing": f"{ask}-{index}"},
    )


def posts_on_a_day(rng: random.Random, world: World) -> TaskDraft | None:
    today_date = kit.random_day(rng, CONTEXT_FIRST, dt.date(2026, 8, 21))
    kind = rng.choice(["yesterday", "the day before yesterday", "3 days ago", "last"])
    if kind == "last":
        offset = rng.randint(1, 7)
        target = today_date - dt.timedelta(days=offset)
        when = f"last {calendar.day_name[target.weekday()]}"
    else:
        offset = {"yesterday": 1, "the day before yesterday": 2, "3 days ago": 3}[kind]
        target = today_date - dt.timedelta(days=offset)
        when = kind
    community = rng.choice(communities(world))
    posts = [p for p in visible_posts(world, community["id"], today_date.isoformat())
             if p["created_on"] == target.isoformat()]
    if not 1 <= len(posts) <= 4:
        return None
    asker = rng.choice(viewers(world, community))
    index, prompt = kit.phrase(rng, TEXTS["POSTS_ON_DAY"], c=community["name"], when=when)
    searched = "2 days ago" if kind == "the day before yesterday" else when
    titles = [p["title"] for p in posts]
    listed = "; ".join(f'"{t}"' for t in titles)
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(asker, today_date.isoformat(), "display_name"),
        reference_solution=[kit.call("search_posts", community=f"r/{community['name']}", since=searched, until=searched,
                                 sort="new", limit=10)],
        expected_answer=f"Posts in r/{community['name']} on {target.isoformat()} ({when}): {listed}.",
        checks=kit.lookup_checks(titles, per_fact=False),
        difficulty=2,
        metadata={"phrasing": index},
    )


PERIODS = {3: "3 days", 5: "5 days", 7: "7 days", 10: "10 days", 14: "14 days", 30: "30 days"}


def top_post_recent(rng: random.Random, world: World) -> TaskDraft | None:
    days = rng.choice(sorted(PERIODS))
    today_date = kit.random_day(rng, CONTEXT_FIRST, LATE_LAST)
    community = rng.choice(communities(world))
    wide = (today_date - dt.timedelta(days=days)).isoformat()
    narrow = (today_date - dt.timedelta(days=days - 1)).isoformat()
    rows = [p for p in visible_posts(world, community["id"], today_date.isoformat()) if p["created_on"] >= wide]
    top = kit.unique_best(rows, "score", largest=True)
    if top is None or top["created_on"] < narrow:
        return None  # "past N days" read either way gives the same answer
    asker = rng.choice(viewers(world, community))
    index, prompt = kit.phrase(rng, TEXTS["TOP_RECENT"], c=community["name"], period=PERIODS[days])
    return TaskDraft(
        prompt=prompt,
        env_variables=kit.env_for(asker, today_date.isoformat(), "display_name"),
        reference_solution=[kit.call("search_posts", community=f"r/{community['name']}", since=f"{days} days ago",
                                 sort="top", limit=3)],
        expected_answer=f'The top post in r/{community["name"]} from the past {PERIODS[days]} is "{top["title"]}" '
                        f'with a score of {top["score"]}.',
        checks=kit.lookup_checks([top["title"], str(top["score"])], per_fact=False),
        difficulty=2,
        metadata={"phrasing": index},
    )
