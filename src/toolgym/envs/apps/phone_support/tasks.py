"""The phone_support task families: account requests the agent handles alone, and dual-control
troubleshooting where only the customer can change the phone (every shape is covered)."""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.phone_support.tasks_account import (
    change_plan_write,
    cheapest_plan_search,
    legacy_plan_impossible,
    line_plan_lookup,
    lost_phone_suspend,
    my_balance_context,
    pay_and_resume,
    pay_bill_with_card,
    roaming_not_allowed_impossible,
    topup_unlimited_impossible,
    travel_prep,
)
from toolgym.envs.apps.phone_support.tasks_device import (
    data_exhausted_topup,
    mms_broken,
    no_data_apn,
    no_data_switch,
    no_service_airplane,
    no_service_sim,
    roaming_abroad,
    sim_damaged_transfer,
    slow_network,
    suspended_unpaid,
)

ACCOUNT_FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("line_plan_lookup", "lookup", line_plan_lookup),
    TaskFamily("my_balance_context", "context", my_balance_context),
    TaskFamily("change_plan_write", "write", change_plan_write),
    TaskFamily("pay_bill_with_card", "write", pay_bill_with_card),
    TaskFamily("cheapest_plan_search", "search_choose_write", cheapest_plan_search),
    TaskFamily("travel_prep", "multi_step", travel_prep),
    TaskFamily("pay_and_resume", "multi_step", pay_and_resume),
    TaskFamily("lost_phone_suspend", "context", lost_phone_suspend),
    TaskFamily("roaming_not_allowed_impossible", "impossible", roaming_not_allowed_impossible),
    TaskFamily("topup_unlimited_impossible", "impossible", topup_unlimited_impossible),
    TaskFamily("legacy_plan_impossible", "impossible", legacy_plan_impossible),
)

# Dual control: each task carries a user_scenario; the fix needs the customer's device tools.
DUAL_CONTROL_FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("dual_no_service_airplane", "write", no_service_airplane),
    TaskFamily("dual_no_data_switch", "write", no_data_switch),
    TaskFamily("dual_no_data_apn", "write", no_data_apn),
    TaskFamily("dual_no_service_sim", "write", no_service_sim),
    TaskFamily("dual_slow_network", "write", slow_network),
    TaskFamily("dual_mms_broken", "multi_step", mms_broken),
    TaskFamily("dual_roaming_abroad", "multi_step", roaming_abroad),
    TaskFamily("dual_suspended_unpaid", "multi_step", suspended_unpaid),
    TaskFamily("dual_data_exhausted_topup", "multi_step", data_exhausted_topup),
    TaskFamily("dual_sim_damaged_transfer", "write", sim_damaged_transfer),
)

FAMILIES: tuple[TaskFamily, ...] = ACCOUNT_FAMILIES + DUAL_CONTROL_FAMILIES
