"""crm tools over deals, logged activities and reminders."""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.crm.rules import LAST_OPEN_POSITION, LOST_REASONS, SALES_ROLES, month_bounds
from toolgym.envs.apps.crm.tool_common import (
    DEAL_SELECT,
    MAX_RESULTS,
    ActivityKind,
    LostReason,
    activities_of,
    current_user,
    deal_view,
    find_company,
    find_contact,
    find_deal,
    like_words,
    reminder_view,
    require_open,
    same_company,
    stage_arg,
    text_arg,
    user_arg,
)


@tool
def list_deals(
    ctx: ToolContext, owner: str | None = None, stage: str | None = None,
    status: Literal["open", "won", "lost", "all"] = "open", company: str | None = None, query: str | None = None,
    close_month: str | None = None,
) -> dict:
    """List deals, earliest close date first; by default only open deals.

    Args:
        owner: Deal owner: 'me', a username or a full name.
        stage: Only deals in this pipeline stage, e.g. 'Contract Sent' (see list_deal_stages); overrides status.
        status: 'open' (default), 'won', 'lost' or 'all'.
        company: Part of the company name.
        query: Part of the deal name.
        close_month: Only deals whose close date falls in this month: 'this month', 'next month' or YYYY-MM.
    """
    where = kit.Where()
    result: dict[str, Any] = {}
    if owner is not None:
        where.add("d.owner_id = ?", user_arg(ctx, "owner", owner, sales_only=False)["id"])
    if stage is not None:
        where.add("d.stage_id = ?", stage_arg(ctx, "stage", stage)["id"])
    elif status != "all":
        where.add("d.status = ?", status)
    where.when(like_words(company), "co.name LIKE ?")
    where.when(like_words(query), "d.name LIKE ?")
    if close_month is not None:
        try:
            first, last = month_bounds(close_month, ctx.env.today)
        except ValueError as exc:
            raise ToolError(f"argument 'close_month': {exc}") from None
        where.add("d.close_date BETWEEN ? AND ?", first, last)
        result["close_dates_from"], result["close_dates_to"] = first, last
    total = ctx.one("SELECT COUNT(*) AS n FROM deals d JOIN companies co ON co.id = d.company_id "
                    f"WHERE {where.sql}", where.params)
    rows = ctx.query(f"{DEAL_SELECT} WHERE {where.sql} ORDER BY d.close_date, d.id LIMIT ?",
                     [*where.params, MAX_RESULTS])
    result.update(count=total["n"] if total else 0, deals=[deal_view(r) for r in rows])
    return result


@tool
def get_deal(ctx: ToolContext, deal_id: int) -> dict:
    """Show a deal: amount, stage and win probability, next allowed stage, owner, contact, activities, reminders.

    Args:
        deal_id: The deal_id from list_deals.
    """
    deal = find_deal(ctx, deal_id)
    view = deal_view(deal)
    view["win_probability"] = deal["win_probability"]
    view["weighted_amount"] = deal["amount"] * deal["win_probability"] // 100
    if deal["status"] == "open":
        following = ctx.one("SELECT name FROM pipeline_stages WHERE position=?", (deal["position"] + 1,))
        assert following is not None
        view["next_stage"] = following["name"]
    view["recent_activities"] = activities_of(ctx, "deal_id", deal_id)
    view["open_reminders"] = reminder_view(ctx, "r.deal_id=? AND r.done=0", (deal_id,), 5)
    return view


@tool
def create_deal(
    ctx: ToolContext, name: str, company_id: int, amount: int, close_date: str, contact_id: int | None = None,
    stage: str | None = None, owner: str | None = None,
) -> dict:
    """Open a new deal with a company; it starts in the first pipeline stage unless another open stage is given.

    Args:
        name: Deal name, unique in the CRM, e.g. 'Acme Corp - Annual License'.
        company_id: The company the deal is with (see search_crm_companies).
        amount: Expected deal value in whole US dollars.
        close_date: Expected close date (YYYY-MM-DD, 'next Friday', ...); today or later.
        contact_id: The main contact for the deal; must work at that company.
        stage: An open pipeline stage to start in; default the first one, 'Appointment Scheduled'.
        owner: Sales rep who owns the deal: 'me' (default), a username or a full name.
    """
    title = text_arg("name", name, 3, 120)
    company = find_company(ctx, company_id)
    if ctx.one("SELECT id FROM deals WHERE lower(name) = lower(?)", (title,)) is not None:
        raise ToolError(f"argument 'name': a deal named {title!r} already exists; deal names must be unique")
    if amount < 1:
        raise ToolError(f"argument 'amount' must be a positive number of US dollars; got {amount}")
    closes = kit.date_arg(ctx, "close_date", close_date)
    if closes < ctx.env.today.isoformat():
        raise ToolError(f"argument 'close_date' ({closes}) is in the past; today is {ctx.env.today.isoformat()}")
    contact = find_contact(ctx, contact_id) if contact_id is not None else None
    if contact is not None and contact["company_id"] != company_id:
        raise ToolError(f"argument 'contact_id': {contact['name']} works at {contact['company']}, not "
                        f"{company['name']}")
    start = stage_arg(ctx, "stage", stage) if stage is not None else stage_arg(ctx, "stage", "Appointment Scheduled")
    if start["outcome"] != "open":
        raise ToolError(f"argument 'stage': a new deal must start in an open stage, not {start['name']}")
    holder = user_arg(ctx, "owner", owner, sales_only=True) if owner is not None else current_user(ctx)
    if holder["role"] not in SALES_ROLES:
        raise ToolError(f"you ({holder['name']}) are not on the sales team; name an owner from list_sales_reps")
    cur = ctx.db.execute(
        "INSERT INTO deals(name, company_id, contact_id, amount, stage_id, status, close_date, owner_id, created_on) "
        "VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?)",
        (title, company_id, contact_id, amount, start["id"], closes, holder["id"], ctx.env.today.isoformat()))
    return deal_view(find_deal(ctx, int(cur.lastrowid or 0)))


@tool
def update_deal(ctx: ToolContext, deal_id: int, amount: int | None = None, close_date: str | None = None) -> dict:
    """Change the amount or expected close date of an open deal.

    Args:
        deal_id: The deal_id from list_deals.
        amount: New deal value in whole US dollars.
        close_date: New expected close date (YYYY-MM-DD, 'next Friday', ...); today or later.
    """
    deal = find_deal(ctx, deal_id)
    if amount is None and close_date is None:
        raise ToolError("give 'amount', 'close_date' or both")
    require_open(deal, "edited")
    changes: dict[str, Any] = {}
    if amount is not None:
        if amount < 1:
            raise ToolError(f"argument 'amount' must be a positive number of US dollars; got {amount}")
        changes["amount"] = amount
    if close_date is not None:
        closes = kit.date_arg(ctx, "close_date", close_date)
        if closes < ctx.env.today.isoformat():
            raise ToolError(f"argument 'close_date' ({closes}) is in the past; today is {ctx.env.today.isoformat()}")
        changes["close_date"] = closes
    assignments = ", ".join(f"{column}=?" for column in changes)
    ctx.db.execute(f"UPDATE deals SET {assignments} WHERE id=?", (*changes.values(), deal_id))
    return deal_view(find_deal(ctx, deal_id))


@tool
def move_deal_stage(ctx: ToolContext, deal_id: int, stage: str, lost_reason: LostReason | None = None) -> dict:
    """Move an open deal to the next pipeline stage, or mark it Closed Lost from any open stage.

    Stages cannot be skipped and deals never move backwards; Closed Won is reachable only from Contract Sent.
    Won and lost deals are closed and cannot be moved again.

    Args:
        deal_id: The deal_id from list_deals.
        stage: The target stage: the deal's next stage, or 'Closed Lost'.
        lost_reason: Required for Closed Lost: 'price', 'competitor', 'no_budget', 'timing' or 'no_decision'.
    """
    deal = find_deal(ctx, deal_id)
    target = stage_arg(ctx, "stage", stage)
    require_open(deal, "reopened or moved")
    today = ctx.env.today.isoformat()
    if target["outcome"] == "lost":
        if lost_reason is None:
            raise ToolError(f"argument 'lost_reason' is required to mark a deal lost; one of {', '.join(LOST_REASONS)}")
        ctx.db.execute("UPDATE deals SET stage_id=?, status='lost', closed_on=?, lost_reason=? WHERE id=?",
                       (target["id"], today, lost_reason, deal_id))
        return {**deal_view(find_deal(ctx, deal_id)), "previous_stage": deal["stage"]}
    if lost_reason is not None:
        raise ToolError("argument 'lost_reason' is only for moving a deal to Closed Lost")
    following = ctx.one("SELECT * FROM pipeline_stages WHERE position=?", (deal["position"] + 1,))
    assert following is not None
    if target["id"] == deal["stage_id"]:
        raise ToolError(f"deal {deal['name']!r} is already in {deal['stage']}; its next stage is {following['name']}")
    if target["position"] < deal["position"]:
        raise ToolError(f"deals never move backwards: {deal['name']!r} is in {deal['stage']}; its next stage is "
                        f"{following['name']}")
    if target["id"] != following["id"]:
        raise ToolError(f"stages cannot be skipped: {deal['name']!r} is in {deal['stage']}, so it can only move to "
                        f"{following['name']} (or Closed Lost)")
    if target["outcome"] == "won":
        assert deal["position"] == LAST_OPEN_POSITION
        ctx.db.execute("UPDATE deals SET stage_id=?, status='won', closed_on=? WHERE id=?", (target["id"], today, deal_id))
    else:
        ctx.db.execute("UPDATE deals SET stage_id=? WHERE id=?", (target["id"], deal_id))
    return {**deal_view(find_deal(ctx, deal_id)), "previous_stage": deal["stage"]}


@tool
def log_crm_activity(
    ctx: ToolContext, kind: ActivityKind, summary: str, contact_id: int | None = None, deal_id: int | None = None,
    date: str = "today",
) -> dict:
    """Log a call, email, meeting or note that already happened, on a contact, a deal, or both.

    Args:
        kind: 'call', 'email', 'meeting' or 'note'.
        summary: What happened, 3-300 characters.
        contact_id: The contact it was with (see search_crm_contacts).
        deal_id: The deal it was about (see list_deals).
        date: When it happened: 'today' (default), 'yesterday' or YYYY-MM-DD; not in the future.
    """
    text = text_arg("summary", summary, 3, 300)
    if contact_id is None and deal_id is None:
        raise ToolError("give 'contact_id', 'deal_id' or both: an activity must be about a contact or a deal")
    contact = find_contact(ctx, contact_id) if contact_id is not None else None
    deal = find_deal(ctx, deal_id) if deal_id is not None else None
    same_company(contact, deal)
    day = kit.date_arg(ctx, "date", date)
    today = ctx.env.today.isoformat()
    if day > today:
        raise ToolError(f"argument 'date' ({day}) is in the future; log only what happened (today is {today}) and use "
                        "create_crm_reminder for what is planned")
    me = current_user(ctx)
    cur = ctx.db.execute(
        "INSERT INTO activities(kind, summary, contact_id, deal_id, user_id, occurred_on, created_on) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)", (kind, text, contact_id, deal_id, me["id"], day, today))
    return {"activity_id": cur.lastrowid, "kind": kind, "summary": text, "occurred_on": day,
            "contact": contact["name"] if contact else None, "deal": deal["name"] if deal else None}


@tool
def create_crm_reminder(
    ctx: ToolContext, title: str, due_date: str, contact_id: int | None = None, deal_id: int | None = None,
    assignee: str | None = None,
) -> dict:
    """Create a follow-up reminder, optionally about a contact or a deal.

    Args:
        title: What to do, 3-200 characters, e.g. 'Call Maria about the renewal'.
        due_date: When it is due: YYYY-MM-DD, 'tomorrow', 'next Friday', 'in 3 days'; today or later.
        contact_id: The contact it is about.
        deal_id: The deal it is about.
        assignee: Who should do it: 'me' (default), a username or a full name of the sales team.
    """
    text = text_arg("title", title, 3, 200)
    due = kit.date_arg(ctx, "due_date", due_date)
    today = ctx.env.today.isoformat()
    if due < today:
        raise ToolError(f"argument 'due_date' ({due}) is in the past; today is {today}")
    contact = find_contact(ctx, contact_id) if contact_id is not None else None
    deal = find_deal(ctx, deal_id) if deal_id is not None else None
    same_company(contact, deal)
    me = current_user(ctx)
    holder = user_arg(ctx, "assignee", assignee, sales_only=True) if assignee is not None else me
    cur = ctx.db.execute(
        "INSERT INTO reminders(title, due_date, assignee_id, contact_id, deal_id, done, created_by, created_on) "
        "VALUES (?, ?, ?, ?, ?, 0, ?, ?)", (text, due, holder["id"], contact_id, deal_id, me["id"], today))
    return {"reminder_id": cur.lastrowid, "title": text, "due_date": due, "assignee": holder["name"],
            "contact": contact["name"] if contact else None, "deal": deal["name"] if deal else None}


@tool
def list_my_crm_reminders(
    ctx: ToolContext, include_done: bool = False, due_on: str | None = None, due_by: str | None = None
) -> dict:
    """List the logged-in user's reminders, earliest due first; overdue ones are flagged.

    Args:
        include_done: True to include reminders already marked done.
        due_on: Only reminders due on this day (YYYY-MM-DD, 'today', 'tomorrow', 'next Monday').
        due_by: Only reminders due on or before this day.
    """
    me = current_user(ctx)
    where = kit.Where("r.assignee_id=?", params=[me["id"]])
    if not include_done:
        where.add("r.done=0")
    where.when(None if due_on is None else kit.date_arg(ctx, "due_on", due_on), "r.due_date=?")
    where.when(None if due_by is None else kit.date_arg(ctx, "due_by", due_by), "r.due_date<=?")
    return {"today": ctx.env.today.isoformat(), "reminders": reminder_view(ctx, where.sql, tuple(where.params), 25)}


@tool
def complete_crm_reminder(ctx: ToolContext, reminder_id: int) -> dict:
    """Mark one of the logged-in user's reminders as done.

    Args:
        reminder_id: The reminder_id from list_my_crm_reminders.
    """
    me = current_user(ctx)
    row = ctx.one("SELECT * FROM reminders WHERE id=? AND assignee_id=?", (reminder_id, me["id"]))
    if row is None:
        raise ToolError(f"argument 'reminder_id': you have no reminder with id {reminder_id}; see list_my_crm_reminders")
    if row["done"]:
        raise ToolError(f"reminder {reminder_id} ({row['title']!r}) is already done")
    ctx.db.execute("UPDATE reminders SET done=1, done_on=? WHERE id=?", (ctx.env.today.isoformat(), reminder_id))
    return {"reminder_id": reminder_id, "title": row["title"], "done": True}
