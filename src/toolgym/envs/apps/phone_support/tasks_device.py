"""Dual-control task families of phone_support: the fix happens on the customer's phone.

Each task is a conversation (`user_scenario`): the customer opens with a symptom, knows a few facts
(`known_info`, revealed when asked), and holds the device tools. The agent holds only the account
tools, so the task is solvable only by instructing the customer. The reference solution mixes agent
calls with user-side calls (replayed with caller "user"); `metadata["user_goal"]` is what the
customer checks on their phone before saying the problem is solved (the scripted simulator's stop
condition), and the checks verify the final device AND account state.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.phone_support.rules import (
    DEFAULT_MMSC,
    MMS_PERMISSIONS,
    NETWORK_TYPE,
    TOPUP_PRICES,
    best_network_mode,
    device_status,
)
from toolgym.envs.apps.phone_support.task_common import country_name, first_name, line_event
from toolgym.envs.apps.phone_support.tasks_account import overdue_bills, pay_and_resume_checks
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, updated
from toolgym.schema import Check, ExpectedChange, ToolCall, ToolCalled, UserScenario

TEXTS = kit.module_texts(__file__)

SINCE = ("since this morning", "since yesterday", "for a few hours now", "since I woke up", "all day today",
         "since last night")

CONNECTED = {"service": "ok", "internet": "working"}
ONLINE = {"internet": "working"}

STOP_RULES = (
    "Only do what the agent asks if your phone tools allow it, then say what you see. Never invent facts "
    "you were not given. When your phone shows the problem is solved, thank the agent and end with ###STOP###."
)


def faulty_customers(world: World, where: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Primary lines (with the phone on them) matching `where` over aliases l, p, a, u, d."""
    return world.query(
        "SELECT l.*, p.code AS plan_code, p.name AS plan_name, p.data_gb, p.roaming_allowed, u.username, u.name, "
        "u.city, d.id AS device_id, d.model, d.supports_5g, d.network_mode, d.apn_mmsc, d.location_country, "
        "d.sim_status FROM lines l JOIN plans p ON p.id = l.plan_id JOIN accounts a ON a.id = l.account_id "
        f"JOIN users u ON u.id = a.user_id JOIN devices d ON d.line_id = l.id WHERE l.is_primary = 1 AND {where} "
        "ORDER BY l.id",
        params,
    )


def status_of(world: World, device_id: int) -> dict[str, Any]:
    return device_status(world.db, device_id)


def known_facts(row: dict[str, Any], **extra: str) -> dict[str, str]:
    """What the customer can tell the agent when asked; a key lists its aliases after '|'."""
    abroad = row["location_country"] != "United States"
    facts = {
        "phone number|number|line|which phone": row["phone_number"],
        "full name|your name": row["name"],
        "phone model|model|what phone|which device|kind of phone": row["model"],
        "location|where are you|country|travel|abroad": (
            f"travelling in {country_name(row['location_country'])}" if abroad else f"at home in {row['city']}"
        ),
    }
    facts.update(extra)
    return facts


def dual_draft(
    rng: random.Random, row: dict[str, Any], *, openings: tuple[str, ...], symptom: str, wish: str,
    reference: list[ToolCall], checks: list[Check], goal: dict[str, Any] | None, fault: str, answer: str,
    difficulty: int, extra_facts: dict[str, str] | None = None, extra_slots: dict[str, str] | None = None,
) -> TaskDraft:
    """A dual-control draft: the opening message is the prompt; the scenario says who the user is."""
    phrasing = rng.randrange(len(openings))
    since = rng.choice(SINCE)
    opening = openings[phrasing].format(first=first_name(row), model=row["model"], since=since,
                                        **(extra_slots or {}))
    instructions = (f"You are {row['name']}, a customer of FastNet Mobile. {symptom} You want: {wish} "
                    f"You are not technical and do not know the cause. {STOP_RULES}")
    scenario = UserScenario(
        persona=f"{row['name']}, {row['model']} owner, polite and brief",
        instructions=instructions,
        known_info=known_facts(row, **(extra_facts or {})),
        opening_message=opening,
    )
    return TaskDraft(
        prompt=opening,
        checks=checks,
        reference_solution=reference,
        env_variables=kit.env_for(row, kit.random_day(rng)),
        expected_answer=answer,
        difficulty=difficulty,
        user_scenario=scenario,
        metadata={"phrasing": phrasing, "dual_control": True, "fault": fault, "user_goal": _goal(goal),
                  "phone_number": row["phone_number"], "device_id": row["device_id"]},
    )


def _goal(expect: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if expect is None else {"tool": "check_device_status", "arguments": {}, "expect": expect}


def _device_fix(row: dict[str, Any], fields: dict[str, Any], label: str) -> list[Check]:
    """The phone's fixed settings, and no change anywhere but those device fields."""
    checks: list[Check] = [
        field_is("devices", {"id": row["device_id"]},
                name, value, f"{label}: {name} = {value}", weight=3.0 / len(fields))
        for name, value in fields.items()
    ]
    checks.append(kit.diff_only([updated("devices", {"id": row["device_id"]}, sorted(fields))]))
    return checks


def _start() -> list[ToolCall]:
    """How a good agent opens: find the account, have the customer look at the phone."""
    return [kit.call("get_my_account"), kit.call("check_device_status")]


def _symptom_family(
    texts_key: str, fault_where: str, check_status: Callable[[dict[str, Any]], bool], *, fix: list[ToolCall],
    fields: dict[str, Any], goal: dict[str, Any], difficulty: int,
) -> Callable[[random.Random, World], TaskDraft | None]:
    """A family whose whole fix is on the phone: the customer must be told what to change. Its wording
    (openings, symptom, check label, answer) is `TEXTS[texts_key]`."""
    texts = TEXTS[texts_key]
    openings, symptom, label, answer = texts["openings"], texts["symptom"], texts["label"], texts["answer"]

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        row = kit.pick(rng, faulty_customers(world, fault_where))
        if row is None or not check_status(status_of(world, row["device_id"])):
            return None
        return dual_draft(
            rng, row, openings=openings, symptom=symptom, wish="your phone working normally again.",
            reference=[*_start(), *fix], checks=_device_fix(row, fields, label), goal=goal,
            fault=label, answer=answer, difficulty=difficulty,
        )

    return generate


no_service_airplane = _symptom_family(
    "NO_SERVICE_AIRPLANE", "d.airplane_mode = 1", lambda s: s["service"].startswith("off"),
    fix=[kit.call("toggle_airplane_mode", enabled=False)], fields={"airplane_mode": 0}, goal=CONNECTED,
    difficulty=1)

no_data_switch = _symptom_family(
    "NO_DATA_SWITCH", "d.mobile_data = 0",
    lambda s: s["service"] == "ok" and s["internet"].startswith("off (mobile data"),
    fix=[kit.call("toggle_mobile_data", enabled=True)], fields={"mobile_data": 1}, goal=ONLINE, difficulty=1)

no_data_apn = _symptom_family(
    "NO_DATA_APN", "d.apn_name != 'fastnet'", lambda s: s["internet"].startswith("not working"),
    fix=[kit.call("view_apn_settings"), kit.call("reset_apn_settings")],
    fields={"apn_name": "fastnet", "apn_mmsc": DEFAULT_MMSC}, goal=ONLINE, difficulty=2)

no_service_sim = _symptom_family(
    "NO_SERVICE_SIM", "d.sim_status = 'loose'", lambda s: s["sim"] == "no SIM card detected",
    fix=[kit.call("reseat_sim_card")], fields={"sim_status": "seated"}, goal=CONNECTED, difficulty=2)


def slow_network(rng: random.Random, world: World) -> TaskDraft | None:
    """Data works but crawls: the phone is locked to 2G or 3G; the fix is its fastest network mode."""
    row = kit.pick(rng, faulty_customers(world, "d.network_mode IN ('2g_only', '3g_only')"))
    if row is None or status_of(world, row["device_id"])["internet"] != "working":
        return None
    best = best_network_mode(row["supports_5g"])
    best_type = NETWORK_TYPE[best]
    return dual_draft(
        rng, row,
        openings=(
            "Hi, {first} here. Mobile data on my {model} is painfully slow {since}.",
            "This is {first}. Pages take forever to load on mobile data {since}; Wi-Fi is fine.",
            "{first} speaking. My {model}'s internet crawls {since}, videos won't play at all.",
            "Hello, my phone's data has been super slow {since}. Can you check? - {first}",
        ),
        symptom="Mobile data works but is extremely slow.",
        wish=f"normal fast mobile data ({best_type}).",
        reference=[*_start(), kit.call("run_speed_test"), kit.call("get_line_details",
                   phone_number=row["phone_number"]), kit.call("set_network_mode", mode=best)],
        checks=_device_fix(row, {"network_mode": best}, "fastest network mode"),
        goal={"internet": "working", "network_type": best_type},
        fault="slow_network",
        answer=f"Your phone was limited to an old network mode; set to {best} it uses {best_type} again.",
        difficulty=2,
    )


MMS_SUSPECTS = (
    "d.apn_name = 'fastnet' AND (d.apn_mmsc != ? OR EXISTS (SELECT 1 FROM app_permissions ap "
    "WHERE ap.device_id = d.id AND ap.app = 'messages' AND ap.granted = 0))"
)


def mms_broken(rng: random.Random, world: World) -> TaskDraft | None:
    """Picture messages fail: missing messages-app permissions and/or a wrong MMSC in the APN."""
    row = kit.pick(rng, faulty_customers(world, MMS_SUSPECTS, (DEFAULT_MMSC,)))
    if row is None:
        return None
    status = status_of(world, row["device_id"])
    if status["internet"] != "working" or status["mms"] == "working":
        return None
    denied = [r["permission"] for r in world.query(
        "SELECT permission FROM app_permissions WHERE device_id = ? AND app = 'messages' AND granted = 0 "
        "ORDER BY permission", (row["device_id"],))]
    if not set(denied) <= set(MMS_PERMISSIONS) or (not denied and row["apn_mmsc"] == DEFAULT_MMSC):
        return None
    fix: list[ToolCall] = [kit.call("view_apn_settings")]
    checks: list[Check] = []
    expected: list[ExpectedChange] = []
    if row["apn_mmsc"] != DEFAULT_MMSC:
        fix.append(kit.call("reset_apn_settings"))
        checks.append(field_is("devices", {"id": row["device_id"]}, "apn_mmsc", DEFAULT_MMSC, "MMSC reset to default", weight=2.0))
        expected.append(updated("devices", {"id": row["device_id"]}, ["apn_mmsc", "apn_name"]))
    if denied:
        fix.append(kit.call("list_app_permissions", app="messages"))
    for permission in denied:
        fix.append(kit.call("grant_app_permission", app="messages", permission=permission))
        checks.append(field_is("app_permissions", {"device_id": row["device_id"], "app": "messages", "permission": permission}, "granted", 1, f"messages app has {permission}", weight=2.0))
        expected.append(updated("app_permissions", {"device_id": row["device_id"], "app": "messages", "permission": permission}, ["granted"]))
    checks.append(kit.diff_only(expected))
    causes = ([f"the messages app was missing the {' and '.join(denied)} permission"] if denied else []) + (
        ["the MMS server (MMSC) in the APN settings was wrong"] if row["apn_mmsc"] != DEFAULT_MMSC else [])
    return dual_draft(
        rng, row,
        openings=(
            "Hi, this is {first}. I can't send picture messages from my {model} {since}. Normal texts go through.",
            "{first} here. MMS keeps failing on my phone {since}; photos in messages just won't send.",
            "Hello, group texts with pictures don't work on my {model} {since}. - {first}",
            "{first} speaking. Every time I send a photo by text it fails, {since}. Regular SMS is fine.",
        ),
        symptom="You cannot send or receive picture messages (MMS); texts and data work.",
        wish="picture messages working again.",
        reference=[*_start(), *fix],
        checks=checks,
        goal={"mms": "working"},
        fault="mms_broken",
        answer="Picture messages work again: " + "; ".join(causes) + " - fixed on your phone.",
        difficulty=3 if len(fix) > 3 else 2,
    )


def roaming_abroad(rng: random.Random, world: World) -> TaskDraft | None:
    """Abroad with no data: roaming must be enabled on the line (agent) AND data roaming on the phone (user)."""
    row = kit.pick(rng, faulty_customers(world, "d.location_country != 'United States' AND l.roaming_enabled = 0 "
                                            "AND d.data_roaming = 0 AND p.roaming_allowed = 1 AND l.status = 'active'"))
    if row is None:
        return None
    phone, place = row["phone_number"], country_name(row["location_country"])
    checks: list[Check] = [
        field_is("lines", {"id": row["id"]}, "roaming_enabled", 1, "roaming enabled on the line", weight=2.0),
        field_is("devices", {"id": row["device_id"]}, "data_roaming", 1, "phone's data roaming on", weight=2.0),
        kit.diff_only([
            updated("lines", {"id": row["id"]}, ["roaming_enabled"]),
            line_event(row["id"]),
            updated("devices", {"id": row["device_id"]}, ["data_roaming"]),
        ]),
    ]
    return dual_draft(
        rng, row,
        openings=(
            "Hi, {first} here. I just landed in {country} and my {model} has no service or data.",
            "This is {first}, I'm in {country} and my phone only allows emergency calls {since}.",
            "{first} speaking from {country}. My phone doesn't work here {since}. Help!",
            "Hello, I'm travelling in {country} and my {model} can't connect {since}. - {first}",
        ),
        symptom=f"You are travelling in {place}; your phone shows emergency calls only and no data.",
        wish="calls and mobile data working while abroad.",
        reference=[*_start(), kit.call("get_line_details", phone_number=phone),
                   kit.call("enable_roaming", phone_number=phone), kit.call("toggle_data_roaming", enabled=True)],
        checks=checks,
        goal=CONNECTED,
        fault="roaming_abroad",
        answer=f"Roaming is now enabled on {phone} and data roaming is on in your phone, so it works in {place}.",
        difficulty=3,
        extra_slots={"country": place},
    )


def suspended_unpaid(rng: random.Random, world: World) -> TaskDraft | None:
    """No service because the line is suspended for non-payment: pay every overdue bill, then resume."""
    row = kit.pick(rng, faulty_customers(world, "l.status = 'suspended' AND l.suspension_reason = 'unpaid_bill'"))
    if row is None:
        return None
    draft = dual_draft(
        rng, row,
        openings=(
            "Hi, {first} here. My {model} only does emergency calls {since}.",
            "This is {first}. My phone says 'emergency calls only' {since} and I don't know why.",
            "{first} speaking: no calls, no data on my {model} {since}, just 'SOS only'.",
            "Hello, my phone lost service {since}; it only lets me call 911. - {first}",
        ),
        symptom="Your phone shows emergency calls only.",
        wish="service back today; you agree to pay what is overdue with your default card.",
        reference=[],
        checks=[],
        goal=CONNECTED,
        fault="suspended_unpaid",
        answer="",
        difficulty=3,
        extra_facts={"payment|pay|card|bill": "Yes, please pay everything overdue with my default card on file."},
    )
    bills = overdue_bills(world, row["account_id"], draft.env_variables["CURRENT_DATE"])
    if not bills:
        return None
    phone = row["phone_number"]
    draft.reference_solution = [*_start(), kit.call("get_line_details", phone_number=phone),
                                kit.call("get_bills", status="unpaid"), *[kit.call("pay_bill", bill_id=b["id"]) for b in bills],
                                kit.call("resume_line", phone_number=phone)]
    draft.checks = pay_and_resume_checks(world, row, bills)
    draft.expected_answer = (f"Your line was suspended for {len(bills)} overdue bill(s); they are paid "
                             f"(${sum(b['amount'] for b in bills)}) and {phone} is active again.")
    return draft


def data_exhausted_topup(rng: random.Random, world: World) -> TaskDraft | None:
    """Data blocked at the cap: the customer wants a top-up of a size they name when asked."""
    row = kit.pick(rng, faulty_customers(world, "p.data_gb IS NOT NULL AND l.data_used_gb >= p.data_gb + l.topup_gb "
                                            "AND l.status = 'active'"))
    if row is None or not status_of(world, row["device_id"])["internet"].startswith("blocked"):
        return None
    gb = rng.choice(sorted(TOPUP_PRICES))
    phone = row["phone_number"]
    topups = world.one("SELECT COUNT(*) AS n FROM data_topups WHERE line_id = ? AND gb = ?", (row["id"], gb))
    checks: list[Check] = [
        has_row("data_topups", {"line_id": row["id"], "gb": gb},
                f"{gb} GB top-up bought", weight=2.0, count=1 + int(topups["n"] if topups else 0)),
        field_is("lines", {"id": row["id"]}, "topup_gb", row["topup_gb"] + gb, "allowance raised", weight=2.0),
        kit.diff_only([
            inserted("data_topups", {"line_id": row["id"], "gb": gb}),
            updated("lines", {"id": row["id"]}, ["topup_gb"]),
            line_event(row["id"]),
        ]),
    ]
    return dual_draft(
        rng, row,
        openings=(
            "Hi, {first} here. My mobile data stopped working {since}, and I got some text from you about it.",
            "This is {first}. Internet on my {model} is blocked {since}; Wi-Fi works fine.",
            "{first} speaking. No mobile data {since}. I think I got a message about my allowance?",
            "Hello, my {model} can't use data {since} even though I have signal. - {first}",
        ),
        symptom="Mobile data is blocked: you used up this month's allowance.",
        wish=f"data working again with a {gb} GB top-up; you do not want to change your plan.",
        reference=[*_start(), kit.call("get_line_details", phone_number=phone),
                   kit.call("add_data_topup", phone_number=phone, gb=gb)],
        checks=checks,
        goal=ONLINE,
        fault="data_exhausted",
        answer=f"You had used your whole allowance; a {gb} GB top-up (${TOPUP_PRICES[gb]}) is on {phone} now.",
        difficulty=2,
        extra_facts={"top-up|top up|more data|extra data|buy data|add data":
                     f"I'd like a {gb} GB top-up, please; I don't want to change my plan."},
    )


def sim_damaged_transfer(rng: random.Random, world: World) -> TaskDraft | None:
    """A damaged SIM: reseating does not help, so the right end is a transfer to a human technician."""
    row = kit.pick(rng, faulty_customers(world, "d.sim_status = 'damaged'"))
    if row is None:
        return None
    draft = dual_draft(
        rng, row,
        openings=(
            "Hi, {first} here. My {model} keeps saying 'SIM card error' {since}.",
            "This is {first}. No service on my phone {since}; it shows a SIM error.",
            "{first} speaking: my phone says the SIM card failed {since}. What do I do?",
            "Hello, my {model} has had a SIM error and no service {since}. - {first}",
        ),
        symptom="Your phone shows 'SIM card error' and has no service.",
        wish="your phone working; if it cannot be fixed on the call, you accept being transferred to a technician.",
        reference=[],
        checks=[],
        goal={"sim": "ok", "service": "ok"},  # never reached: only a transfer ends this conversation well
        fault="sim_damaged",
        answer="Reseating did not help: the SIM card looks damaged. I've transferred you to a technician who can "
               "replace it.",
        difficulty=2,
    )
    today = draft.env_variables["CURRENT_DATE"]
    phone = row["phone_number"]
    draft.reference_solution = [
        *_start(), kit.call("reseat_sim_card"),
        kit.call("transfer_to_human_agent", phone_number=phone,
             summary="SIM card error on the customer's phone; reseating the SIM did not help. Needs a new SIM."),
    ]
    draft.checks = [
        has_row("escalations", {"line_id": row["id"], "created_on": today},
                "transferred to a human agent", weight=3.0, count=1),
        ToolCalled(name="reseat_sim_card", weight=1.0, label="the customer was asked to reseat the SIM first"),
        kit.diff_only([inserted("escalations", {"line_id": row["id"]})]),
    ]
    return draft
