"""The crm app's task families, one per kind of request, covering every task shape."""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.crm.tasks_contacts import (
    add_contact,
    duplicate_email_impossible,
    new_lead_with_deal,
    record_owner,
    remind_least_recent_contact,
    update_lifecycle,
)
from toolgym.envs.apps.crm.tasks_deals import (
    advance_deal_stepwise,
    biggest_open_deal,
    call_closing_soonest,
    deal_stage_update,
    reopen_closed_deal,
    reschedule_deal,
    skip_stage_impossible,
    win_deal,
)
from toolgym.envs.apps.crm.tasks_mine import my_deals_closing, my_follow_ups_on_day, remind_me_relative

FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("biggest_open_deal", "lookup", biggest_open_deal),
    TaskFamily("record_owner", "lookup", record_owner),
    TaskFamily("update_lifecycle", "write", update_lifecycle),
    TaskFamily("deal_stage_update", "write", deal_stage_update),
    TaskFamily("reschedule_deal", "write", reschedule_deal),
    TaskFamily("add_contact", "write", add_contact),
    TaskFamily("call_closing_soonest", "search_choose_write", call_closing_soonest),
    TaskFamily("remind_least_recent_contact", "search_choose_write", remind_least_recent_contact),
    TaskFamily("new_lead_with_deal", "multi_step", new_lead_with_deal),
    TaskFamily("advance_deal_stepwise", "multi_step", advance_deal_stepwise),
    TaskFamily("win_deal", "multi_step", win_deal),
    TaskFamily("reopen_closed_deal", "impossible", reopen_closed_deal),
    TaskFamily("skip_stage_impossible", "impossible", skip_stage_impossible),
    TaskFamily("duplicate_email_impossible", "impossible", duplicate_email_impossible),
    TaskFamily("my_deals_closing", "context", my_deals_closing),
    TaskFamily("remind_me_relative", "context", remind_me_relative),
    TaskFamily("my_follow_ups_on_day", "context", my_follow_ups_on_day),
)
