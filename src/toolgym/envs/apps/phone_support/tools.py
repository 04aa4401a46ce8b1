"""Agent-side tools of phone_support: the customer's account, lines, plans, bills, roaming, top-ups.

The agent is the carrier's support agent talking to the logged-in customer (LOGGED_IN_USER); it can
see and change the account but never the phone's settings, which only the user's device tools
(`tools_device.py`, owner "user") touch. Every rule is checked here and a broken rule comes back as
a ToolError that says what was wrong and what is allowed. Dates come from CURRENT_DATE.
"""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.phone_support.rules import (
    SUSPEND_REASONS,
    TOPUP_PRICES,
    data_allowance_gb,
    digits_of,
    escalation_ticket,
    payment_reference,
)
from toolgym.envs.kit.payments import listed_payment_methods

MAX_BILLS = 12


# ---------------------------------------------------------------- shared lookups


def _card(ctx: ToolContext, account_id: int, payment_method_id: int | None) -> dict[str, Any]:
    """The named payment method of the account (unexpired) or its default one."""
    return kit.payment_method(ctx, ("account_id", account_id), payment_method_id,
                              no_default="the account has no default payment method; name a payment_method_id",
                              not_found="no payment method {id} on this account; see list_payment_methods")


def my_account(ctx: ToolContext) -> dict[str, Any]:
    """The logged-in customer's account, or a readable error."""
    username = ctx.env.require_user()
    row = ctx.one(
        "SELECT a.*, u.name, u.username FROM accounts a JOIN users u ON u.id = a.user_id WHERE u.username = ?",
        (username,),
    )
    if row is None:
        raise ToolError(f"the logged-in user {username!r} has no account with this carrier")
    return row


def my_line(ctx: ToolContext, phone_number: str) -> dict[str, Any]:
    """A line of the logged-in customer's account by phone number, however the number is written."""
    account = my_account(ctx)
    digits = digits_of(phone_number)
    if len(digits) != 11:
        raise ToolError(
            f"argument 'phone_number': {phone_number!r} is not a full phone number; give all 10 digits, "
            "e.g. '+1-212-555-0101'"
        )
    row = ctx.one(
        "SELECT l.*, p.code AS plan_code, p.name AS plan_name, p.data_gb, p.roaming_allowed, p.monthly_price "
        "FROM lines l JOIN plans p ON p.id = l.plan_id WHERE l.digits = ?",
        (digits,),
    )
    if row is None or row["account_id"] != account["id"]:
        numbers = ", ".join(r["phone_number"] for r in ctx.query(
            "SELECT phone_number FROM lines WHERE account_id = ? ORDER BY id", (account["id"],)))
        raise ToolError(f"argument 'phone_number': {phone_number!r} is not a line on your account; your lines: {numbers}")
    return row


def _require_active(line: dict[str, Any], action: str) -> None:
    if line["status"] != "active":
        raise ToolError(
            f"line {line['phone_number']} is suspended ({line['suspension_reason']}); {action} needs an active line"
        )


def _event(ctx: ToolContext, line_id: int, kind: str, detail: str) -> None:
    ctx.db.execute(
        "INSERT INTO line_events (line_id, kind, detail, created_on) VALUES (?, ?, ?, ?)",
        (line_id, kind, detail, ctx.env.today.isoformat()),
    )


def _overdue(ctx: ToolContext, account_id: int) -> list[dict[str, Any]]:
    return ctx.query(
        "SELECT id, period, amount, due_date FROM bills WHERE account_id = ? AND status = 'unpaid' AND due_date < ? "
        "ORDER BY due_date, id",
        (account_id, ctx.env.today.isoformat()),
    )


def _line_view(line: dict[str, Any]) -> dict[str, Any]:
    allowance = data_allowance_gb(line["data_gb"], line["topup_gb"])
    return {
        "phone_number": line["phone_number"],
        "plan": line["plan_name"],
        "plan_code": line["plan_code"],
        "status": line["status"],
        "suspension_reason": line["suspension_reason"],
        "suspended_on": line["suspended_on"],
        "roaming_enabled": bool(line["roaming_enabled"]),
        "roaming_allowed_by_plan": bool(line["roaming_allowed"]),
        "data_used_gb": line["data_used_gb"],
        "data_allowance_gb": "unlimited" if allowance is None else allowance,
        "topup_gb_this_cycle": line["topup_gb"],
    }


# ---------------------------------------------------------------- account and lines


@tool
def get_my_account(ctx: ToolContext) -> dict[str, Any]:
    """Show the logged-in customer's account: account number, balance due, payment setup and every line."""
    account = my_account(ctx)
    lines = ctx.query(
        "SELECT l.phone_number, l.is_primary, l.status, p.name AS plan FROM lines l JOIN plans p ON p.id = l.plan_id "
        "WHERE l.account_id = ? ORDER BY l.id",
        (account["id"],),
    )
    due = ctx.one("SELECT COALESCE(SUM(amount), 0) AS total FROM bills WHERE account_id = ? AND status = 'unpaid'",
                  (account["id"],))
    card = ctx.one("SELECT kind, last4 FROM payment_methods WHERE account_id = ? AND is_default = 1", (account["id"],))
    return {
        "name": account["name"],
        "account_number": account["account_number"],
        "balance_due": due["total"] if due else 0,
        "overdue_bills": len(_overdue(ctx, account["id"])),
        "autopay": bool(account["autopay"]),
        "default_payment_method": f"{card['kind']} ending {card['last4']}" if card else None,
        "lines": [{**line, "is_primary": bool(line["is_primary"])} for line in lines],
    }


@tool
def get_line_details(ctx: ToolContext, phone_number: str) -> dict[str, Any]:
    """Show one line of the account: plan, status, roaming, data used this cycle, and the phone model on it.

    Args:
        phone_number: The line's full phone number, e.g. '+1-212-555-0101'.
    """
    line = my_line(ctx, phone_number)
    device = ctx.one("SELECT model, supports_5g FROM devices WHERE line_id = ?", (line["id"],))
    view = _line_view(line)
    if device is not None:
        view["device_model"] = device["model"]
        view["device_supports_5g"] = bool(device["supports_5g"])
    return view


@tool
def list_plans(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the plans a line can switch to, cheapest first (legacy plans are not offered)."""
    rows = ctx.query("SELECT * FROM plans WHERE available = 1 ORDER BY monthly_price, id")
    return [
        {
            "code": r["code"], "name": r["name"], "monthly_price": r["monthly_price"],
            "data_gb": "unlimited" if r["data_gb"] is None else r["data_gb"],
            "roaming_allowed": bool(r["roaming_allowed"]), "description": r["description"],
        }
        for r in rows
    ]


@tool
def change_plan(ctx: ToolContext, phone_number: str, plan_code: str) -> dict[str, Any]:
    """Move a line to another plan, effective today.

    Args:
        phone_number: The line's full phone number.
        plan_code: Code of the new plan from list_plans, e.g. 'PLUS30'.
    """
    line = my_line(ctx, phone_number)
    plan = ctx.one("SELECT * FROM plans WHERE upper(code) = upper(?)", (plan_code.strip(),))
    if plan is None or not plan["available"]:
        codes = ", ".join(r["code"] for r in ctx.query("SELECT code FROM plans WHERE available = 1 ORDER BY monthly_price"))
        what = "is a legacy plan, closed to new switches" if plan else "is not a plan"
        raise ToolError(f"argument 'plan_code': {plan_code!r} {what}; choose one of {codes}")
    _require_active(line, "a plan change")
    if plan["id"] == line["plan_id"]:
        raise ToolError(f"line {line['phone_number']} is already on {plan['name']}")
    if plan["data_gb"] is not None and line["data_used_gb"] > plan["data_gb"] + line["topup_gb"]:
        raise ToolError(
            f"line {line['phone_number']} has used {line['data_used_gb']} GB this cycle, more than {plan['name']} "
            f"allows ({plan['data_gb']} GB); pick a plan with more data"
        )
    if line["roaming_enabled"] and not plan["roaming_allowed"]:
        raise ToolError(
            f"{plan['name']} does not allow roaming and roaming is enabled on {line['phone_number']}; "
            "disable roaming first"
        )
    ctx.db.execute("UPDATE lines SET plan_id = ? WHERE id = ?", (plan["id"], line["id"]))
    _event(ctx, line["id"], "plan_change", f"{line['plan_code']} -> {plan['code']}")
    return {"phone_number": line["phone_number"], "old_plan": line["plan_name"], "new_plan": plan["name"],
            "monthly_price": plan["monthly_price"], "effective": ctx.env.today.isoformat()}


# ---------------------------------------------------------------- roaming, data, suspension


@tool
def enable_roaming(ctx: ToolContext, phone_number: str) -> dict[str, Any]:
    """Turn on international roaming for a line (the plan must allow it). The phone's own data-roaming switch is separate.

    Args:
        phone_number: The line's full phone number.
    """
    line = my_line(ctx, phone_number)
    _require_active(line, "roaming")
    if not line["roaming_allowed"]:
        raise ToolError(f"{line['plan_name']} does not include international roaming; the line needs a plan that does")
    if line["roaming_enabled"]:
        raise ToolError(f"roaming is already enabled on {line['phone_number']}")
    ctx.db.execute("UPDATE lines SET roaming_enabled = 1 WHERE id = ?", (line["id"],))
    _event(ctx, line["id"], "roaming_on", "international roaming enabled")
    return {"phone_number": line["phone_number"], "roaming_enabled": True}


@tool
def disable_roaming(ctx: ToolContext, phone_number: str) -> dict[str, Any]:
    """Turn off international roaming for a line.

    Args:
        phone_number: The line's full phone number.
    """
    line = my_line(ctx, phone_number)
    if not line["roaming_enabled"]:
        raise ToolError(f"roaming is already disabled on {line['phone_number']}")
    ctx.db.execute("UPDATE lines SET roaming_enabled = 0 WHERE id = ?", (line["id"],))
    _event(ctx, line["id"], "roaming_off", "international roaming disabled")
    return {"phone_number": line["phone_number"], "roaming_enabled": False}


@tool
def add_data_topup(ctx: ToolContext, phone_number: str, gb: int, payment_method_id: int | None = None) -> dict[str, Any]:
    """Buy extra data for this billing cycle on a capped plan ($10 for 1 GB, $25 for 3 GB, $35 for 5 GB).

    Args:
        phone_number: The line's full phone number.
        gb: Size of the top-up: 1, 3 or 5.
        payment_method_id: Pay with this method; the account's default one if omitted.
    """
    if gb not in TOPUP_PRICES:
        raise ToolError(f"argument 'gb' must be one of 1, 3, 5; got {gb}")
    line = my_line(ctx, phone_number)
    _require_active(line, "a data top-up")
    if line["data_gb"] is None:
        raise ToolError(f"{line['plan_name']} already has unlimited data; top-ups are only for capped plans")
    method = _card(ctx, line["account_id"], payment_method_id)
    price = TOPUP_PRICES[gb]
    ctx.db.execute(
        "INSERT INTO data_topups (line_id, gb, price, payment_method_id, purchased_on) VALUES (?, ?, ?, ?, ?)",
        (line["id"], gb, price, method["id"], ctx.env.today.isoformat()),
    )
    ctx.db.execute("UPDATE lines SET topup_gb = topup_gb + ? WHERE id = ?", (gb, line["id"]))
    _event(ctx, line["id"], "topup", f"{gb} GB top-up")
    return {"phone_number": line["phone_number"], "added_gb": gb, "price": price,
            "data_allowance_gb": line["data_gb"] + line["topup_gb"] + gb, "data_used_gb": line["data_used_gb"],
            "charged_to": f"{method['kind']} ending {method['last4']}"}


@tool
def suspend_line(ctx: ToolContext, phone_number: str, reason: Literal["lost_or_stolen", "customer_request"]) -> dict[str, Any]:
    """Suspend an active line today (e.g. the phone was lost); calls and data stop until it is resumed.

    Args:
        phone_number: The line's full phone number.
        reason: Why: 'lost_or_stolen' or 'customer_request'.
    """
    if reason not in SUSPEND_REASONS:
        raise ToolError(f"argument 'reason' must be one of {', '.join(SUSPEND_REASONS)}; got {reason!r}")
    line = my_line(ctx, phone_number)
    if line["status"] == "suspended":
        raise ToolError(f"line {line['phone_number']} is already suspended ({line['suspension_reason']})")
    today = ctx.env.today.isoformat()
    ctx.db.execute(
        "UPDATE lines SET status = 'suspended', suspension_reason = ?, suspended_on = ? WHERE id = ?",
        (reason, today, line["id"]),
    )
    _event(ctx, line["id"], "suspended", f"suspended: {reason}")
    return {"phone_number": line["phone_number"], "status": "suspended", "reason": reason, "suspended_on": today}


@tool
def resume_line(ctx: ToolContext, phone_number: str) -> dict[str, Any]:
    """Resume a suspended line. A line suspended for an unpaid bill resumes only once no bill is overdue.

    Args:
        phone_number: The line's full phone number.
    """
    line = my_line(ctx, phone_number)
    if line["status"] != "suspended":
        raise ToolError(f"line {line['phone_number']} is not suspended")
    if line["suspension_reason"] == "unpaid_bill":
        overdue = _overdue(ctx, line["account_id"])
        if overdue:
            listed = ", ".join(f"bill {b['id']} ({b['period']}, ${b['amount']}, due {b['due_date']})" for b in overdue)
            raise ToolError(f"the account still has overdue bills: {listed}; they must be paid before the line resumes")
    ctx.db.execute(
        "UPDATE lines SET status = 'active', suspension_reason = NULL, suspended_on = NULL WHERE id = ?", (line["id"],)
    )
    _event(ctx, line["id"], "resumed", f"resumed after {line['suspension_reason']}")
    return {"phone_number": line["phone_number"], "status": "active"}


# ---------------------------------------------------------------- bills and payments


@tool
def get_bills(
    ctx: ToolContext, status: Literal["all", "unpaid", "paid"] = "all", due_before: str | None = None
) -> list[dict[str, Any]]:
    """List the account's bills, newest first, with whether each unpaid one is overdue today.

    Args:
        status: Which bills: 'all' (default), 'unpaid' or 'paid'.
        due_before: Only bills due on or before this day: YYYY-MM-DD, 'today', 'tomorrow' or 'next Friday'.
    """
    if status not in ("all", "unpaid", "paid"):
        raise ToolError(f"argument 'status' must be 'all', 'unpaid' or 'paid'; got {status!r}")
    account = my_account(ctx)
    where = "" if status == "all" else " AND status = ?"
    params: list[Any] = [account["id"]] + ([] if status == "all" else [status])
    if due_before is not None:
        try:
            last_day = ctx.env.date(due_before)
        except ToolError as exc:
            raise ToolError(f"argument 'due_before': {exc}") from None
        where += " AND due_date <= ?"
        params.append(last_day)
    rows = ctx.query(
        f"SELECT id, period, amount, issued_on, due_date, status, paid_on FROM bills WHERE account_id = ?{where} "
        f"ORDER BY period DESC, id DESC LIMIT {MAX_BILLS}",
        params,
    )
    today = ctx.env.today.isoformat()
    for row in rows:
        row["bill_id"] = row.pop("id")
        row["overdue"] = row["status"] == "unpaid" and row["due_date"] < today
    return rows


@tool
def list_payment_methods(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the account's payment methods; the default one pays bills and top-ups unless another is named."""
    return listed_payment_methods(ctx, ("account_id", my_account(ctx)["id"]), order_by="id")


@tool
def pay_bill(ctx: ToolContext, bill_id: int, payment_method_id: int | None = None) -> dict[str, Any]:
    """Pay one unpaid bill in full, today. Paying does not resume a suspended line: call resume_line after.

    Args:
        bill_id: The bill to pay (from get_bills).
        payment_method_id: Pay with this method; the account's default one if omitted.
    """
    account = my_account(ctx)
    bill = ctx.one("SELECT * FROM bills WHERE id = ? AND account_id = ?", (bill_id, account["id"]))
    if bill is None:
        raise ToolError(f"argument 'bill_id': no bill {bill_id} on your account; see get_bills")
    if bill["status"] == "paid":
        raise ToolError(f"bill {bill_id} ({bill['period']}) was already paid on {bill['paid_on']}")
    method = _card(ctx, account["id"], payment_method_id)
    today = ctx.env.today.isoformat()
    cur = ctx.db.execute(
        "INSERT INTO payments (reference, account_id, bill_id, payment_method_id, amount, paid_on) "
        "VALUES ('pending', ?, ?, ?, ?, ?)",
        (account["id"], bill_id, method["id"], bill["amount"], today),
    )
    payment_id = int(cur.lastrowid or 0)
    reference = payment_reference(payment_id)
    ctx.db.execute("UPDATE payments SET reference = ? WHERE id = ?", (reference, payment_id))
    ctx.db.execute("UPDATE bills SET status = 'paid', paid_on = ? WHERE id = ?", (today, bill_id))
    return {"bill_id": bill_id, "period": bill["period"], "amount": bill["amount"], "reference": reference,
            "paid_with": f"{method['kind']} ending {method['last4']}", "paid_on": today}


# ---------------------------------------------------------------- escalation


@tool
def transfer_to_human_agent(ctx: ToolContext, phone_number: str, summary: str) -> dict[str, Any]:
    """Hand the customer to a human technician when the problem cannot be fixed with these tools (e.g. a faulty SIM).

    Args:
        phone_number: The affected line's full phone number.
        summary: One or two sentences: the problem and what was already tried.
    """
    line = my_line(ctx, phone_number)
    if len(summary.strip()) < 10:
        raise ToolError("argument 'summary' must describe the problem and what was tried (at least 10 characters)")
    cur = ctx.db.execute(
        "INSERT INTO escalations (ticket, account_id, line_id, summary, created_on) VALUES ('pending', ?, ?, ?, ?)",
        (line["account_id"], line["id"], summary.strip(), ctx.env.today.isoformat()),
    )
    escalation_id = int(cur.lastrowid or 0)
    ticket = escalation_ticket(escalation_id)
    ctx.db.execute("UPDATE escalations SET ticket = ? WHERE id = ?", (ticket, escalation_id))
    return {"ticket": ticket, "phone_number": line["phone_number"],
            "message": "Transferred: a human technician will take over this conversation."}


AGENT_TOOLS = [
    get_my_account,
    get_line_details,
    list_plans,
    change_plan,
    enable_roaming,
    disable_roaming,
    add_data_topup,
    suspend_line,
    resume_line,
    get_bills,
    list_payment_methods,
    pay_bill,
    transfer_to_human_agent,
]
