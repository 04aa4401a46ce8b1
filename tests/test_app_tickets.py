"""tickets app: seed rules, tool rules and errors, context, hand-computed partial scores, impossible tasks."""

from __future__ import annotations

import datetime as dt

import pytest

from app_helpers import AppKit, assert_small_json, call, error
from toolgym.envs import Environment, make_env
from toolgym.envs.apps.tickets import APP
from toolgym.envs.apps.tickets.rules import order_code, seat_at, transfer_code
from toolgym.schema import Task
from toolgym.verify import verify_task

# The contract every app keeps (schema, tools, policy, replay, determinism, phrasing...) is in test_app_contract.py.
KIT = AppKit("tickets")
tasks_30, first_task, seed_one, seed_all, fresh_env, _run = (
    KIT.tasks_30, KIT.first_task, KIT.seed_one, KIT.seed_all, KIT.fresh_env, KIT.run)


def buyer() -> dict:
    """A user with a default card and at least two orders."""
    return seed_one(
        "SELECT u.id, u.username FROM users u JOIN payment_methods p ON p.user_id = u.id AND p.is_default = 1 "
        "WHERE (SELECT COUNT(*) FROM orders o WHERE o.user_id = u.id) >= 2 ORDER BY u.id LIMIT 1")


def roomy_section(after: str = "2026-05-04", seats: int = 6) -> dict:
    """A section of an on-sale event after `after` with at least `seats` seats and a limit of at least 4."""
    return seed_one(
        "SELECT s.*, e.date, e.max_per_order FROM sections s JOIN events e ON e.id = s.event_id "
        "WHERE e.status = 'on_sale' AND e.date > ? AND s.seats_available >= ? AND e.max_per_order >= 4 "
        "ORDER BY e.date, s.id LIMIT 1", (after, seats))


def db_one(env: Environment, sql: str, params: tuple = ()) -> dict:
    row = env.db().execute(sql, params).fetchone()
    assert row is not None, sql
    return dict(row)


# ---------------------------------------------------------------- structure and seed


def test_seed_codes_seats_and_states_are_consistent() -> None:
    assert all(r["code"] == order_code(r["id"]) for r in seed_all("SELECT id, code FROM orders ORDER BY id"))
    assert all(r["code"] == transfer_code(r["id"]) for r in seed_all("SELECT id, code FROM transfers ORDER BY id"))
    span = seed_one("SELECT MIN(date) AS lo, MAX(date) AS hi FROM events")
    assert span["lo"] >= "2026-03-01" and span["hi"] <= "2026-09-30"
    # seeded tickets sit among a section's sold seats, so the next purchase's seats are always free
    for ticket in seed_all("SELECT t.row_number, t.seat_number, s.seats_per_row, s.capacity, s.seats_available "
                           "FROM tickets t JOIN sections s ON s.id = t.section_id ORDER BY t.id"):
        index = (ticket["row_number"] - 1) * ticket["seats_per_row"] + ticket["seat_number"] - 1
        assert index < ticket["capacity"] - ticket["seats_available"]
    # the states impossible and follow-up tasks need exist in the data
    states = {r["status"] for r in seed_all("SELECT DISTINCT status FROM events ORDER BY status")}
    assert states == {"on_sale", "sold_out", "cancelled"}
    assert seed_one("SELECT COUNT(*) AS n FROM transfers WHERE status='pending'")["n"] >= 20
    pending = seed_one("SELECT COUNT(*) AS n FROM tickets WHERE status='transfer_pending'")["n"]
    assert pending == seed_one("SELECT SUM(ticket_count) AS n FROM transfers WHERE status='pending'")["n"]


# ---------------------------------------------------------------- tools: rules and errors


def test_bad_arguments_get_errors_naming_the_argument() -> None:
    env = fresh_env(buyer()["username"])
    assert "'city'" in error(env, "search_events", city="Atlantis")
    assert "'category'" in error(env, "search_events", category="opera")
    assert "'date'" in error(env, "search_events", date="someday soon")
    assert "'end_date'" in error(env, "search_events", date="2026-06-10", end_date="2026-06-01")
    assert "'event_id'" in error(env, "get_seat_map", event_id="abc")
    assert "'event_id'" in error(env, "buy_tickets", event_id=999_999, section="Floor", quantity=1)
    section = roomy_section()
    assert "'section'" in error(env, "buy_tickets", event_id=section["event_id"], section="Moon Deck", quantity=1)
    assert "'quantity'" in error(env, "buy_tickets", event_id=section["event_id"], section=section["name"], quantity=0)
    assert "'order_code'" in error(env, "request_ticket_refund", order_code="TK-NOPE00")
    assert "'transfer_code'" in error(env, "accept_ticket_transfer", transfer_code="TR-NOPE00")
    assert env.diff() == []


def test_buying_takes_the_next_seats_and_the_limits_hold() -> None:
    user = buyer()
    env = fresh_env(user["username"], today="2026-04-01")
    section = roomy_section(after="2026-04-01")
    bought = call(env, "buy_tickets", event_id=section["event_id"], section=section["name"].upper(), quantity=3)
    assert bought["order_code"] == order_code(seed_one("SELECT MAX(id) AS n FROM orders")["n"] + 1)
    assert bought["total_price"] == 3 * section["price"]
    sold = section["capacity"] - section["seats_available"]
    expected = [seat_at(sold + i, section["seats_per_row"]) for i in range(3)]
    assert bought["seats"] == [f"row {r} seat {s}" for r, s in expected]
    left = db_one(env, "SELECT seats_available FROM sections WHERE id=?", (section["id"],))["seats_available"]
    assert left == section["seats_available"] - 3
    over = section["max_per_order"] + 1
    assert "at most" in error(env, "buy_tickets", event_id=section["event_id"], section=section["name"], quantity=over)
    short = seed_one("SELECT s.name, s.event_id, s.seats_available FROM sections s JOIN events e ON e.id = s.event_id "
                     "WHERE e.status='on_sale' AND e.date > '2026-04-01' AND s.seats_available BETWEEN 1 AND 2 "
                     "AND e.max_per_order >= 3 ORDER BY s.id LIMIT 1")
    assert "only" in error(env, "buy_tickets", event_id=short["event_id"], section=short["name"], quantity=3)
    for status, words in (("cancelled", "is cancelled"), ("sold_out", "sold out")):
        event = seed_one("SELECT e.id, s.name FROM events e JOIN sections s ON s.event_id = e.id WHERE e.status=? "
                         "AND e.date > '2026-04-01' ORDER BY e.id LIMIT 1", (status,))
        assert words in error(env, "buy_tickets", event_id=event["id"], section=event["name"], quantity=1)
    past = seed_one("SELECT e.id, s.name FROM events e JOIN sections s ON s.event_id = e.id WHERE e.status='on_sale' "
                    "AND e.date < '2026-04-01' ORDER BY e.id LIMIT 1")
    assert "in the past" in error(env, "buy_tickets", event_id=past["id"], section=past["name"], quantity=1)
    assert {c.table for c in env.diff()} == {"orders", "tickets", "sections"}


def test_buying_the_last_seats_marks_the_event_sold_out() -> None:
    section = roomy_section(after="2026-04-01")
    env = fresh_env(buyer()["username"], today="2026-04-01")
    # set the episode up so only two seats of the whole event are left, both in this section
    env.db().execute("UPDATE sections SET seats_available = CASE id WHEN ? THEN 2 ELSE 0 END WHERE event_id=?",
                     (section["id"], section["event_id"]))
    assert call(env, "get_event_details", event_id=section["event_id"])["can_buy"] is True
    call(env, "buy_tickets", event_id=section["event_id"], section=section["name"], quantity=2)
    assert db_one(env, "SELECT status FROM events WHERE id=?", (section["event_id"],))["status"] == "sold_out"
    assert call(env, "get_event_details", event_id=section["event_id"])["can_buy"] is False
    assert "sold out" in error(env, "buy_tickets", event_id=section["event_id"], section=section["name"], quantity=1)


def test_transfer_accept_and_cancel_move_the_tickets() -> None:
    user = buyer()
    friend = seed_one("SELECT id, username FROM users WHERE id != ? ORDER BY id LIMIT 1", (user["id"],))
    env = fresh_env(user["username"], today="2026-04-01")
    section = roomy_section(after="2026-04-01")
    order = call(env, "buy_tickets", event_id=section["event_id"], section=section["name"], quantity=3)
    sent = call(env, "transfer_tickets", order_code=order["order_code"].lower().replace("-", ""),
                to_username=friend["username"], quantity=2)
    assert sent["status"] == "pending" and sent["seats"] == order["seats"][:2]
    assert "1 ticket(s) you can still send" in error(env, "transfer_tickets", order_code=order["order_code"],
                                                     to_username=friend["username"], quantity=2)
    assert "that is you" in error(env, "transfer_tickets", order_code=order["order_code"],
                                  to_username=user["username"], quantity=1)
    # the recipient accepts in their own session of the same episode
    env.context.variables["LOGGED_IN_USER"] = friend["username"]
    assert "no transfer" in error(env, "cancel_ticket_transfer", transfer_code=sent["transfer_code"])
    call(env, "accept_ticket_transfer", transfer_code=sent["transfer_code"])
    holders = env.db().execute("SELECT holder_id FROM tickets WHERE transfer_id=(SELECT id FROM transfers WHERE code=?) "
                               "ORDER BY id", (sent["transfer_code"],)).fetchall()
    assert [h[0] for h in holders] == [friend["id"], friend["id"]]
    assert "already accepted" in error(env, "accept_ticket_transfer", transfer_code=sent["transfer_code"])
    # a second transfer is taken back by the sender: the ticket is theirs again
    env.context.variables["LOGGED_IN_USER"] = user["username"]
    again = call(env, "transfer_tickets", order_code=order["order_code"], to_username=friend["username"], quantity=1)
    call(env, "cancel_ticket_transfer", transfer_code=again["transfer_code"])
    mine = call(env, "get_ticket_order", order_code=order["order_code"])
    assert [t["holder"] for t in mine["tickets"]] == [friend["username"], friend["username"], user["username"]]
    assert mine["tickets"][2]["status"] == "valid" and mine["tickets_you_hold"] == 1


def test_only_cancelled_events_are_refunded_and_the_whole_order_goes() -> None:
    live = seed_one("SELECT o.code, u.username FROM orders o JOIN users u ON u.id = o.user_id JOIN events e "
                    "ON e.id = o.event_id WHERE e.status='on_sale' AND o.status='confirmed' ORDER BY o.id LIMIT 1")
    env = fresh_env(live["username"])
    assert "only orders for cancelled events" in error(env, "request_ticket_refund", order_code=live["code"])
    assert env.diff() == []
    dead = seed_one("SELECT o.id, o.code, o.total_price, o.quantity, u.username FROM orders o JOIN users u "
                    "ON u.id = o.user_id JOIN events e ON e.id = o.event_id WHERE e.status='cancelled' "
                    "AND o.status='confirmed' AND NOT EXISTS (SELECT 1 FROM transfers x WHERE x.order_id = o.id "
                    "AND x.status='pending') ORDER BY o.id LIMIT 1")
    env = fresh_env(dead["username"])
    refund = call(env, "request_ticket_refund", order_code=dead["code"])
    assert refund["refund_amount"] == dead["total_price"]
    statuses = [r[0] for r in env.db().execute("SELECT status FROM tickets WHERE order_id=?", (dead["id"],))]
    assert statuses == ["refunded"] * dead["quantity"]
    assert "already refunded" in error(env, "request_ticket_refund", order_code=dead["code"])


def test_tool_results_are_small_json() -> None:
    env = fresh_env(buyer()["username"])
    assert_small_json(env, [("list_venues", {}), ("search_events", {"city": "New York"}), ("search_events", {}),
                            ("list_my_ticket_orders", {}), ("list_my_ticket_transfers", {}),
                            ("list_my_ticket_payment_methods", {})], limit=8000)


# ---------------------------------------------------------------- context: who "I" am, what "today" is


def test_logged_in_user_decides_what_my_orders_are() -> None:
    users = seed_all("SELECT u.username, GROUP_CONCAT(o.code) AS codes FROM users u JOIN orders o ON o.user_id = u.id "
                     "GROUP BY u.id ORDER BY u.id LIMIT 2")
    seen = []
    for user in users:
        mine = call(fresh_env(user["username"]), "list_my_ticket_orders")
        codes = {o["order_code"] for o in mine["orders"]}
        assert codes == set(user["codes"].split(","))
        seen.append(codes)
    assert seen[0].isdisjoint(seen[1])
    assert "LOGGED_IN_USER" in error(fresh_env(None), "list_my_ticket_orders")


def test_current_date_decides_what_tomorrow_means() -> None:
    event = seed_one("SELECT e.date, v.city FROM events e JOIN venues v ON v.id = e.venue_id "
                     "WHERE e.date BETWEEN '2026-04-10' AND '2026-08-30' ORDER BY e.date, e.id LIMIT 1")
    eve = (dt.date.fromisoformat(event["date"]) - dt.timedelta(days=1)).isoformat()
    on_eve = call(fresh_env("steven.jordan", today=eve), "search_events", city=event["city"], date="tomorrow")
    assert on_eve["from"] == event["date"] and on_eve["events"]
    on_the_day = call(fresh_env("steven.jordan", today=event["date"]), "search_events", city=event["city"],
                      date="tomorrow")
    assert on_the_day["from"] != event["date"]
    assert all(e["date"] == on_the_day["from"] for e in on_the_day["events"])


# ---------------------------------------------------------------- tasks


def _task_with_other_section() -> tuple[Task, dict]:
    """A buy_section_tickets task (default card) and another section of its event with enough seats."""
    for task in tasks_30():
        if task.family != "buy_section_tickets" or "card" in str(task.metadata["phrasing"]):
            continue
        buy = task.reference_solution[-1].arguments
        other = APP.world().one(
            "SELECT name FROM sections WHERE event_id=? AND id != ? AND seats_available >= ? ORDER BY id LIMIT 1",
            (buy["event_id"], task.metadata["section_id"], buy["quantity"]))
        if other is not None:
            return task, other
    raise AssertionError("no buy_section_tickets task with a second roomy section")


def test_wrong_extra_and_missing_writes_score_by_hand() -> None:
    task, other = _task_with_other_section()
    # checks: order row 3, seat counter 1, tickets issued 1, diff_only 2, answer (order code) 1 -> total 8
    assert [c.weight for c in task.checks] == [3.0, 1.0, 1.0, 2.0, 1.0]
    gold = [(c.name, c.arguments) for c in task.reference_solution]
    wrong = ("buy_tickets", {**gold[-1][1], "section": other["name"]})

    score, failed = _run(task, gold, task.expected_answer)
    assert score == 1.0 and failed == set()
    # wrong write: another section bought -> order, counter, tickets and diff fail; the answer's code still matches
    score, failed = _run(task, [*gold[:-1], wrong], task.expected_answer)
    assert score == pytest.approx(1 / 8) and failed == {"row_exists", "field_equals", "diff_only"}
    # extra write: the right order plus another one -> only diff_only fails
    score, failed = _run(task, [*gold, wrong], task.expected_answer)
    assert score == pytest.approx(6 / 8) and failed == {"diff_only"}
    # missing write: looked, never bought, answer without a code -> everything fails
    score, failed = _run(task, gold[:-1], "Those seats look good.")
    assert score == 0.0 and failed == {"row_exists", "field_equals", "diff_only", "answer_contains"}


def test_buy_without_the_transfer_gets_half_credit() -> None:
    task = first_task("buy_and_transfer")
    # order 2, counter 1, tickets 1, transfer row 2, transferred tickets 1, diff_only 2, both codes 1 -> 10
    assert sum(c.weight for c in task.checks) == 10.0
    bought_only = [(c.name, c.arguments) for c in task.reference_solution if c.name != "transfer_tickets"]
    score, failed = _run(task, bought_only, task.expected_answer)
    assert score == pytest.approx(5 / 10) and failed == {"row_exists", "diff_only"}


def test_split_checks_do_not_depend_on_the_order_of_the_transfers() -> None:
    task = first_task("split_between_friends")
    gold = [(c.name, c.arguments) for c in task.reference_solution]
    swapped = [*gold[:-2], gold[-1], gold[-2]]
    score, failed = _run(task, swapped, task.expected_answer)
    assert score == 1.0 and failed == set()


def test_impossible_task_fails_when_the_agent_writes_anyway() -> None:
    task = first_task("refund_not_cancelled_impossible")
    score, _ = _run(task, [(c.name, c.arguments) for c in task.reference_solution], task.expected_answer)
    assert score == 1.0
    env = make_env("tickets")
    env.reset(task.env_variables)
    env.call_tool("request_ticket_refund", {"order_code": task.metadata["order_code"]})  # refused by the tool
    verdict = verify_task(task, env, "Done, it is refunded.")
    # diff_only 2 passes (the tool refused), tool_not_called 1 and answer 1 fail -> 2/4
    assert verdict.partial_score == pytest.approx(2 / 4)


def test_impossible_tasks_really_are_impossible() -> None:
    """Trying the forbidden write anyway is refused by the tool, so 'I cannot' is the only right reply."""
    env = make_env("tickets")
    for task in tasks_30():
        if task.metadata["shape"] != "impossible":
            continue
        env.reset(task.env_variables)
        if task.family == "refund_not_cancelled_impossible":
            refused = env.call_tool("request_ticket_refund", {"order_code": task.metadata["order_code"]})
            assert refused.is_error and "not cancelled" in refused.content, task.id
        else:
            event_id = task.metadata["event_id"]
            quantity = task.metadata["quantity"]
            sections = [r["name"] for r in APP.world().query(
                "SELECT name FROM sections WHERE event_id=? ORDER BY id", (event_id,))]
            if task.metadata.get("section"):  # a named section: only that one was asked for
                sections = [task.metadata["section"]]
            for name in sections:
                refused = env.call_tool("buy_tickets", {"event_id": event_id, "section": name, "quantity": quantity})
                assert refused.is_error, (task.id, name)
        assert env.diff() == [], task.id
