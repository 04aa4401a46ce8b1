"""Deal task families: the biggest deal of a company, stage moves, close-date and amount changes, picking the
deal closing soonest, stepping a deal through the pipeline, winning one, and the moves the rules forbid."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.crm.rules import (
    LAST_OPEN_POSITION,
    LIFECYCLE_STAGES,
    LOST_STAGE,
    WON_STAGE,
    lifecycle_rank,
)
from toolgym.envs.apps.crm.task_common import (
    companies,
    deals,
    name_matches_only_itself,
    sales_users,
    stage_names,
)
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, updated
from toolgym.schema import Check

# ---------------------------------------------------------------- lookup: biggest open deal

TEXTS = kit.module_texts(__file__)

BIGGEST_DEAL = {tuple(key.split()): value for key, value in TEXTS["BIGGEST_DEAL"].items()}


def biggest_open_deal(rng: random.Random, world: World) -> TaskDraft | None:
    """Look a company up and compare the amounts of its open deals; answer two facts about the biggest one."""
    company = rng.choice(companies(world))
    if not name_matches_only_itself(world, company):
        return None
    open_deals = deals(world, "d.company_id=? AND d.status='open'", (company["id"],))
    best = kit.unique_best(open_deals, "amount", largest=True)
    if best is None or len(open_deals) < 2:
        return None
    asked = sorted(BIGGEST_DEAL)[rng.randrange(len(BIGGEST_DEAL))]
    if "contact" in asked and best["contact"] is None:
        return None
    templates = BIGGEST_DEAL[asked]
    facts = {"stage": best["stage"], "owner": best["owner"], "close_date": best["close_date"],
             "contact": best["contact"]}
    contact = f", with {best['contact']} as the contact" if best["contact"] else ""
    phrasing, prompt = kit.phrase(rng, templates, company=company["name"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([best["name"], *(facts[k] for k in asked)]),
        reference_solution=[kit.call("search_crm_companies", query=company["name"]),
                            kit.call("get_crm_company", company_id=company["id"])],
        env_variables=kit.env_for(rng.choice(sales_users(world)), kit.random_day(rng)),
        expected_answer=(f"The biggest open deal with {company['name']} is {best['name']} ({kit.money(best['amount'])}), "
                         f"in {best['stage']}, owned by {best['owner']}, closing {best['close_date']}{contact}."),
        difficulty=1,
        metadata={"phrasing": "-".join(asked) + str(phrasing), "deal_id": best["id"]},
    )


# ---------------------------------------------------------------- write: move one stage or mark lost

ADVANCE = TEXTS["ADVANCE"]
MARK_LOST = TEXTS["MARK_LOST"]
LOST_PHRASES = TEXTS["LOST_PHRASES"]


def deal_stage_update(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write on an open deal named in the prompt: one stage forward, or Closed Lost with a reason."""
    deal = rng.choice(deals(world, "d.status='open'"))
    today = kit.today_before(rng, kit.day_of(deal["close_date"]), 60, same_day=True)
    if today is None:
        return None
    names = stage_names(world)
    lost = rng.random() < 0.4
    where = {"id": deal["id"]}
    expected = [updated("deals", where, ["stage_id", "status", "closed_on", "lost_reason"])]
    if lost:
        reason = sorted(LOST_PHRASES)[rng.randrange(len(LOST_PHRASES))]
        phrasing, prompt = kit.phrase(rng, MARK_LOST, deal=deal["name"], reason=LOST_PHRASES[reason])
        target = next(p for p, n in names.items() if n == LOST_STAGE)
        checks: list[Check] = [
            field_is("deals", where, "stage_id", target, f"{deal['name']} in {LOST_STAGE}", weight=3.0),
            field_is("deals", where, "status", "lost", "deal is lost", weight=1.0),
            field_is("deals", where, "lost_reason", reason, f"lost reason {reason}", weight=1.0),
        ]
        move = kit.call("move_deal_stage", deal_id=deal["id"], stage=LOST_STAGE, lost_reason=reason)
        answer = f"Marked {deal['name']} as {LOST_STAGE} (reason: {reason}); it was in {deal['stage']}."
        key = f"lost{phrasing}"
    else:
        target = deal["position"] + 1
        phrasing, prompt = kit.phrase(rng, ADVANCE, deal=deal["name"], next=names[target])
        status = "won" if names[target] == WON_STAGE else "open"
        checks = [
            field_is("deals", where, "stage_id", target, f"{deal['name']} in {names[target]}", weight=3.0),
            field_is("deals", where, "status", status, f"deal is {status}", weight=1.0),
        ]
        move = kit.call("move_deal_stage", deal_id=deal["id"], stage=names[target])
        answer = f"Moved {deal['name']} from {deal['stage']} to {names[target]}."
        key = f"next{phrasing}"
    return TaskDraft(
        prompt=prompt,
        checks=[*checks, kit.diff_only(expected)],
        reference_solution=[kit.call("list_deals", query=deal["name"]), move],
        env_variables=kit.env_for(kit.user_by_id(world, deal["owner_id"]), today),
        expected_answer=answer,
        difficulty=1,
        metadata={"phrasing": key, "deal_id": deal["id"]},
    )


# ---------------------------------------------------------------- write: close date or amount

RESCHEDULE = TEXTS["RESCHEDULE"]
REVALUE = TEXTS["REVALUE"]


def reschedule_deal(rng: random.Random, world: World) -> TaskDraft | None:
    """A single field edit on an open deal: a later close date, or a new amount."""
    deal = rng.choice(deals(world, "d.status='open'"))
    today = kit.today_before(rng, kit.day_of(deal["close_date"]), 60, same_day=True)
    if today is None:
        return None
    where = {"id": deal["id"]}
    if rng.random() < 0.5:
        new_date = kit.iso(kit.day_of(deal["close_date"]) + dt.timedelta(days=rng.randint(7, 45)))
        phrasing, prompt = kit.phrase(
            rng, RESCHEDULE, deal=deal["name"], date=new_date, date_h=kit.human_date(new_date, year=True))
        field, value, key = "close_date", new_date, f"date{phrasing}"
        answer = f"{deal['name']} now closes on {new_date} (was {deal['close_date']})."
    else:
        new_amount = deal["amount"] + rng.choice([-1, 1, 2, 3]) * rng.randint(2, 12) * 1000
        if new_amount < 1000 or new_amount == deal["amount"]:
            return None
        phrasing, prompt = kit.phrase(rng, REVALUE, deal=deal["name"], amount=kit.money(new_amount))
        field, value, key = "amount", new_amount, f"amount{phrasing}"
        answer = f"{deal['name']} is now worth {kit.money(new_amount)} (was {kit.money(deal['amount'])})."
    return TaskDraft(
        prompt=prompt,
        checks=[field_is("deals", where, field, value, f"{deal['name']} {field} = {value}", weight=3.0),
                kit.diff_only([updated("deals", where, [field])])],
        reference_solution=[kit.call("list_deals", query=deal["name"]),
                            kit.call("update_deal", deal_id=deal["id"], **{field: value})],
        env_variables=kit.env_for(kit.user_by_id(world, deal["owner_id"]), today),
        expected_answer=answer,
        difficulty=1,
        metadata={"phrasing": key, "deal_id": deal["id"]},
    )


# ---------------------------------------------------------------- search -> choose -> write: closing soonest

SOONEST_COMPANY = TEXTS["SOONEST_COMPANY"]
SOONEST_MINE = TEXTS["SOONEST_MINE"]
CALL_SUMMARIES = TEXTS["CALL_SUMMARIES"]


def call_closing_soonest(rng: random.Random, world: World) -> TaskDraft | None:
    """Among a company's (or my) open deals pick the earliest close date and log a call on that deal."""
    summary = rng.choice(CALL_SUMMARIES)
    if rng.random() < 0.5:
        company = rng.choice(companies(world))
        if not name_matches_only_itself(world, company):
            return None
        pool = deals(world, "d.company_id=? AND d.status='open'", (company["id"],))
        ordered = sorted(pool, key=lambda d: (d["close_date"], d["id"]))
        if len(ordered) < 2 or ordered[0]["close_date"] == ordered[1]["close_date"]:
            return None
        best = ordered[0]
        user = kit.user_by_id(world, best["owner_id"])
        phrasing, prompt = kit.phrase(rng, SOONEST_COMPANY, company=company["name"], summary=summary)
        lookup = [kit.call("search_crm_companies", query=company["name"]), kit.call("get_crm_company", company_id=company["id"])]
        key = f"company{phrasing}"
    else:
        user = rng.choice(sales_users(world))
        ordered = sorted(deals(world, "d.owner_id=? AND d.status='open'", (user["id"],)),
                         key=lambda d: (d["close_date"], d["id"]))
        if len(ordered) < 2 or ordered[0]["close_date"] == ordered[1]["close_date"]:
            return None
        best = ordered[0]
        phrasing, prompt = kit.phrase(rng, SOONEST_MINE, summary=summary)
        lookup = [kit.call("list_deals", owner="me")]
        key = f"mine{phrasing}"
    today = kit.today_before(rng, kit.day_of(best["close_date"]), 60, same_day=True)
    if today is None:
        return None
    me = user["id"]
    new = {"kind": "call", "deal_id": best["id"], "user_id": me, "occurred_on": kit.iso(today)}
    return TaskDraft(
        prompt=prompt,
        checks=[
            has_row("activities", new, f"call logged on {best['name']}", weight=3.0, count=1),
            field_is("activities", new, "summary", summary, "summary as given", weight=1.0),
            kit.diff_only([inserted("activities", {"deal_id": best["id"]})]),
            kit.answer_has([best["name"]], label="answer names the chosen deal"),
        ],
        reference_solution=[*lookup, kit.call("log_crm_activity", kind="call", summary=summary, deal_id=best["id"])],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"{best['name']} closes soonest ({best['close_date']}); I logged the call on it: "
                         f"\"{summary}\"."),
        difficulty=2,
        metadata={"phrasing": key, "deal_id": best["id"]},
    )


# ---------------------------------------------------------------- multi-step: step through stages + meeting

STEPWISE = TEXTS["STEPWISE"]
MEETING_SUMMARIES = ("Demo went well, legal review next", "Met the buying committee", "Agreed on scope and pricing",
                     "Technical deep dive with their IT team", "Executive sponsor meeting")


def advance_deal_stepwise(rng: random.Random, world: World) -> TaskDraft | None:
    """Several moves (two or three stages, one at a time, as the rules require) plus a logged meeting."""
    deal = rng.choice(deals(world, "d.status='open' AND s.position <= ?", (LAST_OPEN_POSITION - 2,)))
    steps = rng.randint(2, min(3, LAST_OPEN_POSITION - deal["position"]))
    today = kit.today_before(rng, kit.day_of(deal["close_date"]), 60, same_day=True)
    if today is None:
        return None
    names = stage_names(world)
    target = deal["position"] + steps
    summary = rng.choice(MEETING_SUMMARIES)
    me = deal["owner_id"]
    meeting = {"kind": "meeting", "deal_id": deal["id"], "user_id": me, "occurred_on": kit.iso(today)}
    moves = [kit.call("move_deal_stage", deal_id=deal["id"], stage=names[p])
             for p in range(deal["position"] + 1, target + 1)]
    phrasing, prompt = kit.phrase(rng, STEPWISE, deal=deal["name"], target=names[target], summary=summary)
    return TaskDraft(
        prompt=prompt,
        checks=[
            field_is("deals", {"id": deal["id"]},
                    "stage_id", target, f"{deal['name']} in {names[target]}", weight=3.0),
            has_row("activities", meeting, "meeting logged on the deal", weight=2.0, count=1),
            kit.diff_only([updated("deals", {"id": deal["id"]}, ["stage_id"]),
                       inserted("activities", {"deal_id": deal["id"]})]),
        ],
        reference_solution=[kit.call("list_deals", query=deal["name"]), *moves,
                            kit.call("log_crm_activity", kind="meeting", summary=summary, deal_id=deal["id"])],
        env_variables=kit.env_for(kit.user_by_id(world, me), today),
        expected_answer=(f"Moved {deal['name']} from {deal['stage']} through "
                         f"{', '.join(names[p] for p in range(deal['position'] + 1, target + 1))} and logged the "
                         "meeting."),
        difficulty=2,
        metadata={"phrasing": phrasing, "deal_id": deal["id"], "steps": steps},
    )


# ---------------------------------------------------------------- multi-step: win a deal

WIN = TEXTS["WIN"]
WIN_NOTES = ("Contract signed, kickoff next week", "Signed after final legal review", "PO received, onboarding to start",
             "Signed a two-year term", "Signed with a 5% multi-year discount", "Countersigned by their CFO today")


def win_deal(rng: random.Random, world: World) -> TaskDraft | None:
    """Three writes that belong together: the deal to Closed Won, its contact to customer, a note on the deal."""
    pool = [d for d in deals(world, "d.status='open' AND s.position=? AND d.contact_id IS NOT NULL",
                             (LAST_OPEN_POSITION,))
            if lifecycle_rank(d["contact_stage"]) < LIFECYCLE_STAGES.index("customer")]
    deal = rng.choice(pool)
    today = kit.today_before(rng, kit.day_of(deal["close_date"]), 60, same_day=True)
    if today is None:
        return None
    names = stage_names(world)
    won = next(p for p, n in names.items() if n == WON_STAGE)
    note = rng.choice(WIN_NOTES)
    me = deal["owner_id"]
    new_note = {"kind": "note", "deal_id": deal["id"], "user_id": me, "occurred_on": kit.iso(today)}
    phrasing, prompt = kit.phrase(
        rng, WIN, deal=deal["name"], contact=deal["contact"], company=deal["company"], note=note)
    return TaskDraft(
        prompt=prompt,
        checks=[
            has_row("deals", {"id": deal["id"], "stage_id": won, "status": "won", "closed_on": kit.iso(today)},
                    f"{deal['name']} won today", weight=3.0, count=1),
            field_is("contacts", {"id": deal["contact_id"]},
                    "lifecycle_stage", "customer", f"{deal['contact']} is a customer", weight=2.0),
            has_row("activities", new_note, "note logged on the deal", weight=2.0, count=1),
            kit.diff_only([
                updated("deals", {"id": deal["id"]}, ["stage_id", "status", "closed_on"]),
                updated("contacts", {"id": deal["contact_id"]}, ["lifecycle_stage"]),
                inserted("activities", {"deal_id": deal["id"]}),
            ]),
        ],
        reference_solution=[
            kit.call("list_deals", query=deal["name"]),
            kit.call("move_deal_stage", deal_id=deal["id"], stage=WON_STAGE),
            kit.call("update_contact_stage", contact_id=deal["contact_id"], lifecycle_stage="customer"),
            kit.call("log_crm_activity", kind="note", summary=note, deal_id=deal["id"]),
        ],
        env_variables=kit.env_for(kit.user_by_id(world, me), today),
        expected_answer=(f"{deal['name']} is now Closed Won, {deal['contact']} is a customer, and the note is logged "
                         "on the deal."),
        difficulty=3,
        metadata={"phrasing": phrasing, "deal_id": deal["id"]},
    )


# ---------------------------------------------------------------- impossible: closed deals stay closed

REOPEN = TEXTS["REOPEN"]
UNWIN = TEXTS["UNWIN"]


def reopen_closed_deal(rng: random.Random, world: World) -> TaskDraft | None:
    """A won or lost deal must not be moved again: reopening it (or un-winning it) is refused."""
    deal = rng.choice(deals(world, "d.status IN ('won', 'lost')"))
    names = stage_names(world)
    if deal["status"] == "won" and rng.random() < 0.35:
        phrasing = rng.randrange(len(UNWIN))
        prompt, key = UNWIN[phrasing].format(deal=deal["name"]), f"unwin{phrasing}"
    else:
        stage = names[rng.randint(2, LAST_OPEN_POSITION)]
        phrasing, prompt = kit.phrase(rng, REOPEN, deal=deal["name"], stage=stage, company=deal["company"])
        key = f"reopen{phrasing}"
    outcome = "won" if deal["status"] == "won" else "lost"
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("move_deal_stage"),
        reference_solution=[kit.call("list_deals", query=deal["name"], status="all")],
        env_variables=kit.env_for(kit.user_by_id(world, deal["owner_id"]), kit.random_day(rng)),
        expected_answer=(f"I cannot change {deal['name']}: it was closed as {outcome} ({deal['stage']}) on "
                         f"{deal['closed_on']}, and closed deals cannot be reopened or moved."),
        difficulty=1,
        metadata={"phrasing": key, "deal_id": deal["id"]},
    )


# ---------------------------------------------------------------- impossible: skipping stages

SKIP = TEXTS["SKIP"]


def skip_stage_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The user explicitly asks to skip stages; the pipeline only moves one stage at a time."""
    deal = rng.choice(deals(world, "d.status='open' AND s.position <= ?", (LAST_OPEN_POSITION - 1,)))
    names = stage_names(world)
    won = next(p for p, n in names.items() if n == WON_STAGE)
    target = rng.randint(deal["position"] + 2, won)
    phrasing = rng.randrange(len(SKIP))
    following = names[deal["position"] + 1]
    today = kit.today_before(rng, kit.day_of(deal["close_date"]), 60, same_day=True) or kit.random_day(rng)
    return TaskDraft(
        prompt=SKIP[phrasing].format(deal=deal["name"], target=names[target], next=following, current=deal["stage"]),
        checks=kit.impossible_checks("move_deal_stage"),
        reference_solution=[kit.call("list_deals", query=deal["name"])],
        env_variables=kit.env_for(kit.user_by_id(world, deal["owner_id"]), today),
        expected_answer=(f"I cannot skip stages: {deal['name']} is in {deal['stage']}, so the only stage it can move "
                         f"to next is {following}; deals move forward one stage at a time."),
        difficulty=2,
        metadata={"phrasing": phrasing, "deal_id": deal["id"], "target": names[target]},
    )
