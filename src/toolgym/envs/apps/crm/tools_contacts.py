"""crm tools over the pipeline's stages, the sales team, companies and contacts."""

from __future__ import annotations

from typing import Any

from toolgym.envs import ToolContext, ToolError, kit, tool
from toolgym.envs.apps.crm.rules import (
    EMAIL_PATTERN,
    LIFECYCLE_STAGES,
    LOST_REASONS,
    SALES_ROLES,
    lifecycle_rank,
)
from toolgym.envs.apps.crm.tool_common import (
    CONTACT_SELECT,
    DEAL_SELECT,
    MAX_RESULTS,
    Lifecycle,
    activities_of,
    contact_view,
    current_user,
    deal_view,
    find_company,
    find_contact,
    like_words,
    reminder_view,
    text_arg,
    user_arg,
)


def _query_needle(query: str, what: str) -> str:
    """The LIKE pattern of a free-text `query` argument; an empty one is the caller's mistake."""
    needle = " ".join(query.split())
    if not needle:
        raise ToolError(f"argument 'query' is empty; give part of {what} or leave it out")
    return f"%{needle}%"


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
    where = kit.Where()
    if query is not None:
        needle = _query_needle(query, "a company name")
        where.add("(co.name LIKE ? OR co.domain LIKE ?)", needle, needle)
    where.when(None if industry is None else industry.strip(), "lower(co.industry) = lower(?)")
    where.when(None if city is None else city.strip(), "lower(co.city) = lower(?)")
    if owner is not None:
        where.add("co.owner_id = ?", user_arg(ctx, "owner", owner, sales_only=False)["id"])
    rows = ctx.query(
        "SELECT co.id AS company_id, co.name, co.domain, co.industry, co.employees, co.city, u.name AS owner "
        f"FROM companies co JOIN users u ON u.id = co.owner_id WHERE {where.sql} ORDER BY co.name, co.id",
        where.params)
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
    company = find_company(ctx, company_id)
    owner = ctx.one("SELECT name, username FROM users WHERE id=?", (company["owner_id"],))
    assert owner is not None
    contacts = [contact_view(r) for r in ctx.query(
        f"{CONTACT_SELECT} WHERE c.company_id=? ORDER BY c.last_name, c.first_name, c.id", (company_id,))]
    deals = [deal_view(r) for r in ctx.query(
        f"{DEAL_SELECT} WHERE d.company_id=? ORDER BY d.status != 'open', d.close_date, d.id", (company_id,))]
    return {
        "company_id": company["id"], "name": company["name"], "domain": company["domain"],
        "industry": company["industry"], "employees": company["employees"], "city": company["city"],
        "owner": owner["name"], "owner_username": owner["username"], "created_on": company["created_on"],
        "contacts": contacts[:MAX_RESULTS], "deals": deals[:MAX_RESULTS],
    }


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
    where = kit.Where()
    if query is not None:
        needle = _query_needle(query, "a name or email")
        where.add("(c.first_name || ' ' || c.last_name LIKE ? OR c.email LIKE ?)", needle, needle)
    where.when(like_words(company), "co.name LIKE ?")
    where.when(lifecycle_stage, "c.lifecycle_stage = ?")
    if owner is not None:
        where.add("c.owner_id = ?", user_arg(ctx, "owner", owner, sales_only=False)["id"])
    # Page in SQL: the per-contact last-activity lookup then runs only for the rows returned.
    ids = [r["id"] for r in ctx.query(
        "SELECT c.id FROM contacts c JOIN companies co ON co.id = c.company_id "
        f"WHERE {where.sql} ORDER BY c.last_name, c.first_name, c.id", where.params)]
    page = ids[:MAX_RESULTS]
    marks = ", ".join("?" for _ in page)
    rows = ctx.query(f"{CONTACT_SELECT} WHERE c.id IN ({marks}) ORDER BY c.last_name, c.first_name, c.id", page)
    return {"count": len(ids), "contacts": [contact_view(r) for r in rows]}


@tool
def get_crm_contact(ctx: ToolContext, contact_id: int) -> dict:
    """Show a contact: email, phone, job title, company, lifecycle stage, owner, recent activities, deals, reminders.

    Args:
        contact_id: The contact_id from search_crm_contacts.
    """
    contact = find_contact(ctx, contact_id)
    deals = [deal_view(r) for r in ctx.query(f"{DEAL_SELECT} WHERE d.contact_id=? ORDER BY d.close_date, d.id",
                                              (contact_id,))]
    return {
        **contact_view(contact), "phone": contact["phone"], "owner_username": contact["owner_username"],
        "created_on": contact["created_on"], "recent_activities": activities_of(ctx, "contact_id", contact_id),
        "deals": deals[:MAX_RESULTS],
        "open_reminders": reminder_view(ctx, "r.contact_id=? AND r.done=0", (contact_id,), 5),
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
    first = text_arg("first_name", first_name, 1, 60)
    last = text_arg("last_name", last_name, 1, 60)
    address = email.strip()
    if not EMAIL_PATTERN.match(address):
        raise ToolError(f"argument 'email': {email!r} is not a valid email address")
    company = find_company(ctx, company_id)
    clash = ctx.one(f"{CONTACT_SELECT} WHERE lower(c.email) = lower(?)", (address,))
    if clash is not None:
        raise ToolError(f"argument 'email': {address} already belongs to {clash['name']} (contact_id {clash['id']}) at "
                        f"{clash['company']}; contact emails must be unique")
    title = text_arg("job_title", job_title, 1, 80) if job_title is not None else None
    number = text_arg("phone", phone, 5, 30) if phone is not None else None
    holder = user_arg(ctx, "owner", owner, sales_only=True) if owner is not None else current_user(ctx)
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
    contact = find_contact(ctx, contact_id)
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
