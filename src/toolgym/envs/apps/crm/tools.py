"""Tools of the crm app: companies, contacts, the deal pipeline, activities and reminders.

Every rule (stage order, closed deals stay closed, unique contact emails, forward-only lifecycle
stages) is checked here and a broken rule comes back as a ToolError that says what was wrong and what
is allowed. "My"/"me" means the LOGGED_IN_USER; dates go through the task's CURRENT_DATE, so
"tomorrow" and "next Friday" work and nothing reads the wall clock. New rows get the next rowid, so
ids are deterministic.
"""

from __future__ import annotations

from toolgym.envs.apps.crm.tools_contacts import (
    create_crm_contact,
    get_crm_company,
    get_crm_contact,
    list_deal_stages,
    list_sales_reps,
    search_crm_companies,
    search_crm_contacts,
    update_contact_stage,
)
from toolgym.envs.apps.crm.tools_deals import (
    complete_crm_reminder,
    create_crm_reminder,
    create_deal,
    get_deal,
    list_deals,
    list_my_crm_reminders,
    log_crm_activity,
    move_deal_stage,
    update_deal,
)

TOOLS = [
    list_deal_stages, list_sales_reps, search_crm_companies, get_crm_company, search_crm_contacts, get_crm_contact,
    create_crm_contact, update_contact_stage, list_deals, get_deal, create_deal, update_deal, move_deal_stage,
    log_crm_activity, create_crm_reminder, list_my_crm_reminders, complete_crm_reminder,
]
