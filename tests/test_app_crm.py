"""crm app: seed rules, tool rules and errors, context, hand-computed partial scores, impossible tasks."""

from __future__ import annotations

import datetime as dt

import pytest

from app_helpers import AppKit, assert_small_json, call, error
from toolgym.envs import make_env
from toolgym.envs.apps.crm.data import SNAPSHOT_DAY
from toolgym.envs.apps.crm.rules import PIPELINE
from toolgym.envs.registry import APP_MODULES
from toolgym.verify import verify_task

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.
KIT = AppKit("crm")
tasks_30, first_task, seed_one, seed_all, fresh_env, _run = (
    KIT.tasks_30, KIT.first_task, KIT.seed_one, KIT.seed_all, KIT.fresh_env, KIT.run)


def rep_with_deals(skip: int = 0) -> dict:
    """A sales rep who owns at least three open deals."""
    return seed_one(
        "SELECT u.id, u.username, u.name FROM users u WHERE u.role = 'sales_rep' AND (SELECT COUNT(*) FROM deals d "
        "WHERE d.owner_id = u.id AND d.status = 'open') >= 3 ORDER BY u.id LIMIT 1 OFFSET ?", (skip,))


def open_deal_at(position: int) -> dict:
    return seed_one(
        "SELECT d.*, u.username FROM deals d JOIN users u ON u.id = d.owner_id WHERE d.status = 'open' "
        "AND d.stage_id = ? ORDER BY d.id LIMIT 1", (position,))


# ---------------------------------------------------------------- structure and seed


def test_deals_and_companies_are_owned_by_the_sales_team() -> None:
    team = seed_all("SELECT id FROM users WHERE role IN ('sales_rep', 'sales_manager') ORDER BY id")
    owners = seed_all("SELECT DISTINCT owner_id FROM deals UNION SELECT DISTINCT owner_id FROM companies ORDER BY 1")
    assert {r["owner_id"] for r in owners} <= {r["id"] for r in team}


def test_crm_is_registered_under_its_package() -> None:
    assert APP_MODULES["crm"] == "toolgym.envs.apps.crm"


def test_seed_is_consistent_with_the_pipeline_and_the_snapshot_day() -> None:
    outcome = {i + 1: o for i, (_, _, o) in enumerate(PIPELINE)}
    for deal in seed_all("SELECT * FROM deals ORDER BY id"):
        assert deal["status"] == outcome[deal["stage_id"]], deal["name"]
        if deal["status"] == "open":
            assert deal["close_date"] > SNAPSHOT_DAY.isoformat()
        else:
            assert deal["closed_on"] <= SNAPSHOT_DAY.isoformat()
    won_contacts = seed_all(
        "SELECT c.lifecycle_stage FROM deals d JOIN contacts c ON c.id = d.contact_id WHERE d.status = 'won' "
        "ORDER BY d.id")
    assert won_contacts and all(r["lifecycle_stage"] in ("customer", "evangelist") for r in won_contacts)
    latest = seed_one("SELECT MAX(occurred_on) AS d FROM activities")["d"]
    assert latest <= SNAPSHOT_DAY.isoformat()
    # each contact's email sits on its company's domain
    assert not seed_all("SELECT c.id FROM contacts c JOIN companies co ON co.id = c.company_id "
                        "WHERE c.email NOT LIKE '%@' || co.domain ORDER BY c.id")


# ---------------------------------------------------------------- tools: rules and errors


def test_bad_arguments_get_errors_naming_the_argument() -> None:
    env = fresh_env(rep_with_deals()["username"])
    assert "'deal_id'" in error(env, "get_deal", deal_id=999_999)
    assert "'company_id'" in error(env, "get_crm_company", company_id="abc")
    assert "'stage'" in error(env, "list_deals", stage="Negotiation")
    assert "Contract Sent" in error(env, "list_deals", stage="Negotiation")  # the error lists the real stages
    assert "'close_month'" in error(env, "list_deals", close_month="soonish")
    assert "'owner'" in error(env, "list_deals", owner="Nobody Atall")
    assert "'lifecycle_stage'" in error(env, "search_crm_contacts", lifecycle_stage="vip")
    assert "'email'" in error(env, "create_crm_contact", first_name="A", last_name="B", email="not-an-email",
                              company_id=1)
    assert "'amount'" in error(env, "create_deal", name="Test deal", company_id=1, amount=0, close_date="2026-06-01")
    assert "'close_date'" in error(env, "create_deal", name="Test deal", company_id=1, amount=100,
                                   close_date="2026-01-01")
    assert "'due_date'" in error(env, "create_crm_reminder", title="Call back", due_date="someday")
    assert "'reminder_id'" in error(env, "complete_crm_reminder", reminder_id=999_999)
    assert env.diff() == []


def test_deals_move_one_stage_at_a_time_and_closed_deals_stay_closed() -> None:
    deal = open_deal_at(2)
    env = fresh_env(deal["username"], today="2026-04-02")
    stages = [name for name, _, _ in PIPELINE]
    assert "cannot be skipped" in error(env, "move_deal_stage", deal_id=deal["id"], stage=stages[3])
    assert "cannot be skipped" in error(env, "move_deal_stage", deal_id=deal["id"], stage="Closed Won")
    assert "backwards" in error(env, "move_deal_stage", deal_id=deal["id"], stage=stages[0])
    assert "'lost_reason'" in error(env, "move_deal_stage", deal_id=deal["id"], stage="Closed Lost")
    moved = call(env, "move_deal_stage", deal_id=deal["id"], stage="presentation scheduled")
    assert moved["stage"] == stages[2] and moved["status"] == "open"
    lost = call(env, "move_deal_stage", deal_id=deal["id"], stage="Closed Lost", lost_reason="timing")
    assert lost["status"] == "lost" and lost["closed_on"] == "2026-04-02"
    assert "closed" in error(env, "move_deal_stage", deal_id=deal["id"], stage=stages[3])
    assert "closed" in error(env, "update_deal", deal_id=deal["id"], amount=5000)
    last = open_deal_at(5)
    env = fresh_env(last["username"], today="2026-04-02")
    won = call(env, "move_deal_stage", deal_id=last["id"], stage="Closed Won")
    assert won["status"] == "won" and won["closed_on"] == "2026-04-02"
    assert "cannot be reopened" in error(env, "move_deal_stage", deal_id=last["id"], stage="Closed Lost",
                                         lost_reason="price")


def test_contact_emails_are_unique_and_lifecycle_moves_forward() -> None:
    contact = seed_one("SELECT c.*, co.name AS company FROM contacts c JOIN companies co ON co.id = c.company_id "
                       "WHERE c.lifecycle_stage = 'opportunity' ORDER BY c.id LIMIT 1")
    env = fresh_env(rep_with_deals()["username"])
    clash = error(env, "create_crm_contact", first_name="New", last_name="Person", email=contact["email"].upper(),
                  company_id=contact["company_id"])
    assert "already belongs to" in clash and contact["last_name"] in clash
    assert "only move forward" in error(env, "update_contact_stage", contact_id=contact["id"], lifecycle_stage="lead")
    assert "already" in error(env, "update_contact_stage", contact_id=contact["id"], lifecycle_stage="opportunity")
    assert env.diff() == []
    made = call(env, "create_crm_contact", first_name="Zora", last_name="Quill", email="zora.quill@example.org",
                company_id=contact["company_id"])
    assert made["contact_id"] == seed_one("SELECT MAX(id) AS n FROM contacts")["n"] + 1
    found = call(env, "search_crm_contacts", query="zora quill")["contacts"]
    assert [c["contact_id"] for c in found] == [made["contact_id"]]


def test_activities_happened_and_reminders_are_ahead() -> None:
    deal = open_deal_at(1)
    other = seed_one("SELECT id FROM contacts WHERE company_id != ? ORDER BY id LIMIT 1", (deal["company_id"],))
    env = fresh_env(deal["username"], today="2026-05-04")
    assert "'date'" in error(env, "log_crm_activity", kind="call", summary="Spoke", deal_id=deal["id"], date="tomorrow")
    assert "link a contact" in error(env, "log_crm_activity", kind="call", summary="Spoke", deal_id=deal["id"],
                                     contact_id=other["id"])
    assert "give 'contact_id'" in error(env, "log_crm_activity", kind="note", summary="Orphan note")
    assert "in the past" in error(env, "create_crm_reminder", title="Too late", due_date="yesterday")
    logged = call(env, "log_crm_activity", kind="email", summary="Sent the quote", deal_id=deal["id"], date="yesterday")
    assert logged["occurred_on"] == "2026-05-03"
    reminder = call(env, "create_crm_reminder", title="Chase the quote", due_date="in 3 days", deal_id=deal["id"])
    assert reminder["due_date"] == "2026-05-07"
    done = call(env, "complete_crm_reminder", reminder_id=reminder["reminder_id"])
    assert done["done"] is True
    assert "already done" in error(env, "complete_crm_reminder", reminder_id=reminder["reminder_id"])
    someone_elses = seed_one("SELECT id FROM reminders WHERE assignee_id != ? ORDER BY id LIMIT 1", (deal["owner_id"],))
    assert "no reminder" in error(env, "complete_crm_reminder", reminder_id=someone_elses["id"])


def test_tool_results_are_small_json() -> None:
    env = fresh_env(rep_with_deals()["username"])
    assert_small_json(env, [("list_deal_stages", {}), ("list_sales_reps", {}), ("search_crm_companies", {}),
                            ("search_crm_contacts", {}), ("list_deals", {"status": "all"}),
                            ("get_crm_company", {"company_id": 1}), ("get_crm_contact", {"contact_id": 1}),
                            ("get_deal", {"deal_id": 1}), ("list_my_crm_reminders", {"include_done": True})],
                      limit=12000)


# ---------------------------------------------------------------- context: who "I" am, what "today" is


def test_logged_in_user_decides_what_my_deals_and_reminders_are() -> None:
    seen = []
    for skip in (0, 1):
        rep = rep_with_deals(skip)
        env = fresh_env(rep["username"])
        mine = call(env, "list_deals", owner="me")
        expected = seed_all("SELECT id FROM deals WHERE owner_id=? AND status='open' ORDER BY close_date, id", (rep["id"],))
        assert [d["deal_id"] for d in mine["deals"]] == [r["id"] for r in expected]
        reminders = call(env, "list_my_crm_reminders", include_done=True)["reminders"]
        assert all(r["assignee"] == rep["name"] for r in reminders)
        seen.append({d["deal_id"] for d in mine["deals"]})
    assert seen[0].isdisjoint(seen[1])
    assert "LOGGED_IN_USER" in error(fresh_env(None), "list_deals", owner="me")
    assert "LOGGED_IN_USER" in error(fresh_env(None), "list_my_crm_reminders")


def test_current_date_decides_what_tomorrow_and_this_month_mean() -> None:
    rep = rep_with_deals()
    dues = []
    for today in ("2026-05-04", "2026-07-31"):
        env = fresh_env(rep["username"], today=today)
        made = call(env, "create_crm_reminder", title="Call back", due_date="tomorrow")
        dues.append(made["due_date"])
        window = call(env, "list_deals", owner="me", close_month="this month")
        assert window["close_dates_from"] == today[:8] + "01"
        assert all(window["close_dates_from"] <= d["close_date"] <= window["close_dates_to"] for d in window["deals"])
    assert dues == ["2026-05-05", "2026-08-01"]
    friday = call(fresh_env(rep["username"], today="2026-05-04"), "create_crm_reminder", title="Weekly review",
                  due_date="next Friday")
    assert dt.date.fromisoformat(friday["due_date"]).weekday() == 4 and friday["due_date"] == "2026-05-08"


# ---------------------------------------------------------------- tasks


def test_tasks_log_in_members_of_the_sales_team() -> None:
    team = {r["username"] for r in seed_all("SELECT username FROM users WHERE role != 'staff' ORDER BY id")}
    for task in tasks_30():
        assert task.env_variables["LOGGED_IN_USER"] in team, task.id


def test_wrong_extra_and_missing_writes_score_by_hand() -> None:
    task = first_task("call_closing_soonest")
    # checks: row_exists 3, summary field_equals 1, diff_only 2, answer_contains(deal name) 1 -> total 7
    assert [c.weight for c in task.checks] == [3.0, 1.0, 2.0, 1.0]
    gold = [(c.name, c.arguments) for c in task.reference_solution]
    log = gold[-1][1]
    other = seed_one("SELECT id FROM deals WHERE status = 'open' AND id != ? ORDER BY close_date DESC, id LIMIT 1",
                     (log["deal_id"],))
    wrong = ("log_crm_activity", {**log, "deal_id": other["id"]})

    score, failed = _run(task, gold, task.expected_answer)
    assert score == 1.0 and failed == set()
    # wrong write: the call logged on another deal -> row, summary and diff fail; only the answer passes
    score, failed = _run(task, [*gold[:-1], wrong], task.expected_answer)
    assert score == pytest.approx(1 / 7) and failed == {"row_exists", "field_equals", "diff_only"}
    # extra write: the right call plus one on another deal -> only diff_only fails
    score, failed = _run(task, [*gold, wrong], task.expected_answer)
    assert score == pytest.approx(5 / 7) and failed == {"diff_only"}
    # missing write: looked, never logged, answer without the deal -> everything fails
    score, failed = _run(task, gold[:-1], "I looked at the deals.")
    assert score == 0.0 and failed == {"row_exists", "field_equals", "diff_only", "answer_contains"}


def test_new_lead_missing_the_reminder_gets_half_credit() -> None:
    task = first_task("new_lead_with_deal")
    # contact 2, deal 2, reminder 2, diff_only 2 -> total 8; the reminder row and the diff fail
    assert sum(c.weight for c in task.checks) == 8.0
    without = [(c.name, c.arguments) for c in task.reference_solution if c.name != "create_crm_reminder"]
    score, failed = _run(task, without, task.expected_answer)
    assert score == pytest.approx(4 / 8) and failed == {"row_exists", "diff_only"}


def test_impossible_task_fails_when_the_agent_writes_anyway() -> None:
    task = first_task("skip_stage_impossible")
    score, _ = _run(task, [(c.name, c.arguments) for c in task.reference_solution], task.expected_answer)
    assert score == 1.0
    env = make_env("crm")
    env.reset(task.env_variables)
    env.call_tool("move_deal_stage", {"deal_id": task.metadata["deal_id"], "stage": task.metadata["target"]})
    verdict = verify_task(task, env, "Done, it is moved.")
    # diff_only 2 passes (the tool refused the skip), tool_not_called 1 and answer 1 fail -> 2/4
    assert verdict.partial_score == pytest.approx(2 / 4)
    # walking the deal one legal stage forward instead is a change the user did not ask for -> 0
    deal = seed_one("SELECT stage_id FROM deals WHERE id=?", (task.metadata["deal_id"],))
    following = PIPELINE[deal["stage_id"]][0]
    score, failed = _run(task, [("move_deal_stage", {"deal_id": task.metadata["deal_id"], "stage": following})],
                         "Moved it one stage.")
    assert score == 0.0 and failed == {"diff_only", "tool_not_called", "answer_contains"}


def test_impossible_tasks_really_are_impossible() -> None:
    """Trying the forbidden write anyway is refused by the tool, so 'I cannot' is the only right reply."""
    env = make_env("crm")
    for task in tasks_30():
        if task.metadata["shape"] != "impossible":
            continue
        env.reset(task.env_variables)
        if task.family == "duplicate_email_impossible":
            contact = seed_one("SELECT * FROM contacts WHERE id=?", (task.metadata["contact_id"],))
            refused = env.call_tool("create_crm_contact", {"first_name": "Some", "last_name": "One",
                                                          "email": contact["email"], "company_id": contact["company_id"]})
            assert refused.is_error and "unique" in refused.content, task.id
        elif task.family == "reopen_closed_deal":
            for stage, _, _ in PIPELINE:
                reason = {"lost_reason": "price"} if stage == "Closed Lost" else {}
                refused = env.call_tool("move_deal_stage", {"deal_id": task.metadata["deal_id"], "stage": stage,
                                                            **reason})
                assert refused.is_error and "closed" in refused.content, (task.id, stage)
        else:
            refused = env.call_tool("move_deal_stage", {"deal_id": task.metadata["deal_id"],
                                                        "stage": task.metadata["target"]})
            assert refused.is_error and "cannot be skipped" in refused.content, task.id
        assert env.diff() == [], task.id
