"""Task families that need the runtime context: whose deals "my deals" are, which days "this month",
"tomorrow" and "next Friday" mean. The same prompt has a different answer for another user or day."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.crm.rules import month_bounds
from toolgym.envs.apps.crm.task_common import contacts, deals, sales_users
from toolgym.envs.context import WEEKDAYS, resolve_date
from toolgym.envs.kit.row_checks import has_row, inserted
from toolgym.schema import Check

# ---------------------------------------------------------------- context lookup: my deals closing soon

TEXTS = kit.module_texts(__file__)

CLOSING = TEXTS["CLOSING"]
DAY_WINDOWS = (5, 7, 10, 14, 20, 21, 28, 30, 40, 45, 60, 75, 90)


def my_deals_closing(rng: random.Random, world: World) -> TaskDraft | None:
    """'My deals closing this month / next month / in the next N days': user and today decide the answer."""
    user = rng.choice(sales_users(world))
    today = kit.random_day(rng)
    mode = rng.choice(["this month", "next month", "days"])
    mine = deals(world, "d.owner_id=? AND d.status='open'", (user["id"],))
    if mode == "days":
        days = rng.choice(DAY_WINDOWS)
        first, last = kit.iso(today), kit.iso(today + dt.timedelta(days=days))
        period = f"in the next {days} days"
        edges = {kit.iso(today - dt.timedelta(days=1)), first, last, kit.iso(today + dt.timedelta(days=days + 1))}
        if any(d["close_date"] in edges for d in mine):
            return None  # a deal on the edge of the window would make "in the next N days" ambiguous
        lookup = kit.call("list_deals", owner="me")
    else:
        first, last = month_bounds(mode, today)
        period = mode
        if mode == "this month" and any(first <= d["close_date"] < kit.iso(today) for d in mine):
            return None  # overdue deals earlier this month: would they count? keep the question unambiguous
        lookup = kit.call("list_deals", owner="me", close_month=mode)
    hits = sorted((d for d in mine if first <= d["close_date"] <= last), key=lambda d: (d["close_date"], d["id"]))
    if not 1 <= len(hits) <= 5:
        return None
    phrasing = rng.randrange(len(CLOSING))
    with_stage = phrasing >= 3
    values = [d["name"] for d in hits] + (sorted({d["stage"] for d in hits}) if with_stage else [])
    listing = "; ".join(f"{d['name']} ({d['stage']}, closes {d['close_date']})" for d in hits)
    return TaskDraft(
        prompt=CLOSING[phrasing].format(period=period),
        checks=[*(kit.answer_has([v]) for v in values), kit.diff_only([], weight=1.0)],
        reference_solution=[lookup],
        env_variables=kit.env_for(user, today),
        expected_answer=f"You have {len(hits)} open deal(s) closing {period} ({first} to {last}): {listing}.",
        difficulty=2,
        metadata={"phrasing": phrasing, "period": period, "deal_ids": [d["id"] for d in hits]},
    )


# ---------------------------------------------------------------- context write: remind me tomorrow

REMIND = TEXTS["REMIND"]
ACTIONS = ("call {name} at {company}", "send {name} ({company}) the pricing sheet", "check in with {name} from {company}",
           "email {name} at {company} about the renewal")
RELATIVE_DAYS = ("tomorrow", "the day after tomorrow", "next Friday", "next Monday", "in 3 days", "in 5 days",
                 "next Thursday")


def remind_me_relative(rng: random.Random, world: World) -> TaskDraft | None:
    """A reminder about a contact, due on a day named relative to CURRENT_DATE ('tomorrow', 'next Friday')."""
    contact = rng.choice(contacts(world))
    user = kit.user_by_id(world, contact["owner_id"])
    today = kit.random_day(rng)
    when = rng.choice(RELATIVE_DAYS)
    due = kit.iso(resolve_date(when, today))
    action = rng.choice(ACTIONS).format(name=contact["name"], company=contact["company"])
    where = {"assignee_id": user["id"], "contact_id": contact["id"], "due_date": due, "done": 0,
             "created_on": kit.iso(today)}
    phrasing, prompt = kit.phrase(rng, REMIND, when=when, When_cap=when[0].upper() + when[1:], action=action)
    return TaskDraft(
        prompt=prompt,
        checks=[has_row("reminders", where, f"reminder about {contact['name']} due {due}", weight=3.0, count=1),
                kit.diff_only([inserted("reminders", {"contact_id": contact["id"]})])],
        reference_solution=[
            kit.call("search_crm_contacts", query=contact["name"]),
            kit.call("create_crm_reminder", title=action[0].upper() + action[1:], due_date=when, contact_id=contact["id"]),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=f"Done: a reminder to {action} is set for {due}.",
        difficulty=2,
        metadata={"phrasing": phrasing, "when": when, "contact_id": contact["id"]},
    )


# ---------------------------------------------------------------- context lookup: who to follow up with

FOLLOW_UPS = TEXTS["FOLLOW_UPS"]


def _when_phrases(day: dt.date) -> list[tuple[str, dt.date]]:
    """Ways to name `day` relative to a CURRENT_DATE, each with the CURRENT_DATE that makes it mean `day`."""
    options = [("today", day), ("tomorrow", day - dt.timedelta(days=1)),
               ("the day after tomorrow", day - dt.timedelta(days=2))]
    options += [(f"in {n} days", day - dt.timedelta(days=n)) for n in range(3, 7)]
    weekday = WEEKDAYS[day.weekday()].capitalize()
    for back in range(1, 7):
        options.append((f"this {weekday}", day - dt.timedelta(days=back)))
    for back in range(1, 8):
        options.append((f"next {weekday}", day - dt.timedelta(days=back)))
    return [(text, today) for text, today in options
            if kit.FIRST_DAY <= today <= kit.LAST_DAY and resolve_date(text, today) == day]


def my_follow_ups_on_day(rng: random.Random, world: World) -> TaskDraft | None:
    """The logged-in user's open reminders due on a day said relatively; answer the contacts they are about."""
    slots = world.query(
        "SELECT assignee_id, due_date, COUNT(*) AS n FROM reminders WHERE done = 0 AND due_date BETWEEN ? AND ? "
        "GROUP BY assignee_id, due_date HAVING COUNT(*) <= 3 ORDER BY assignee_id, due_date",
        (kit.iso(kit.FIRST_DAY), kit.iso(kit.LAST_DAY + dt.timedelta(days=7))))
    slot = rng.choice(slots)
    day = kit.day_of(slot["due_date"])
    phrases = _when_phrases(day)
    if not phrases:
        return None
    when, today = rng.choice(phrases)
    due = world.query(
        "SELECT r.id, c.first_name || ' ' || c.last_name AS contact, r.title FROM reminders r "
        "JOIN contacts c ON c.id = r.contact_id WHERE r.assignee_id=? AND r.due_date=? AND r.done=0 ORDER BY r.id",
        (slot["assignee_id"], slot["due_date"]))
    names = sorted({r["contact"] for r in due})
    checks: list[Check] = [kit.answer_has([n]) for n in names]
    checks.append(kit.diff_only([], weight=1.0))
    phrasing, prompt = kit.phrase(rng, FOLLOW_UPS, when=when)
    return TaskDraft(
        prompt=prompt,
        checks=checks,
        reference_solution=[kit.call("list_my_crm_reminders", due_on=when)],
        env_variables=kit.env_for(kit.user_by_id(world, slot["assignee_id"]), today),
        expected_answer=f"Due {day.isoformat()}: " + "; ".join(f"{r['title']} ({r['contact']})" for r in due) + ".",
        difficulty=2,
        metadata={"phrasing": phrasing, "when": when, "reminder_ids": [r["id"] for r in due]},
    )
