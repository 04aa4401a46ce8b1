"""phone_support app: seed rules, dual-control ownership, device and account rules, context,
dual-control tasks (agent + user-side calls) and check scoring."""

from __future__ import annotations

import json

from app_helpers import AppKit, assert_small_json, call, error
from toolgym.agent.users import goal_met
from toolgym.dataset.replay import replay_task, user_tools
from toolgym.envs import make_env
from toolgym.envs.apps.phone_support import APP
from toolgym.envs.apps.phone_support.rules import DEFAULT_APN, digits_of
from toolgym.envs.people import population
from toolgym.verify import verify_task

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.
KIT = AppKit("phone_support")
tasks_30, first_task, seed_one, seed_all, fresh_env = (
    KIT.tasks_30, KIT.first_task, KIT.seed_one, KIT.seed_all, KIT.fresh_env)


def healthy_customer() -> dict:
    """A customer whose primary phone works and whose primary line is active, on a 5G phone."""
    rows = seed_all(
        "SELECT u.username, l.phone_number, l.id AS line_id, d.id AS device_id FROM lines l "
        "JOIN accounts a ON a.id = l.account_id JOIN users u ON u.id = a.user_id JOIN devices d ON d.line_id = l.id "
        "WHERE l.is_primary = 1 AND l.status = 'active' AND d.supports_5g = 1 ORDER BY l.id")
    for row in rows:
        status = call(fresh_env(row["username"]), "check_device_status", caller="user")
        if status["internet"] == "working" and status["mms"] == "working":
            return row
    raise AssertionError("no healthy customer in the seed")


# ---------------------------------------------------------------- structure and seed


def test_every_line_has_one_phone() -> None:
    assert seed_one("SELECT COUNT(*) AS n FROM lines")["n"] == seed_one("SELECT COUNT(DISTINCT line_id) AS n FROM devices")["n"]


def test_primary_lines_carry_the_population_phone_numbers() -> None:
    primary = seed_all("SELECT u.username, l.phone_number FROM lines l JOIN accounts a ON a.id = l.account_id "
                       "JOIN users u ON u.id = a.user_id WHERE l.is_primary = 1 ORDER BY l.id")
    phones = {p.username: p.phone for p in population()}
    assert all(phones[r["username"]] == r["phone_number"] for r in primary)


def test_agent_and_user_each_have_tools_and_six_families_are_dual_control() -> None:
    agent_tools = [t for t in APP.tools if t.owner == "agent"]
    user_tools = [t for t in APP.tools if t.owner == "user"]
    assert len(agent_tools) >= 8 and len(user_tools) >= 8
    dual = {t.family for t in tasks_30() if t.user_scenario is not None}
    assert len(dual) >= 6


# ---------------------------------------------------------------- dual control


def test_device_tools_belong_to_the_user_and_account_tools_to_the_agent() -> None:
    user = healthy_customer()
    env = fresh_env(user["username"])
    refused = error(env, "toggle_airplane_mode", enabled=True)
    assert "belongs to the user" in refused and "ask the user" in refused
    assert "belongs to the agent" in error(env, "get_my_account", caller="user")
    agent_names = {s.name for s in env.tool_specs("agent")}
    assert "toggle_airplane_mode" not in agent_names and "get_my_account" in agent_names
    assert "toggle_airplane_mode" in {s.name for s in env.tool_specs("user")}
    assert env.diff() == []
    assert "reseat_sim_card" in user_tools(env) and "pay_bill" not in user_tools(env)


def test_what_the_phone_shows_follows_device_and_line_state() -> None:
    user = healthy_customer()
    env = fresh_env(user["username"])
    assert call(env, "toggle_airplane_mode", caller="user", enabled=True)["status"]["service"] == "off (airplane mode)"
    assert call(env, "toggle_airplane_mode", caller="user", enabled=False)["status"]["service"] == "ok"
    assert call(env, "toggle_mobile_data", caller="user", enabled=False)["status"]["internet"].startswith("off")
    call(env, "toggle_mobile_data", caller="user", enabled=True)
    speed = call(env, "run_speed_test", caller="user")
    assert speed["result"] == "ok" and speed["network_type"] == "5G"
    assert call(env, "set_network_mode", caller="user", mode="2g_only")["status"]["network_type"] == "2G"
    assert call(env, "run_speed_test", caller="user")["download_mbps"] < speed["download_mbps"]
    # account side: a suspended line shows as 'emergency calls only' on the phone
    call(env, "suspend_line", phone_number=user["phone_number"], reason="customer_request")
    assert call(env, "check_device_status", caller="user")["service"] == "emergency calls only"
    assert call(env, "view_apn_settings", caller="user")["apn_name"] == DEFAULT_APN
    four_g = seed_one("SELECT u.username FROM devices d JOIN lines l ON l.id = d.line_id JOIN accounts a "
                      "ON a.id = l.account_id JOIN users u ON u.id = a.user_id WHERE d.supports_5g = 0 "
                      "AND l.is_primary = 1 ORDER BY d.id LIMIT 1")
    assert "does not support 5G" in error(fresh_env(four_g["username"]), "set_network_mode", caller="user",
                                          mode="5g_4g_3g")


def test_seeded_faults_show_on_the_phone_and_the_reference_fix_clears_them() -> None:
    env = make_env("phone_support")
    for family in sorted({t.family for t in tasks_30() if t.user_scenario is not None}):
        task = first_task(family)
        goal = task.metadata["user_goal"]
        env.reset(task.env_variables)
        before = json.loads(env.call_tool(goal["tool"], goal["arguments"], caller="user").content)
        assert not goal_met(before, goal["expect"]), family
        outcome = replay_task(task, env)
        assert outcome.kept, f"{task.id}: {outcome.reason}"
        after = json.loads(env.call_tool(goal["tool"], goal["arguments"], caller="user").content)
        assert goal_met(after, goal["expect"]) == (family != "dual_sim_damaged_transfer"), family
        assert any(c.caller == "user" for c in env.calls), family


# ---------------------------------------------------------------- account rules and errors


def test_bad_arguments_get_errors_naming_the_argument() -> None:
    user = healthy_customer()
    env = fresh_env(user["username"])
    assert "'phone_number'" in error(env, "get_line_details", phone_number="12345")
    assert "'phone_number'" in error(env, "get_line_details", phone_number="+1-999-999-9999")
    assert "'plan_code'" in error(env, "change_plan", phone_number=user["phone_number"], plan_code="GOLD")
    assert "'gb'" in error(env, "add_data_topup", phone_number=user["phone_number"], gb=2)
    assert "'bill_id'" in error(env, "pay_bill", bill_id=999_999)
    assert "'reason'" in error(env, "suspend_line", phone_number=user["phone_number"], reason="vacation")
    assert "'due_before'" in error(env, "get_bills", due_before="someday")
    assert "'mode'" in error(env, "set_network_mode", caller="user", mode="6g")
    assert "'permission'" in error(env, "grant_app_permission", caller="user", app="maps", permission="sms")
    assert "'enabled'" in error(env, "toggle_mobile_data", caller="user", enabled="yes")
    assert env.diff() == []


def test_phone_numbers_are_read_however_they_are_written() -> None:
    user = healthy_customer()
    env = fresh_env(user["username"])
    digits = digits_of(user["phone_number"])
    spaced = f"({digits[1:4]}) {digits[4:7]} {digits[7:]}"
    assert call(env, "get_line_details", phone_number=spaced)["phone_number"] == user["phone_number"]


def test_account_rules_are_enforced() -> None:
    no_roam = seed_one("SELECT l.phone_number, u.username FROM lines l JOIN plans p ON p.id = l.plan_id "
                       "JOIN accounts a ON a.id = l.account_id JOIN users u ON u.id = a.user_id "
                       "WHERE p.roaming_allowed = 0 AND l.status = 'active' ORDER BY l.id LIMIT 1")
    env = fresh_env(no_roam["username"])
    assert "does not include international roaming" in error(env, "enable_roaming", phone_number=no_roam["phone_number"])
    assert "legacy plan" in error(env, "change_plan", phone_number=no_roam["phone_number"], plan_code="SAVER2")
    unlimited = seed_one("SELECT l.phone_number, u.username FROM lines l JOIN plans p ON p.id = l.plan_id "
                         "JOIN accounts a ON a.id = l.account_id JOIN users u ON u.id = a.user_id "
                         "WHERE p.data_gb IS NULL AND l.status = 'active' ORDER BY l.id LIMIT 1")
    env = fresh_env(unlimited["username"])
    assert "unlimited data" in error(env, "add_data_topup", phone_number=unlimited["phone_number"], gb=1)
    heavy = seed_one("SELECT l.phone_number, u.username FROM lines l JOIN plans p ON p.id = l.plan_id "
                     "JOIN accounts a ON a.id = l.account_id JOIN users u ON u.id = a.user_id "
                     "WHERE l.data_used_gb > 5 AND l.status = 'active' AND l.roaming_enabled = 0 ORDER BY l.id LIMIT 1")
    env = fresh_env(heavy["username"])
    assert "pick a plan with more data" in error(env, "change_plan", phone_number=heavy["phone_number"], plan_code="BASIC5")
    assert env.diff() == []


def test_a_line_suspended_for_an_unpaid_bill_resumes_only_after_paying() -> None:
    line = seed_one("SELECT l.phone_number, u.username, a.id AS account_id FROM lines l JOIN accounts a "
                    "ON a.id = l.account_id JOIN users u ON u.id = a.user_id WHERE l.suspension_reason = 'unpaid_bill' "
                    "ORDER BY l.id LIMIT 1")
    env = fresh_env(line["username"], today="2026-05-10")
    assert "overdue bills" in error(env, "resume_line", phone_number=line["phone_number"])
    unpaid = call(env, "get_bills", status="unpaid")
    assert unpaid and all(b["overdue"] for b in unpaid)
    for bill in unpaid:
        paid = call(env, "pay_bill", bill_id=bill["bill_id"])
        assert paid["reference"].startswith("PAY-") and paid["paid_on"] == "2026-05-10"
    assert call(env, "resume_line", phone_number=line["phone_number"])["status"] == "active"
    assert "already paid" in error(env, "pay_bill", bill_id=unpaid[0]["bill_id"])
    assert {c.table for c in env.diff()} == {"bills", "payments", "lines", "line_events"}


def test_tool_results_are_small_json() -> None:
    env = fresh_env(healthy_customer()["username"])
    assert_small_json(env, [("get_my_account", {}), ("list_plans", {}), ("get_bills", {}),
                            ("list_payment_methods", {})], limit=6000)
    assert_small_json(env, [("check_device_status", {})], limit=6000, caller="user")


# ---------------------------------------------------------------- context: who "I" am, what "today" is


def test_logged_in_user_decides_my_account_and_my_phone() -> None:
    rows = seed_all("SELECT u.username, GROUP_CONCAT(l.phone_number) AS phones FROM users u JOIN accounts a "
                    "ON a.user_id = u.id JOIN lines l ON l.account_id = a.id GROUP BY u.id ORDER BY u.id LIMIT 2")
    seen = []
    for row in rows:
        mine = call(fresh_env(row["username"]), "get_my_account")
        numbers = {line["phone_number"] for line in mine["lines"]}
        assert numbers == set(row["phones"].split(","))
        seen.append(numbers)
    assert seen[0].isdisjoint(seen[1])
    other = rows[1]["phones"].split(",")[0]
    assert "not a line on your account" in error(fresh_env(rows[0]["username"]), "get_line_details", phone_number=other)
    assert "LOGGED_IN_USER" in error(fresh_env(None), "get_my_account")
    assert "LOGGED_IN_USER" in error(fresh_env(None), "check_device_status", caller="user")
    airplane = first_task("dual_no_service_airplane").env_variables["LOGGED_IN_USER"]
    assert call(fresh_env(airplane), "check_device_status", caller="user")["airplane_mode"] == "on"
    assert call(fresh_env(healthy_customer()["username"]), "check_device_status", caller="user")["airplane_mode"] == "off"


def test_current_date_decides_tomorrow_overdue_and_suspension_day() -> None:
    bill = seed_one("SELECT b.due_date, b.id, u.username FROM bills b JOIN accounts a ON a.id = b.account_id "
                    "JOIN users u ON u.id = a.user_id WHERE b.status = 'unpaid' AND b.due_date > '2026-04-06' "
                    "ORDER BY b.id LIMIT 1")
    day_before = f"{bill['due_date'][:8]}{int(bill['due_date'][8:]) - 1:02d}"
    on_eve = call(fresh_env(bill["username"], today=day_before), "get_bills", status="unpaid", due_before="tomorrow")
    assert [b["bill_id"] for b in on_eve] == [bill["id"]] and on_eve[0]["overdue"] is False
    early = call(fresh_env(bill["username"], today="2026-04-01"), "get_bills", status="unpaid", due_before="tomorrow")
    assert bill["id"] not in [b["bill_id"] for b in early]
    late = call(fresh_env(bill["username"], today="2026-08-01"), "get_bills", status="unpaid")
    assert next(b for b in late if b["bill_id"] == bill["id"])["overdue"] is True
    user = healthy_customer()
    env = fresh_env(user["username"], today="2026-07-09")
    assert call(env, "suspend_line", phone_number=user["phone_number"], reason="lost_or_stolen")["suspended_on"] == "2026-07-09"


# ---------------------------------------------------------------- tasks


def test_dual_control_tasks_need_the_users_hands_and_the_others_only_the_agents() -> None:
    device_tools = user_tools(make_env("phone_support"))
    for task in tasks_30():
        owners = {"user" if c.name in device_tools else "agent" for c in task.reference_solution}
        if task.user_scenario is not None:
            # dual control: the fix needs the user's hands, and the user has a goal to check
            assert "user" in owners and task.metadata["dual_control"] is True, task.id
            assert task.user_scenario.opening_message == task.prompt
            assert task.metadata["user_goal"]["tool"] == "check_device_status"
            assert any(key.startswith("phone number") for key in task.user_scenario.known_info)
        else:
            assert owners == {"agent"}, task.id


def test_wrong_extra_and_missing_writes_fail_the_right_checks() -> None:
    task = first_task("change_plan_write")
    line_id = task.metadata["line_id"]
    phone = task.reference_solution[1].arguments["phone_number"]
    target = task.metadata["plan"]
    # checks: plan field (3) + plan_change logged (1) + diff_only (2) = 6
    env = make_env("phone_support")

    env.reset(task.env_variables)  # missing: nothing written
    verdict = verify_task(task, env, task.expected_answer)
    assert verdict.reward == 0.0 and verdict.partial_score == 0.0

    env.reset(task.env_variables)  # wrong: another plan
    current = env.db().execute("SELECT p.code FROM lines l JOIN plans p ON p.id = l.plan_id WHERE l.id = ?",
                               (line_id,)).fetchone()[0]
    for plan in call(env, "list_plans"):
        if plan["code"] in (target, current):
            continue
        if not env.call_tool("change_plan", {"phone_number": phone, "plan_code": plan["code"]}).is_error:
            break
    verdict = verify_task(task, env, task.expected_answer)
    failed = {c.label for c in verdict.checks if not c.passed}
    assert failed == {f"{phone} is on {target}"}
    assert verdict.reward == 0.0 and abs(verdict.partial_score - 3 / 6) < 1e-9

    env.reset(task.env_variables)  # extra: the right plan, plus a suspension nobody asked for
    call(env, "change_plan", phone_number=phone, plan_code=target)
    call(env, "suspend_line", phone_number=phone, reason="customer_request")
    verdict = verify_task(task, env, task.expected_answer)
    assert {c.label for c in verdict.checks if not c.passed} == {"no other changes"}
    assert verdict.reward == 0.0 and abs(verdict.partial_score - 4 / 6) < 1e-9


def test_dual_task_checks_see_both_device_and_account_state() -> None:
    task = first_task("dual_roaming_abroad")
    phone = task.metadata["phone_number"]
    env = make_env("phone_support")
    env.reset(task.env_variables)
    call(env, "enable_roaming", phone_number=phone)  # the agent's half only
    verdict = verify_task(task, env, None)
    # the phone's half is missing: its field check fails, and so does diff_only (an expected change is absent)
    assert {c.label for c in verdict.checks if not c.passed} == {"phone's data roaming on", "no other changes"}
    call(env, "toggle_data_roaming", caller="user", enabled=True)  # the user's half
    assert verify_task(task, env, None).reward == 1.0
