"""What the crm tools share: argument checks, the logged-in user and sales team, lookups of companies,
contacts, deals and stages that name the argument on failure, and the views tools return."""

from __future__ import annotations

import re
from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, kit
from toolgym.envs.apps.crm.rules import SALES_ROLES
from toolgym.envs.kit.lookups import row_by_id

MAX_RESULTS = 20


Lifecycle = Literal[
    "subscriber", "lead", "marketing_qualified_lead", "sales_qualified_lead", "opportunity", "customer", "evangelist"
]


LostReason = Literal["price", "competitor", "no_budget", "timing", "no_decision"]
ActivityKind = Literal["call", "email", "meeting", "note"]


DEAL_SELECT = (
    "SELECT d.id, d.name, d.company_id, d.contact_id, d.amount, d.stage_id, d.status, d.close_date, d.owner_id, "
    "d.created_on, d.closed_on, d.lost_reason, s.name AS stage, s.position, s.win_probability, co.name AS company, "
    "u.name AS owner, u.username AS owner_username, c.first_name || ' ' || c.last_name AS contact "
    "FROM deals d JOIN pipeline_stages s ON s.id = d.stage_id JOIN companies co ON co.id = d.company_id "
    "JOIN users u ON u.id = d.owner_id LEFT JOIN contacts c ON c.id = d.contact_id"
)


CONTACT_SELECT = (
    "SELECT c.*, c.first_name || ' ' || c.last_name AS name, co.name AS company, u.name AS owner, "
    "u.username AS owner_username, (SELECT MAX(a.occurred_on) FROM activities a WHERE a.contact_id = c.id) "
    "AS last_activity_on FROM contacts c JOIN companies co ON co.id = c.company_id JOIN users u ON u.id = c.owner_id"
)


def text_arg(name: str, text: str, low: int, high: int) -> str:
    value = " ".join(text.split())
    if not low <= len(value) <= high:
        raise ToolError(f"argument '{name}' must be {low}-{high} characters; got {len(value)}")
    return value


def current_user(ctx: ToolContext) -> dict[str, Any]:
    return kit.logged_in_user(ctx, "the CRM", "id, username, name, role")


def user_arg(ctx: ToolContext, name: str, text: str, sales_only: bool) -> dict[str, Any]:
    """'me', a username or a full name (case-insensitive); owners must be on the sales team."""
    wanted = " ".join(text.split())
    if wanted.lower() in ("me", "my", "myself", "mine", "i"):
        row = current_user(ctx)
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


def stage_arg(ctx: ToolContext, name: str, text: str) -> dict[str, Any]:
    """A pipeline stage by name, ignoring case, spaces and punctuation."""
    stages = ctx.query("SELECT * FROM pipeline_stages ORDER BY position")
    for stage in stages:
        if _stage_key(stage["name"]) == _stage_key(text):
            return stage
    known = ", ".join(s["name"] for s in stages)
    raise ToolError(f"argument '{name}': unknown stage {text!r}; the stages are: {known}")


def find_company(ctx: ToolContext, company_id: int) -> dict[str, Any]:
    return row_by_id(ctx, "SELECT * FROM companies WHERE id=?", "company_id", company_id, "company",
                     "use search_crm_companies")


def find_contact(ctx: ToolContext, contact_id: int) -> dict[str, Any]:
    return row_by_id(ctx, f"{CONTACT_SELECT} WHERE c.id=?", "contact_id", contact_id, "contact",
                     "use search_crm_contacts")


def find_deal(ctx: ToolContext, deal_id: int) -> dict[str, Any]:
    return row_by_id(ctx, f"{DEAL_SELECT} WHERE d.id=?", "deal_id", deal_id, "deal", "use list_deals")


def require_open(deal: dict[str, Any], action: str) -> None:
    if deal["status"] != "open":
        raise ToolError(
            f"deal {deal['name']!r} is closed ({deal['stage']} on {deal['closed_on']}); closed deals cannot be "
            f"{action}")


def same_company(contact: dict[str, Any] | None, deal: dict[str, Any] | None) -> None:
    if contact is not None and deal is not None and contact["company_id"] != deal["company_id"]:
        raise ToolError(f"contact {contact['name']} works at {contact['company']}, but deal {deal['name']!r} is with "
                        f"{deal['company']}; link a contact of the deal's company")


def deal_view(row: dict[str, Any]) -> dict[str, Any]:
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


def contact_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "contact_id": row["id"], "name": row["name"], "email": row["email"], "job_title": row["job_title"],
        "company": row["company"], "company_id": row["company_id"], "lifecycle_stage": row["lifecycle_stage"],
        "owner": row["owner"], "last_activity_on": row["last_activity_on"],
    }


def activities_of(ctx: ToolContext, column: str, value: int) -> list[dict[str, Any]]:
    return ctx.query(
        "SELECT a.id AS activity_id, a.kind, a.summary, a.occurred_on, u.name AS logged_by FROM activities a "
        f"JOIN users u ON u.id = a.user_id WHERE a.{column}=? ORDER BY a.occurred_on DESC, a.id DESC LIMIT 5",
        (value,))


def reminder_view(ctx: ToolContext, where: str, params: tuple[Any, ...], limit: int) -> list[dict[str, Any]]:
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


def like_words(text: str | None) -> str | None:
    """The LIKE pattern matching `text` (its words, single-spaced) anywhere; None when not given."""
    return None if text is None else f"%{' '.join(text.split())}%"
