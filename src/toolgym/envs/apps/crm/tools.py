"""Tools of the crm app: companies, contacts, the deal pipeline, activities and reminders.

Every rule (stage order, closed deals stay closed, unique contact emails, forward-only lifecycle
stages) is checked here and a broken rule comes back as a ToolError that says what was wrong and what
is allowed. "My"/"me" means the LOGGED_IN_USER; dates go through the task's CURRENT_DATE, so
"tomorrow" and "next Friday" work and nothing reads the wall clock. New rows get the next rowid, so
ids are deterministic.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, tool
from toolgym.envs.apps.crm.rules import (
    EMAIL_PATTERN,
    LAST_OPEN_POSITION,
    LIFECYCLE_STAGES,
    LOST_REASONS,
    SALES_ROLES,
    lifecycle_rank,
    month_bounds,
)

MAX_RESULTS = 20
Lifecycle = Literal[
    "subscriber", "lead", "marketing_qualified_lead", "sales_qualified_lead", "opportunity", "customer", "evangelist"
]
LostReason = Literal["price", "competitor", "no_budget", "timing", "no_decision"]
ActivityKind = Literal["call", "email", "meeting", "note"]

_DEAL_SELECT = (
    "SELECT d.id, d.name, d.company_id, d.contact_id, d.amount, d.stage_id, d.status, d.close_date, d.owner_id, "
    "d.created_on, d.closed_on, d.lost_reason, s.name AS stage, s.position, s.win_probability, co.name AS company, "
    "u.name AS owner, u.username AS owner_username, c.first_name || ' ' || c.last_name AS contact "
    "FROM deals d JOIN pipeline_stages s ON s.id = d.stage_id JOIN companies co ON co.id = d.company_id "
    "JOIN users u ON u.id = d.owner_id LEFT JOIN contacts c ON c.id = d.contact_id"
)
_CONTACT_SELECT = (
    "SELECT c.*, c.first_name || ' ' || c.last_name AS name, co.name AS company, u.name AS owner, "
    "u.username AS owner_username, (SELECT MAX(a.occurred_on) FROM activities a WHERE a.contact_id = c.id) "
    "AS last_activity_on FROM contacts c JOIN companies co ON co.id = c.company_id JOIN users u ON u.id = c.owner_id"
)


# ---------------------------------------------------------------- shared validation


def _date_arg(ctx: ToolContext, name: str, text: str) -> str:
    """A date argument resolved against CURRENT_DATE; the error names the argument."""
    try:
        return ctx.env.date(text)
    except ToolError as exc:
        raise ToolError(f"argument '{name}': {exc}") from None


def _text_arg(name: str, text: str, low: int, high: int) -> str:
    value = " ".join(text.split())
    if not low <= len(value) <= high:
        raise ToolError(f"argument '{name}' must be {low}-{high} characters; got {len(value)}")
    return value


def _me(ctx: ToolContext) -> dict[str, Any]:
    username = ctx.env.require_user()
    row = ctx.one("SELECT id, username, name, role FROM users WHERE username=?", (username,))
    if row is None:
        raise ToolError(f"the logged-in user {username!r} has no account in the CRM")
    return row


def _user_arg(ctx: ToolContext, name: str, text: str, sales_only: bool) -> dict[str, Any]:
    """'me', a username or a full name (case-insensitive); owners must be on the sales team."""
    wanted = " ".join(text.split())
    if wanted.lower() in ("me", "my", "myself", "mine", "i"):
        row = _me(ctx)
    else:
        rows = ctx.query(
            "SELECT id, username, name, role FROM users WHERE lower(username)=lower(?) OR lower(name)=lower(?) "
            "ORDER BY id", (wanted, wanted))
        if len(rows) != 1:
            team = ", ".join(f"{r['name']} ({r['username']})" for r in ctx.query(
                "SELECT name, username FROM users WHERE role IN ('sales_rep', 'sales_manager') ORDER BY name"))
            problem = "matches several users" if rows else "is not a CRM user"
            raise ToolError(f"argument '{name}': {text!r} {problem}; the sales team is: {team}")
        row = rows[0]
    if sales_only and row["role"] not in SALES_ROLES:
        raise ToolError(f"argument '{name}': {row['name']} is not on the sales team, so cannot own CRM records; "
                        "see list_sales_reps")
    return row


def _stage_key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _stage_arg(ctx: ToolContext, name: str, text: str) -> dict[str, Any]:
    """A pipeline stage by name, ignoring case, spaces and punctuation."""
    stages = ctx.query("SELECT * FROM pipeline_stages ORDER BY position")
    for stage in stages:
        if _stage_key(stage["name"]) == _stage_key(text):
            return stage
    known = ", ".join(s["name"] for s in stages)
    raise ToolError(f"argument '{name}': unknown stage {text!r}; the stages are: {known}")


def _company(ctx: ToolContext, company_id: int) -> dict[str, Any]:
    row = ctx.one("SELECT * FROM companies WHERE id=?", (company_id,))
    if row is None:
        raise ToolError(f"argument 'company_id': no company with id {company_id}; use search_crm_companies")
    return row


def _contact(ctx: ToolContext, contact_id: int) -> dict[str, Any]:
    row = ctx.one(f"{_CONTACT_SELECT} WHERE c.id=?", (contact_id,))
    if row is None:
        raise ToolError(f"argument 'contact_id': no contact with id {contact_id}; use search_crm_contacts")
    return row


def _deal(ctx: ToolContext, deal_id: int) -> dict[str, Any]:
    row = ctx.one(f"{_DEAL_SELECT} WHERE d.id=?", (deal_id,))
    if row is None:
        raise ToolError(f"argument 'deal_id': no deal with id {deal_id}; use list_deals")
    return row


def _require_open(deal: dict[str, Any], action: str) -> None:
    if deal["status"] != "open":
        raise ToolError(
            f"deal {deal['name']!r} is closed ({deal['stage']} on {deal['closed_on']}); closed deals cannot be "
            f"{action}")


def _same_company(contact: dict[str, Any] | None, deal: dict[str, Any] | None) -> None:
    if contact is not None and deal is not None and contact["company_id"] != deal["company_id"]:
        raise ToolError(f"contact {contact['name']} works at {contact['company']}, but deal {deal['name']!r} is with "
                        f"{deal['company']}; link a contact of the deal's company")


def _deal_view(row: dict[str, Any]) -> dict[str, Any]:
    view = {
        "deal_id": row["id"], "name": row["name"], "company": row["company"], "company_id": row["company_id"],
        "amount": row["amount"], "stage": row["stage"], "status": row["status"], "close_date": row["close_date"],
        "owner": row["owner"], "owner_username": row["owner_username"], "contact": row["contact"],
        "contact_id": row["contact_id"],
    }
    if row["status"] != "open":
        view["closed_on"] = row["closed_on"]
    if row["lost_reason"]:
        view["lost_reason"] = row["lost_reason"]
    return view


def _contact_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "contact_id": row["id"], "name": row["name"], "email": row["email"], "job_title": row["job_title"],
        "company": row["company"], "company_id": row["company_id"], "lifecycle_stage": row["lifecycle_stage"],
        "owner": row["owner"], "last_activity_on": row["last_activity_on"],
    }


def _activities(ctx: ToolContext, column: str, value: int) -> list[dict[str, Any]]:
    return ctx.query(
        "SELECT a.id AS activity_id, a.kind, a.summary, a.occurred_on, u.name AS logged_by FROM activities a "
        f"JOIN users u ON u.id = a.user_id WHERE a.{column}=? ORDER BY a.occurred_on DESC, a.id DESC LIMIT 5",
        (value,))


def _reminder_view(ctx: ToolContext, where: str, params: tuple[Any, ...], limit: int) -> list[dict[str, Any]]:
    today = ctx.env.today.isoformat()
    rows = ctx.query(
        "SELECT r.id, r.title, r.due_date, r.done, r.contact_id, r.deal_id, u.name AS assignee, "
        "c.first_name || ' ' || c.last_name AS contact, d.name AS deal FROM reminders r "
        "JOIN users u ON u.id = r.assignee_id LEFT JOIN contacts c ON c.id = r.contact_id "
        f"LEFT JOIN deals d ON d.id = r.deal_id WHERE {where} ORDER BY r.due_date, r.id LIMIT ?", (*params, limit))
    return [{
        "reminder_id": r["id"], "title": r["title"], "due_date": r["due_date"], "done": bool(r["done"]),
        "overdue": not r["done"] and r["due_date"] < today, "assignee": r["assignee"], "contact": r["contact"],
        "contact_id": r["contact_id"], "deal": r["deal"], "deal_id": r["deal_id"],
    } for r in rows]


# ---------------------------------------------------------------- team and pipeline


@tool
def list_deal_stages(ctx: ToolContext) -> dict:
    """List the deal pipeline stages in order, with their win probability and the rules for moving deals."""
    stages = ctx.query("SELECT name AS stage, position, win_probability, outcome FROM pipeline_stages ORDER BY position")
    return {
        "stages": stages,
        "rules": "Open deals move forward one stage at a time; Closed Won only from the last open stage; any open "
                 "deal can be marked Closed Lost with a reason; won and lost deals are closed for good.",
        "lost_reasons": sorted(LOST_REASONS),
    }


@tool
def list_sales_reps(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the sales team (the people who can own companies, contacts and deals) with their open deal counts."""
    return ctx.query(
        "SELECT u.username, u.name, u.role, u.title, (SELECT COUNT(*) FROM deals d WHERE d.owner_id = u.id "
        "AND d.status = 'open') AS open_deals FROM users u WHERE u.role IN ('sales_rep', 'sales_manager') "
        "ORDER BY u.name")


# ---------------------------------------------------------------- companies


@tool
def search_crm_companies(
    ctx: ToolContext, query: str | None = None, industry: str | None = None, city: str | None = None,
    owner: str | None = None,
) -> dict:
    """Find companies in the CRM by name, industry, city or owner, alphabetically.

    Args:
        query: Part of the company name or web domain, e.g. 'acme'.
        industry: Exact industry, e.g. 'Software' or 'Healthcare'.
        city: City of the company, e.g. 'Denver'.
        owner: Owner of the company: 'me', a username or a full name.
    """
    clauses, params = ["1=1"], []
    if query is not None:
        needle = " ".join(query.split())
        if not needle:
            raise ToolError("argument 'query' is empty; give part of a company name or leave it out")
        clauses.append("(co.name LIKE ? OR co.domain LIKE ?)")
        params += [f"%{needle}%", f"%{needle}%"]
    if industry is not None:
        clauses.append("lower(co.industry) = lower(?)")
        params.append(industry.strip())
    if city is not None:
        clauses.append("lower(co.city) = lower(?)")
        params.append(city.strip())
    if owner is not None:
        clauses.append("co.owner_id = ?")
        params.append(_user_arg(ctx, "owner", owner, sales_only=False)["id"])
    rows = ctx.query(
        "SELECT co.id AS company_id, co.name, co.domain, co.industry, co.employees, co.city, u.name AS owner "
        f"FROM companies co JOIN users u ON u.id = co.owner_id WHERE {' AND '.join(clauses)} ORDER BY co.name, co.id",
        params)
    result: dict[str, Any] = {"count": len(rows), "companies": rows[:MAX_RESULTS]}
    if not rows and industry is not None:
        result["known_industries"] = [r["industry"] for r in ctx.query(
            "SELECT DISTINCT industry FROM companies ORDER BY industry")]
    return result


@tool
def get_crm_company(ctx: ToolContext, company_id: int) -> dict:
    """Show a company: industry, size, city, owner, its contacts and its deals (open deals first).

    Args:
        company_id: The company_id from search_crm_companies.
    """
    company = _company(ctx, company_id)
    owner = ctx.one("SELECT name, username FROM users WHERE id=?", (company["owner_id"],))
    assert owner is not None
    contacts = [_contact_view(r) for r in ctx.query(
        f"{_CONTACT_SELECT} WHERE c.company_id=? ORDER BY c.last_name, c.first_name, c.id", (company_id,))]
    deals = [_deal_view(r) for r in ctx.query(
        f"{_DEAL_SELECT} WHERE d.company_id=? ORDER BY d.status != 'open', d.close_date, d.id", (company_id,))]
    return {
        "company_id": company["id"], "name": company["name"], "domain": company["domain"],
        "industry": company["industry"], "employees": company["employees"], "city": company["city"],
        "owner": owner["name"], "owner_username": owner["username"], "created_on": company["created_on"],
        "contacts": contacts[:MAX_RESULTS], "deals": deals[:MAX_RESULTS],
    }


# ---------------------------------------------------------------- contacts


@tool
def search_crm_contacts(
    ctx: ToolContext, query: str | None = None, company: str | None = None, lifecycle_stage: Lifecycle | None = None,
    owner: str | None = None,
) -> dict:
    """Find contacts (people at customer companies) by name or email, company, lifecycle stage or owner.

    Results are sorted by last name and show when each contact last had an activity.

    Args:
        query: Part of the person's name or email, e.g. 'Maria Lopez' or 'lopez@'.
        company: Part of the company name.
        lifecycle_stage: Only contacts at this lifecycle stage.
        owner: Owner of the contact: 'me', a username or a full name.
    """
    clauses, params = ["1=1"], []
    if query is not None:
        needle = " ".join(query.split())
        if not needle:
            raise ToolError("argument 'query' is empty; give part of a name or email or leave it out")
        clauses.append("(c.first_name || ' ' || c.last_name LIKE ? OR c.email LIKE ?)")
        params += [f"%{needle}%", f"%{needle}%"]
    if company is not None:
        clauses.append("co.name LIKE ?")
        params.append(f"%{' '.join(company.split())}%")
    if lifecycle_stage is not None:
        clauses.append("c.lifecycle_stage = ?")
        params.append(lifecycle_stage)
    if owner is not None:
        clauses.append("c.owner_id = ?")
        params.append(_user_arg(ctx, "owner", owner, sales_only=False)["id"])
    where = " AND ".join(clauses)
    # Page in SQL: the per-contact last-activity lookup then runs only for the rows returned.
    ids = [r["id"] for r in ctx.query(
        "SELECT c.id FROM contacts c JOIN companies co ON co.id = c.company_id "
        f"WHERE {where} ORDER BY c.last_name, c.first_name, c.id", params)]
    page = ids[:MAX_RESULTS]
    marks = ", ".join("?" for _ in page)
    rows = ctx.query(f"{_CONTACT_SELECT} WHERE c.id IN ({marks}) ORDER BY c.last_name, c.first_name, c.id", page)
    return {"count": len(ids), "contacts": [_contact_view(r) for r in rows]}


@tool
def get_crm_contact(ctx: ToolContext, contact_id: int) -> dict:
    """Show a contact: email, phone, job title, company, lifecycle stage, owner, recent activities, deals, reminders.

    Args:
        contact_id: The contact_id from search_crm_contacts.
    """
    contact = _contact(ctx, contact_id)
    deals = [_deal_view(r) for r in ctx.query(f"{_DEAL_SELECT} WHERE d.contact_id=? ORDER BY d.close_date, d.id",
                                              (contact_id,))]
    return {
        **_contact_view(contact), "phone": contact["phone"], "owner_username": contact["owner_username"],
        "created_on": contact["created_on"], "recent_activities": _activities(ctx, "contact_id", contact_id),
        "deals": deals[:MAX_RESULTS],
        "open_reminders": _reminder_view(ctx, "r.contact_id=? AND r.done=0", (contact_id,), 5),
    }


@tool
def create_crm_contact(
    ctx: ToolContext, first_name: str, last_name: str, email: str, company_id: int, job_title: str | None = None,
    phone: str | None = None, lifecycle_stage: Lifecycle = "lead", owner: str | None = None,
) -> dict:
    """Add a person at a company as a new contact; every contact needs a unique email address.

    Args:
        first_name: The person's first name.
        last_name: The person's last name.
        email: Their work email; no other contact may already use it.
        company_id: The company they work at (see search_crm_companies).
        job_title: Their job title, e.g. 'CFO'.
        phone: Their phone number.
        lifecycle_stage: Where they are in the funnel; default 'lead'.
        owner: Sales rep who owns the contact: 'me' (default), a username or a full name.
    """
    first = _text_arg("first_name", first_name, 1, 60)
    last = _text_arg("last_name", last_name, 1, 60)
    address = email.strip()
    if not EMAIL_PATTERN.match(address):
        raise ToolError(f"argument 'email': {email!r} is not a valid email address")
    company = _company(ctx, company_id)
    clash = ctx.one(f"{_CONTACT_SELECT} WHERE lower(c.email) = lower(?)", (address,))
    if clash is not None:
        raise ToolError(f"argument 'email': {address} already belongs to {clash['name']} (contact_id {clash['id']}) at "
                        f"{clash['company']}; contact emails must be unique")
    title = _text_arg("job_title", job_title, 1, 80) if job_title is not None else None
    number = _text_arg("phone", phone, 5, 30) if phone is not None else None
    holder = _user_arg(ctx, "owner", owner, sales_only=True) if owner is not None else _me(ctx)
    if holder["role"] not in SALES_ROLES:
        raise ToolError(f"you ({holder['name']}) are not on the sales team; name an owner from list_sales_reps")
    cur = ctx.db.execute(
        "INSERT INTO contacts(company_id, first_name, last_name, email, phone, job_title, lifecycle_stage, owner_id, "
        "created_on) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (company_id, first, last, address, number, title, lifecycle_stage, holder["id"], ctx.env.today.isoformat()))
    return {"contact_id": cur.lastrowid, "name": f"{first} {last}", "email": address, "company": company["name"],
            "lifecycle_stage": lifecycle_stage, "owner": holder["name"]}


@tool
def update_contact_stage(ctx: ToolContext, contact_id: int, lifecycle_stage: Lifecycle) -> dict:
    """Move a contact forward in the lifecycle (subscriber, lead, MQL, SQL, opportunity, customer, evangelist).

    Args:
        contact_id: The contact_id from search_crm_contacts.
        lifecycle_stage: The new stage; it must come after the contact's current stage.
    """
    contact = _contact(ctx, contact_id)
    current = contact["lifecycle_stage"]
    if lifecycle_stage == current:
        raise ToolError(f"{contact['name']} is already at lifecycle stage {current!r}")
    if lifecycle_rank(lifecycle_stage) < lifecycle_rank(current):
        later = ", ".join(LIFECYCLE_STAGES[lifecycle_rank(current) + 1:]) or "none"
        raise ToolError(f"lifecycle stages only move forward: {contact['name']} is at {current!r}, so "
                        f"{lifecycle_stage!r} would go back; allowed next stages: {later}")
    ctx.db.execute("UPDATE contacts SET lifecycle_stage=? WHERE id=?", (lifecycle_stage, contact_id))
    return {"contact_id": contact_id, "name": contact["name"], "previous_stage": current,
            "lifecycle_stage": lifecycle_stage}


# ---------------------------------------------------------------- deals


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
    clauses, params = ["1=1"], []
    result: dict[str, Any] = {}
    if owner is not None:
        clauses.append("d.owner_id = ?")
        params.append(_user_arg(ctx, "owner", owner, sales_only=False)["id"])
    if stage is not None:
        clauses.append("d.stage_id = ?")
        params.append(_stage_arg(ctx, "stage", stage)["id"])
    elif status != "all":
        clauses.append("d.status = ?")
        params.append(status)
    if company is not None:
        clauses.append("co.name LIKE ?")
        params.append(f"%{' '.join(company.split())}%")
    if query is not None:
        clauses.append("d.name LIKE ?")
        params.append(f"%{' '.join(query.split())}%")
    if close_month is not None:
        try:
            first, last = month_bounds(close_month, ctx.env.today)
        except ValueError as exc:
            raise ToolError(f"argument 'close_month': {exc}") from None
        clauses.append("d.close_date BETWEEN ? AND ?")
        params += [first, last]
        result["close_dates_from"], result["close_dates_to"] = first, last
    where = " AND ".join(clauses)
    total = ctx.one(f"SELECT COUNT(*) AS n FROM deals d JOIN companies co ON co.id = d.company_id WHERE {where}",
                    params)
    rows = ctx.query(f"{_DEAL_SELECT} WHERE {where} ORDER BY d.close_date, d.id LIMIT ?", [*params, MAX_RESULTS])
    result.update(count=total["n"] if total else 0, deals=[_deal_view(r) for r in rows])
    return result


@tool
def get_deal(ctx: ToolContext, deal_id: int) -> dict:
    """Show a deal: amount, stage and win probability, next allowed stage, owner, contact, activities, reminders.

    Args:
        deal_id: The deal_id from list_deals.
    """
    deal = _deal(ctx, deal_id)
    view = _deal_view(deal)
    view["win_probability"] = deal["win_probability"]
    view["weighted_amount"] = deal["amount"] * deal["win_probability"] // 100
    if deal["status"] == "open":
        following = ctx.one("SELECT name FROM pipeline_stages WHERE position=?", (deal["position"] + 1,))
        assert following is not None
        view["next_stage"] = following["name"]
    view["recent_activities"] = _activities(ctx, "deal_id", deal_id)
    view["open_reminders"] = _reminder_view(ctx, "r.deal_id=? AND r.done=0", (deal_id,), 5)
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
    title = _text_arg("name", name, 3, 120)
    company = _company(ctx, company_id)
    if ctx.one("SELECT id FROM deals WHERE lower(name) = lower(?)", (title,)) is not None:
        raise ToolError(f"argument 'name': a deal named {title!r} already exists; deal names must be unique")
    if amount < 1:
        raise ToolError(f"argument 'amount' must be a positive number of US dollars; got {amount}")
    closes = _date_arg(ctx, "close_date", close_date)
    if closes < ctx.env.today.isoformat():
        raise ToolError(f"argument 'close_date' ({closes}) is in the past; today is {ctx.env.today.isoformat()}")
    contact = _contact(ctx, contact_id) if contact_id is not None else None
    if contact is not None and contact["company_id"] != company_id:
        raise ToolError(f"argument 'contact_id': {contact['name']} works at {contact['company']}, not "
                        f"{company['name']}")
    start = _stage_arg(ctx, "stage", stage) if stage is not None else _stage_arg(ctx, "stage", "Appointment Scheduled")
    if start["outcome"] != "open":
        raise ToolError(f"argument 'stage': a new deal must start in an open stage, not {start['name']}")
    holder = _user_arg(ctx, "owner", owner, sales_only=True) if owner is not None else _me(ctx)
    if holder["role"] not in SALES_ROLES:
        raise ToolError(f"you ({holder['name']}) are not on the sales team; name an owner from list_sales_reps")
    cur = ctx.db.execute(
        "INSERT INTO deals(name, company_id, contact_id, amount, stage_id, status, close_date, owner_id, created_on) "
        "VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?)",
        (title, company_id, contact_id, amount, start["id"], closes, holder["id"], ctx.env.today.isoformat()))
    return _deal_view(_deal(ctx, int(cur.lastrowid or 0)))


@tool
def update_deal(ctx: ToolContext, deal_id: int, amount: int | None = None, close_date: str | None = None) -> dict:
    """Change the amount or expected close date of an open deal.

    Args:
        deal_id: The deal_id from list_deals.
        amount: New deal value in whole US dollars.
        close_date: New expected close date (YYYY-MM-DD, 'next Friday', ...); today or later.
    """
    deal = _deal(ctx, deal_id)
    if amount is None and close_date is None:
        raise ToolError("give 'amount', 'close_date' or both")
    _require_open(deal, "edited")
    changes: dict[str, Any] = {}
    if amount is not None:
        if amount < 1:
            raise ToolError(f"argument 'amount' must be a positive number of US dollars; got {amount}")
        changes["amount"] = amount
    if close_date is not None:
        closes = _date_arg(ctx, "close_date", close_date)
        if closes < ctx.env.today.isoformat():
            raise ToolError(f"argument 'close_date' ({closes}) is in the past; today is {ctx.env.today.isoformat()}")
        changes["close_date"] = closes
    assignments = ", ".join(f"{column}=?" for column in changes)
    ctx.db.execute(f"UPDATE deals SET {assignments} WHERE id=?", (*changes.values(), deal_id))
    return _deal_view(_deal(ctx, deal_id))


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
    deal = _deal(ctx, deal_id)
    target = _stage_arg(ctx, "stage", stage)
    _require_open(deal, "reopened or moved")
    today = ctx.env.today.isoformat()
    if target["outcome"] == "lost":
        if lost_reason is None:
            raise ToolError(f"argument 'lost_reason' is required to mark a deal lost; one of {', '.join(LOST_REASONS)}")
        ctx.db.execute("UPDATE deals SET stage_id=?, status='lost', closed_on=?, lost_reason=? WHERE id=?",
                       (target["id"], today, lost_reason, deal_id))
        return {**_deal_view(_deal(ctx, deal_id)), "previous_stage": deal["stage"]}
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
    return {**_deal_view(_deal(ctx, deal_id)), "previous_stage": deal["stage"]}


# ---------------------------------------------------------------- activities and reminders


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
    text = _text_arg("summary", summary, 3, 300)
    if contact_id is None and deal_id is None:
        raise ToolError("give 'contact_id', 'deal_id' or both: an activity must be about a contact or a deal")
    contact = _contact(ctx, contact_id) if contact_id is not None else None
    deal = _deal(ctx, deal_id) if deal_id is not None else None
    _same_company(contact, deal)
    day = _date_arg(ctx, "date", date)
    today = ctx.env.today.isoformat()
    if day > today:
        raise ToolError(f"argument 'date' ({day}) is in the future; log only what happened (today is {today}) and use "
                        "create_crm_reminder for what is planned")
    me = _me(ctx)
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
    text = _text_arg("title", title, 3, 200)
    due = _date_arg(ctx, "due_date", due_date)
    today = ctx.env.today.isoformat()
    if due < today:
        raise ToolError(f"argument 'due_date' ({due}) is in the past; today is {today}")
    contact = _contact(ctx, contact_id) if contact_id is not None else None
    deal = _deal(ctx, deal_id) if deal_id is not None else None
    _same_company(contact, deal)
    me = _me(ctx)
    holder = _user_arg(ctx, "assignee", assignee, sales_only=True) if assignee is not None else me
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
    me = _me(ctx)
    where, params = "r.assignee_id=?", [me["id"]]
    if not include_done:
        where += " AND r.done=0"
    if due_on is not None:
        where += " AND r.due_date=?"
        params.append(_date_arg(ctx, "due_on", due_on))
    if due_by is not None:
        where += " AND r.due_date<=?"
        params.append(_date_arg(ctx, "due_by", due_by))
    return {"today": ctx.env.today.isoformat(), "reminders": _reminder_view(ctx, where, tuple(params), 25)}


@tool
def complete_crm_reminder(ctx: ToolContext, reminder_id: int) -> dict:
    """Mark one of the logged-in user's reminders as done.

    Args:
        reminder_id: The reminder_id from list_my_crm_reminders.
    """
    me = _me(ctx)
    row = ctx.one("SELECT * FROM reminders WHERE id=? AND assignee_id=?", (reminder_id, me["id"]))
    if row is None:
        raise ToolError(f"argument 'reminder_id': you have no reminder with id {reminder_id}; see list_my_crm_reminders")
    if row["done"]:
        raise ToolError(f"reminder {reminder_id} ({row['title']!r}) is already done")
    ctx.db.execute("UPDATE reminders SET done=1, done_on=? WHERE id=?", (ctx.env.today.isoformat(), reminder_id))
    return {"reminder_id": reminder_id, "title": row["title"], "done": True}


TOOLS = [
    list_deal_stages, list_sales_reps, search_crm_companies, get_crm_company, search_crm_contacts, get_crm_contact,
    create_crm_contact, update_contact_stage, list_deals, get_deal, create_deal, update_deal, move_deal_stage,
    log_crm_activity, create_crm_reminder, list_my_crm_reminders, complete_crm_reminder,
]
