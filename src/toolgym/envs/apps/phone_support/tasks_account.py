"""Account task families of phone_support: the customer asks, the agent acts alone (no user tools).

Lookups, a plan change, the cheapest plan that fits, travel preparation, paying and resuming,
suspending a lost phone, and three requests the rules forbid.
"""

from __future__ import annotations

import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.phone_support.data import ABROAD
from toolgym.envs.apps.phone_support.rules import TOPUP_PRICES
from toolgym.envs.apps.phone_support.task_common import (
    WHEN_TRAVEL,
    country_name,
    first_name,
    gb_text,
    line_event,
    lines,
    plans,
)
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, updated
from toolgym.schema import Check, ToolCall

# ---------------------------------------------------------------- lookup


TEXTS = kit.module_texts(__file__)

LOOKUP_PROMPTS = TEXTS["LOOKUP_PROMPTS"]


def line_plan_lookup(rng: random.Random, world: World) -> TaskDraft | None:
    """Plan and data used of one line: a read-only look-up."""
    line = kit.pick(rng, lines(world, "l.status = 'active' AND l.data_used_gb != CAST(l.data_used_gb AS INTEGER)"))
    if line is None:
        return None
    used = gb_text(line["data_used_gb"])
    phrasing, prompt = kit.phrase(rng, LOOKUP_PROMPTS, phone=line["phone_number"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([line["plan_name"], used]),
        reference_solution=[kit.call("get_line_details", phone_number=line["phone_number"])],
        env_variables=kit.env_for(line, kit.random_day(rng)),
        expected_answer=f"{line['phone_number']} is on the {line['plan_name']} plan and has used {used} GB this cycle.",
        difficulty=1,
        metadata={"phrasing": phrasing, "phone_number": line["phone_number"]},
    )


BALANCE_PROMPTS = TEXTS["BALANCE_PROMPTS"]


def my_balance_context(rng: random.Random, world: World) -> TaskDraft | None:
    """'What do I owe': LOGGED_IN_USER decides whose account; the single unpaid bill is the answer."""
    rows = world.query(
        "SELECT b.*, u.username, u.name FROM bills b JOIN accounts a ON a.id = b.account_id "
        "JOIN users u ON u.id = a.user_id WHERE b.status = 'unpaid' AND (SELECT COUNT(*) FROM bills o "
        "WHERE o.account_id = b.account_id AND o.status = 'unpaid') = 1 ORDER BY b.id"
    )
    bill = kit.pick(rng, rows)
    if bill is None:
        return None
    amount = str(bill["amount"])
    phrasing, prompt = kit.phrase(rng, BALANCE_PROMPTS, first=first_name(bill))
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks([amount, bill["due_date"]]),
        reference_solution=[kit.call("get_bills", status="unpaid")],
        env_variables=kit.env_for(bill, kit.random_day(rng)),
        expected_answer=f"You owe ${amount} for {bill['period']}, due on {bill['due_date']}.",
        difficulty=2,
        metadata={"phrasing": phrasing, "bill_id": bill["id"]},
    )


# ---------------------------------------------------------------- writes


CHANGE_PROMPTS = TEXTS["CHANGE_PROMPTS"]


def _plan_fits(line: dict, plan: dict) -> bool:
    """change_plan would accept this move (same rules as the tool)."""
    if not plan["available"] or plan["id"] == line["plan_id"]:
        return False
    if plan["data_gb"] is not None and line["data_used_gb"] > plan["data_gb"] + line["topup_gb"]:
        return False
    return not (line["roaming_enabled"] and not plan["roaming_allowed"])


def _plan_change_checks(line: dict, plan: dict) -> list[Check]:
    return [
        field_is("lines", {"id": line["id"]},
                "plan_id", plan["id"], f"{line['phone_number']} is on {plan['code']}", weight=3.0),
        has_row("line_events", {"line_id": line["id"], "kind": "plan_change"}, "plan change logged", weight=1.0),
        kit.diff_only([updated("lines", {"id": line["id"]}, ["plan_id"]),
                   line_event(line["id"])]),
    ]


def change_plan_write(rng: random.Random, world: World) -> TaskDraft | None:
    """Move one active line to a named plan the rules allow."""
    line = kit.pick(rng, lines(world, "l.status = 'active'"))
    if line is None:
        return None
    options = [p for p in plans(world) if _plan_fits(line, p)]
    plan = kit.pick(rng, options)
    if plan is None:
        return None
    phrasing, prompt = kit.phrase(rng, CHANGE_PROMPTS, phone=line["phone_number"], plan=plan["name"])
    return TaskDraft(
        prompt=prompt,
        checks=_plan_change_checks(line, plan),
        reference_solution=[kit.call("list_plans"), kit.call("change_plan", phone_number=line["phone_number"],
                                                     plan_code=plan["code"])],
        env_variables=kit.env_for(line, kit.random_day(rng)),
        expected_answer=f"Done: {line['phone_number']} is now on {plan['name']} (${plan['monthly_price']}/month).",
        difficulty=1,
        metadata={"phrasing": phrasing, "plan": plan["code"], "line_id": line["id"]},
    )


CHEAPEST_PROMPTS = TEXTS["CHEAPEST_PROMPTS"]


def cheapest_plan_search(rng: random.Random, world: World) -> TaskDraft | None:
    """Search the plans, choose the cheapest that meets a data (and roaming) need, switch to it."""
    line = kit.pick(rng, lines(world, "l.status = 'active'"))
    if line is None:
        return None
    gb = rng.choice([4, 8, 12, 20, 25])
    need_roaming = rng.random() < 0.4
    candidates = [p for p in plans(world) if p["available"] and (p["data_gb"] is None or p["data_gb"] >= gb)
                  and (p["roaming_allowed"] or not need_roaming)]
    candidates.sort(key=lambda p: (p["monthly_price"], p["id"]))
    if not candidates or (len(candidates) > 1 and candidates[0]["monthly_price"] == candidates[1]["monthly_price"]):
        return None
    plan = candidates[0]
    if not _plan_fits(line, plan):
        return None
    roam = " that allows roaming" if need_roaming else ""
    phrasing, prompt = kit.phrase(rng, CHEAPEST_PROMPTS, phone=line["phone_number"], gb=gb, roam=roam)
    return TaskDraft(
        prompt=prompt,
        checks=[*_plan_change_checks(line, plan), kit.answer_has([plan["name"]])],
        reference_solution=[kit.call("list_plans"), kit.call("change_plan", phone_number=line["phone_number"],
                                                     plan_code=plan["code"])],
        env_variables=kit.env_for(line, kit.random_day(rng)),
        expected_answer=f"The cheapest plan with at least {gb} GB{roam} is {plan['name']} "
                        f"(${plan['monthly_price']}/month); {line['phone_number']} is now on it.",
        difficulty=2,
        metadata={"phrasing": phrasing, "plan": plan["code"], "min_gb": gb, "roaming": need_roaming},
    )


TRAVEL_PROMPTS = TEXTS["TRAVEL_PROMPTS"]


def travel_prep(rng: random.Random, world: World) -> TaskDraft | None:
    """Two writes on one line: enable roaming (plan must allow it) and buy a top-up (capped plan only)."""
    line = kit.pick(rng, lines(world, "l.status = 'active' AND p.roaming_allowed = 1 AND l.roaming_enabled = 0 "
                                  "AND p.data_gb IS NOT NULL"))
    if line is None:
        return None
    gb = rng.choice(sorted(TOPUP_PRICES))
    country = country_name(rng.choice(ABROAD))
    phrasing = rng.randrange(len(TRAVEL_PROMPTS))
    phone = line["phone_number"]
    checks: list[Check] = [
        field_is("lines", {"id": line["id"]}, "roaming_enabled", 1, "roaming enabled on the line", weight=2.0),
        field_is("lines", {"id": line["id"]}, "topup_gb", line["topup_gb"] + gb, f"{gb} GB added", weight=2.0),
        has_row("data_topups", {"line_id": line["id"], "gb": gb},
                "top-up recorded", weight=1.0, count=1 + _topups(world, line, gb)),
        kit.diff_only([
            updated("lines", {"id": line["id"]}, ["roaming_enabled", "topup_gb"]),
            inserted("data_topups", {"line_id": line["id"], "gb": gb}),
            line_event(line["id"]),
        ]),
    ]
    return TaskDraft(
        prompt=TRAVEL_PROMPTS[phrasing].format(phone=phone, gb=gb, country=country, when=rng.choice(WHEN_TRAVEL)),
        checks=checks,
        reference_solution=[kit.call("get_line_details", phone_number=phone), kit.call("enable_roaming", phone_number=phone),
                            kit.call("add_data_topup", phone_number=phone, gb=gb)],
        env_variables=kit.env_for(line, kit.random_day(rng)),
        expected_answer=f"Roaming is enabled on {phone} and a {gb} GB top-up (${TOPUP_PRICES[gb]}) was added. "
                        "Remember to turn on data roaming on your phone when you land.",
        difficulty=2,
        metadata={"phrasing": phrasing, "line_id": line["id"], "gb": gb},
    )


def _topups(world: World, line: dict, gb: int) -> int:
    row = world.one("SELECT COUNT(*) AS n FROM data_topups WHERE line_id = ? AND gb = ?", (line["id"], gb))
    return int(row["n"]) if row else 0


def overdue_bills(world: World, account_id: int, today: str) -> list[dict]:
    return world.query(
        "SELECT * FROM bills WHERE account_id = ? AND status = 'unpaid' AND due_date < ? ORDER BY due_date, id",
        (account_id, today),
    )


def pay_and_resume_checks(world: World, line: dict, bills: list[dict]) -> list[Check]:
    """Every overdue bill paid, the line active again, and nothing else changed."""
    checks: list[Check] = []
    expected = [
        updated("lines", {"id": line["id"]}, ["status", "suspension_reason", "suspended_on"]),
        line_event(line["id"]),
    ]
    for bill in bills:
        checks.append(field_is("bills", {"id": bill["id"]}, "status", "paid", f"bill {bill['period']} paid", weight=1.0))
        checks.append(has_row("payments", {"bill_id": bill["id"], "amount": bill["amount"]}, f"payment of ${bill['amount']} for {bill['period']}", weight=1.0, count=1))
        expected.append(updated("bills", {"id": bill["id"]}, ["status", "paid_on"]))
        expected.append(inserted("payments", {"bill_id": bill["id"]}))
    checks.append(field_is("lines", {"id": line["id"]}, "status", "active", "line resumed", weight=2.0))
    checks.append(kit.diff_only(expected))
    return checks


PAY_RESUME_PROMPTS = TEXTS["PAY_RESUME_PROMPTS"]


def pay_and_resume(rng: random.Random, world: World) -> TaskDraft | None:
    """Multi-step with an order constraint: every overdue bill must be paid before the line resumes."""
    line = kit.pick(rng, lines(world, "l.status = 'suspended' AND l.suspension_reason = 'unpaid_bill'"))
    if line is None:
        return None
    today = kit.random_day(rng)
    bills = overdue_bills(world, line["account_id"], today.isoformat())
    if not bills:
        return None
    phrasing = rng.randrange(len(PAY_RESUME_PROMPTS))
    phone = line["phone_number"]
    total = sum(b["amount"] for b in bills)
    default = world.one("SELECT kind, last4 FROM payment_methods WHERE account_id = ? AND is_default = 1",
                        (line["account_id"],))
    if default is None:
        return None
    card = rng.choice(["my card on file", "my default payment method",
                       f"my {default['kind']} ending {default['last4']}"])
    return TaskDraft(
        prompt=PAY_RESUME_PROMPTS[phrasing].format(phone=phone, card=card, first=first_name(line)),
        checks=pay_and_resume_checks(world, line, bills),
        reference_solution=[kit.call("get_bills", status="unpaid"), *[kit.call("pay_bill", bill_id=b["id"]) for b in bills],
                            kit.call("resume_line", phone_number=phone)],
        env_variables=kit.env_for(line, today),
        expected_answer=f"I paid {len(bills)} overdue bill(s), ${total} in total, and {phone} is active again.",
        difficulty=3 if len(bills) > 1 else 2,
        metadata={"phrasing": phrasing, "line_id": line["id"], "bills": [b["id"] for b in bills]},
    )


PAY_CARD_PROMPTS = TEXTS["PAY_CARD_PROMPTS"]
MONTH_NAMES = {"2025-12": "December", "2026-01": "January", "2026-02": "February", "2026-03": "March"}


def pay_bill_with_card(rng: random.Random, world: World) -> TaskDraft | None:
    """One payment with a named (unexpired) method: the write must use that method, not the default."""
    rows = world.query(
        "SELECT b.*, u.username, u.name, m.id AS method_id, m.kind, m.last4 FROM bills b "
        "JOIN accounts a ON a.id = b.account_id JOIN users u ON u.id = a.user_id "
        "JOIN payment_methods m ON m.account_id = a.id AND m.expires >= '2026-09' "
        "WHERE b.status = 'unpaid' ORDER BY b.id, m.id"
    )
    bill = kit.pick(rng, rows)
    if bill is None or bill["kind"] == "bank":
        return None
    period_name = MONTH_NAMES[bill["period"]]
    same_period = [r for r in rows if r["account_id"] == bill["account_id"] and r["period"] == bill["period"]]
    if sum(1 for r in same_period if r["last4"] == bill["last4"]) != 1:
        return None
    phrasing, prompt = kit.phrase(
        rng, PAY_CARD_PROMPTS, period_name=period_name, kind=bill["kind"], last4=bill["last4"])
    return TaskDraft(
        prompt=prompt,
        checks=[
            field_is("bills", {"id": bill["id"]}, "status", "paid", f"{bill['period']} bill paid", weight=2.0),
            has_row("payments", {"bill_id": bill["id"], "payment_method_id": bill["method_id"], "amount": bill["amount"]},
                    f"paid with the {bill['kind']} ending {bill['last4']}", weight=2.0, count=1),
            kit.diff_only([
                updated("bills", {"id": bill["id"]}, ["status", "paid_on"]),
                inserted("payments", {"bill_id": bill["id"]}),
            ]),
        ],
        reference_solution=[kit.call("get_bills", status="unpaid"), kit.call("list_payment_methods"),
                            kit.call("pay_bill", bill_id=bill["id"], payment_method_id=bill["method_id"])],
        env_variables=kit.env_for(bill, kit.random_day(rng)),
        expected_answer=f"Paid your {period_name} bill of ${bill['amount']} with the {bill['kind']} ending {bill['last4']}.",
        difficulty=2,
        metadata={"phrasing": phrasing, "bill_id": bill["id"], "payment_method_id": bill["method_id"]},
    )


LOST_PROMPTS = TEXTS["LOST_PROMPTS"]
LOST_WHEN = ("today", "this morning", "an hour ago", "earlier today", "at lunch")


def lost_phone_suspend(rng: random.Random, world: World) -> TaskDraft | None:
    """'My line' (LOGGED_IN_USER, single-line accounts) suspended as lost, dated CURRENT_DATE."""
    line = kit.pick(rng, lines(world, "l.status = 'active' AND (SELECT COUNT(*) FROM lines o "
                                  "WHERE o.account_id = l.account_id) = 1"))
    if line is None:
        return None
    today = kit.random_day(rng)
    phrasing = rng.randrange(len(LOST_PROMPTS))
    phone = line["phone_number"]
    return TaskDraft(
        prompt=LOST_PROMPTS[phrasing].format(when=rng.choice(LOST_WHEN), first=first_name(line)),
        checks=[
            field_is("lines", {"id": line["id"]}, "status", "suspended", "line suspended", weight=2.0),
            field_is("lines", {"id": line["id"]},
                    "suspension_reason", "lost_or_stolen", "reason: lost or stolen", weight=1.0),
            field_is("lines", {"id": line["id"]}, "suspended_on", today.isoformat(), "suspended today", weight=1.0),
            kit.diff_only([updated("lines", {"id": line["id"]}, ["status", "suspension_reason", "suspended_on"]), line_event(line["id"])]),
        ],
        reference_solution=[kit.call("get_my_account"),
                            kit.call("suspend_line", phone_number=phone, reason="lost_or_stolen")],
        env_variables=kit.env_for(line, today),
        expected_answer=f"Your line {phone} is suspended as lost or stolen as of {today.isoformat()}.",
        difficulty=2,
        metadata={"phrasing": phrasing, "line_id": line["id"]},
    )


# ---------------------------------------------------------------- impossible


def _refusal(rng: random.Random, line: dict[str, Any], phrasing: int, prompt: str, tool: str, lookup: ToolCall,
             answer: str, difficulty: int, **metadata: Any) -> TaskDraft:
    """A request the line's plan rules out: `tool` must not run, the reply says it cannot, nothing changes."""
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks(tool, reply_label="answer mentions cannot"),
        reference_solution=[lookup],
        env_variables=kit.env_for(line, kit.random_day(rng)),
        expected_answer=answer,
        difficulty=difficulty,
        metadata={"phrasing": phrasing, "line_id": line["id"], **metadata},
    )


ROAM_NO_PROMPTS = TEXTS["ROAM_NO_PROMPTS"]


def roaming_not_allowed_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The line's plan has no roaming: the agent must refuse and change nothing."""
    line = kit.pick(rng, lines(world, "l.status = 'active' AND p.roaming_allowed = 0"))
    if line is None:
        return None
    phrasing = rng.randrange(len(ROAM_NO_PROMPTS))
    prompt = ROAM_NO_PROMPTS[phrasing].format(phone=line["phone_number"], country=country_name(rng.choice(ABROAD)),
                                              when=rng.choice(WHEN_TRAVEL))
    return _refusal(
        rng, line, phrasing, prompt, "enable_roaming", kit.call("get_line_details", phone_number=line["phone_number"]),
        f"I cannot enable roaming on {line['phone_number']}: the {line['plan_name']} plan does not include "
        "international roaming. Switching to a plan with roaming would allow it.", 2)


TOPUP_NO_PROMPTS = TEXTS["TOPUP_NO_PROMPTS"]


def topup_unlimited_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """Unlimited plans take no top-ups: refuse and change nothing."""
    line = kit.pick(rng, lines(world, "l.status = 'active' AND p.data_gb IS NULL"))
    if line is None:
        return None
    gb = rng.choice(sorted(TOPUP_PRICES))
    phrasing, prompt = kit.phrase(rng, TOPUP_NO_PROMPTS, phone=line["phone_number"], gb=gb)
    return _refusal(
        rng, line, phrasing, prompt, "add_data_topup", kit.call("get_line_details", phone_number=line["phone_number"]),
        f"I cannot add a top-up to {line['phone_number']}: it is on {line['plan_name']}, which already has "
        "unlimited data.", 1)


LEGACY_PROMPTS = TEXTS["LEGACY_PROMPTS"]


def legacy_plan_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """A legacy plan is closed to switches: refuse and change nothing."""
    legacy = [p for p in plans(world) if not p["available"]]
    plan = kit.pick(rng, legacy)
    line = kit.pick(rng, lines(world, "l.status = 'active'"))
    if plan is None or line is None or line["plan_id"] == plan["id"]:
        return None
    phrasing, prompt = kit.phrase(rng, LEGACY_PROMPTS, phone=line["phone_number"], plan=plan["name"])
    return _refusal(
        rng, line, phrasing, prompt, "change_plan", kit.call("list_plans"),
        f"I cannot switch {line['phone_number']} to {plan['name']}: it is a legacy plan that is closed to new "
        "switches.", 1, plan=plan["code"])
