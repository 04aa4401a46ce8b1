"""Seed data of phone_support: a carrier's plans, 100 customer accounts, their lines, bills and phones.

Everything comes from the seeded `rng` (the shared population gives the people), so the database
and every task built on it are identical on every machine. The faults the dual-control tasks are
about live in the seed: each fault kind is planted on the primary phone (or line) of a few
accounts, one fault per account, so "this customer's phone has no data because mobile data is off"
is a real state of the world that only the right fix changes.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from dataclasses import dataclass

from faker import Faker

from toolgym.envs import kit
from toolgym.envs.apps.phone_support.rules import (
    APP_PERMISSIONS,
    DEFAULT_APN,
    DEFAULT_MMSC,
    HOME_COUNTRY,
    TOPUP_PRICES,
    best_network_mode,
    digits_of,
    payment_reference,
)
from toolgym.envs.people import population

TEXTS = kit.module_texts(__file__)


@dataclass(frozen=True)
class PlanSeed:
    code: str
    name: str
    price: int
    data_gb: int | None
    roaming: int
    available: int
    description: str


PLANS: tuple[PlanSeed, ...] = (
    PlanSeed("KIDS3", "Kids 3", 15, 3, 0, 1, "3 GB of data, talk and text; no international roaming."),
    PlanSeed("SAVER2", "Saver 2", 20, 2, 0, 0, "Legacy plan: 2 GB, no roaming. Closed to new switches."),
    PlanSeed("BASIC5", "Basic 5", 25, 5, 0, 1, "5 GB of data, unlimited talk and text; no international roaming."),
    PlanSeed("STD15", "Standard 15", 40, 15, 1, 1, "15 GB of data; international roaming available."),
    PlanSeed("TRAVEL10", "Travel 10", 45, 10, 1, 1, "10 GB of data; roaming available; made for frequent travellers."),
    PlanSeed("PLUS30", "Plus 30", 55, 30, 1, 1, "30 GB of data; international roaming available."),
    PlanSeed("UNL", "Unlimited", 70, None, 1, 1, "Unlimited data; international roaming available."),
    PlanSeed("UNLMAX", "Unlimited Max", 85, None, 1, 1, "Unlimited data, priority network; roaming available."),
)

# (model, supports 5G)
DEVICE_MODELS = TEXTS["DEVICE_MODELS"]

ABROAD: tuple[str, ...] = ("Portugal", "Mexico", "Japan", "France", "Italy", "Canada", "United Kingdom")
WRONG_APNS: tuple[str, ...] = ("internet", "fastnet.old", "wap.fastnet", "web.carrier", "mvno.data")
WRONG_MMSCS: tuple[str, ...] = ("http://mms.oldnet.example", "http://mmsc.carrier.example/mms")

# Faults planted on the primary line/phone of some accounts: name -> how many accounts get it.
FAULT_COUNTS = TEXTS["FAULT_COUNTS"]
ACCOUNTS = 100
BILL_PERIODS = ("2025-12", "2026-01", "2026-02", "2026-03")

ESCALATION_SUMMARIES = TEXTS["ESCALATION_SUMMARIES"]


def _month_end(period: str) -> dt.date:
    year, month = map(int, period.split("-"))
    first_next = dt.date(year + (month == 12), month % 12 + 1, 1)
    return first_next - dt.timedelta(days=1)


def _due(period: str, billing_day: int) -> dt.date:
    end = _month_end(period)
    return (end + dt.timedelta(days=1)).replace(day=billing_day)


def seed_phone_support(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    """Fill every table; the order of draws is fixed, so the result is a pure function of the seed."""
    del fake  # the population supplies the people; everything else is drawn from rng
    user_ids = _seed_users(db)
    plan_ids = _seed_plans(db)
    chosen = sorted(rng.sample(user_ids, ACCOUNTS))
    faults = _assign_faults(rng, len(chosen))
    used_numbers = {digits_of(p.phone) for p in population()}
    for index, user_id in enumerate(chosen):
        _seed_account(db, rng, index + 1, user_id, faults.get(index), plan_ids, used_numbers)
    _seed_escalations(db, rng)


def _seed_users(db: sqlite3.Connection) -> list[int]:
    ids = []
    for p in population():
        cur = db.execute(
            "INSERT INTO users (username, name, email, city) VALUES (?, ?, ?, ?)",
            (p.username, p.name, p.email, p.city),
        )
        ids.append(int(cur.lastrowid or 0))
    return ids


def _seed_plans(db: sqlite3.Connection) -> dict[str, int]:
    ids = {}
    for plan in PLANS:
        cur = db.execute(
            "INSERT INTO plans (code, name, monthly_price, data_gb, roaming_allowed, available, description) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (plan.code, plan.name, plan.price, plan.data_gb, plan.roaming, plan.available, plan.description),
        )
        ids[plan.code] = int(cur.lastrowid or 0)
    return ids


def _assign_faults(rng: random.Random, accounts: int) -> dict[int, str]:
    """Account index -> the one fault planted on it; the rest are healthy."""
    slots = [name for name, count in FAULT_COUNTS.items() for _ in range(count)]
    indices = rng.sample(range(accounts), len(slots))
    return dict(zip(indices, slots, strict=True))


def _plan_for(rng: random.Random, fault: str | None, primary: bool) -> str:
    capped = ["KIDS3", "SAVER2", "BASIC5", "STD15", "TRAVEL10", "PLUS30"]
    roaming = ["STD15", "TRAVEL10", "PLUS30", "UNL", "UNLMAX"]
    if primary and fault == "roaming_abroad":
        return rng.choice(roaming)
    if primary and fault == "data_exhausted":
        return rng.choice(["BASIC5", "STD15", "TRAVEL10", "PLUS30"])
    if not primary:
        return rng.choice(["KIDS3", "KIDS3", "BASIC5", "STD15", "UNL"])
    return rng.choice([*capped, "STD15", "PLUS30", "UNL", "UNL", "UNLMAX"])


def _new_number(rng: random.Random, used: set[str]) -> str:
    while True:
        number = f"+1-{rng.randint(200, 989)}-{rng.randint(200, 989)}-{rng.randint(1000, 9999)}"
        if digits_of(number) not in used:
            used.add(digits_of(number))
            return number


def _seed_account(
    db: sqlite3.Connection, rng: random.Random, account_no: int, user_id: int, fault: str | None,
    plan_ids: dict[str, int], used_numbers: set[str],
) -> None:
    person = population()[user_id - 1]
    billing_day = rng.randint(5, 15) if fault == "suspended_unpaid" else rng.randint(5, 25)
    autopay = 0 if fault == "suspended_unpaid" else int(rng.random() < 0.35)
    opened = dt.date(2019, 1, 1) + dt.timedelta(days=rng.randint(0, 6 * 365))
    cur = db.execute(
        "INSERT INTO accounts (user_id, account_number, billing_day, autopay, opened_on) VALUES (?, ?, ?, ?, ?)",
        (user_id, f"ACC-{400000 + account_no * 173}", billing_day, autopay, opened.isoformat()),
    )
    account_id = int(cur.lastrowid or 0)
    card_ids = _seed_payment_methods(db, rng, account_id)
    line_count = 1 if fault == "suspended_unpaid" else rng.choices([1, 2, 3], weights=[60, 28, 12])[0]
    line_ids: list[tuple[int, int]] = []  # (line id, monthly price)
    for position in range(line_count):
        primary = position == 0
        number = person.phone if primary else _new_number(rng, used_numbers)
        code = _plan_for(rng, fault, primary)
        plan = next(p for p in PLANS if p.code == code)
        line_id = _seed_line(db, rng, account_id, number, plan, plan_ids[code], primary, fault if primary else None,
                             opened)
        line_ids.append((line_id, plan.price))
        _seed_device(db, rng, line_id, fault if primary else None)
    _seed_bills(db, rng, account_id, billing_day, autopay, fault, sum(p for _, p in line_ids), card_ids[0])
    if fault == "suspended_unpaid":
        first_unpaid = db.execute(
            "SELECT due_date FROM bills WHERE account_id=? AND status='unpaid' ORDER BY due_date LIMIT 1",
            (account_id,),
        ).fetchone()[0]
        suspended = (dt.date.fromisoformat(first_unpaid) + dt.timedelta(days=10)).isoformat()
        primary_line = line_ids[0][0]
        db.execute(
            "UPDATE lines SET status='suspended', suspension_reason='unpaid_bill', suspended_on=? WHERE id=?",
            (suspended, primary_line),
        )
        db.execute(
            "INSERT INTO line_events (line_id, kind, detail, created_on) VALUES (?, 'suspended', ?, ?)",
            (primary_line, "suspended: unpaid bill", suspended),
        )
    elif fault is None and line_count > 1 and rng.random() < 0.3:
        # a secondary line someone lost and has suspended: a real "resume" or "already suspended" state
        lost_line = line_ids[-1][0]
        day = dt.date(2026, 3, rng.randint(1, 28)).isoformat()
        db.execute(
            "UPDATE lines SET status='suspended', suspension_reason='lost_or_stolen', suspended_on=? WHERE id=?",
            (day, lost_line),
        )
        db.execute(
            "INSERT INTO line_events (line_id, kind, detail, created_on) VALUES (?, 'suspended', ?, ?)",
            (lost_line, "suspended: lost_or_stolen", day),
        )


def _seed_payment_methods(db: sqlite3.Connection, rng: random.Random, account_id: int) -> list[int]:
    """The default card first; some accounts have a second, sometimes expired, method."""
    ids = []
    count = rng.choices([1, 2], weights=[55, 45])[0]
    for index in range(count):
        kind = rng.choice(["visa", "visa", "mastercard", "amex", "bank"])
        expired = index == 1 and rng.random() < 0.3
        expires = f"{rng.randint(2023, 2025)}-{rng.randint(1, 12):02d}" if expired else (
            f"{rng.randint(2027, 2031)}-{rng.randint(1, 12):02d}")
        cur = db.execute(
            "INSERT INTO payment_methods (account_id, kind, last4, expires, is_default) VALUES (?, ?, ?, ?, ?)",
            (account_id, kind, f"{rng.randint(0, 9999):04d}", expires, int(index == 0)),
        )
        ids.append(int(cur.lastrowid or 0))
    return ids


def _seed_line(
    db: sqlite3.Connection, rng: random.Random, account_id: int, number: str, plan: PlanSeed, plan_id: int,
    primary: bool, fault: str | None, opened: dt.date,
) -> int:
    if plan.data_gb is None:
        used = round(rng.uniform(2, 60), 1)
    elif fault == "data_exhausted":
        used = float(plan.data_gb)
    else:
        used = round(rng.uniform(0.05, 0.85) * plan.data_gb, 1)
    roaming = 0
    if plan.roaming and fault != "roaming_abroad":
        roaming = int(rng.random() < 0.25)
    activated = opened + dt.timedelta(days=rng.randint(0, 400) if not primary else 0)
    cur = db.execute(
        "INSERT INTO lines (account_id, phone_number, digits, plan_id, is_primary, status, suspension_reason, "
        "suspended_on, roaming_enabled, data_used_gb, topup_gb, activated_on) "
        "VALUES (?, ?, ?, ?, ?, 'active', NULL, NULL, ?, ?, 0, ?)",
        (account_id, number, digits_of(number), plan_id, int(primary), roaming, used, activated.isoformat()),
    )
    line_id = int(cur.lastrowid or 0)
    db.execute(
        "INSERT INTO line_events (line_id, kind, detail, created_on) VALUES (?, 'activated', ?, ?)",
        (line_id, f"activated on plan {plan.code}", activated.isoformat()),
    )
    return line_id


def _seed_device(db: sqlite3.Connection, rng: random.Random, line_id: int, fault: str | None) -> None:
    model, five_g = rng.choice(DEVICE_MODELS)
    settings = {
        "airplane_mode": 0, "mobile_data": 1, "data_roaming": int(rng.random() < 0.3),
        "network_mode": best_network_mode(five_g), "apn_name": DEFAULT_APN, "apn_mmsc": DEFAULT_MMSC,
        "sim_status": "seated", "signal_bars": rng.randint(2, 4), "location_country": HOME_COUNTRY,
    }
    denied: set[tuple[str, str]] = set()
    if rng.random() < 0.2:
        denied.add(("maps", "location"))
    if rng.random() < 0.1:
        denied.add(("camera", "storage"))
    if fault == "airplane_mode":
        settings["airplane_mode"] = 1
    elif fault == "mobile_data_off":
        settings["mobile_data"] = 0
    elif fault == "wrong_apn":
        settings["apn_name"] = rng.choice(WRONG_APNS)
        settings["apn_mmsc"] = rng.choice(WRONG_MMSCS)
    elif fault in ("sim_loose", "sim_damaged"):
        settings["sim_status"] = "loose" if fault == "sim_loose" else "damaged"
    elif fault == "mms_broken":
        variant = rng.choice(["storage", "sms", "both", "mmsc"])
        if variant == "mmsc":
            settings["apn_mmsc"] = rng.choice(WRONG_MMSCS)
        else:
            denied |= {("messages", p) for p in (("sms", "storage") if variant == "both" else (variant,))}
    elif fault == "roaming_abroad":
        settings["location_country"] = rng.choice(ABROAD)
        settings["data_roaming"] = 0
    elif fault == "slow_network":
        settings["network_mode"] = rng.choice(["2g_only", "3g_only"])
    cur = db.execute(
        "INSERT INTO devices (line_id, model, supports_5g, airplane_mode, mobile_data, data_roaming, network_mode, "
        "apn_name, apn_mmsc, sim_status, signal_bars, location_country) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (line_id, model, five_g, settings["airplane_mode"], settings["mobile_data"], settings["data_roaming"],
         settings["network_mode"], settings["apn_name"], settings["apn_mmsc"], settings["sim_status"],
         settings["signal_bars"], settings["location_country"]),
    )
    device_id = int(cur.lastrowid or 0)
    for app, permissions in APP_PERMISSIONS.items():
        for permission in permissions:
            db.execute(
                "INSERT INTO app_permissions (device_id, app, permission, granted) VALUES (?, ?, ?, ?)",
                (device_id, app, permission, int((app, permission) not in denied)),
            )


def _seed_bills(
    db: sqlite3.Connection, rng: random.Random, account_id: int, billing_day: int, autopay: int,
    fault: str | None, monthly: int, card_id: int,
) -> None:
    """Four months of bills. Suspended-for-non-payment accounts owe one or two; others may owe March."""
    unpaid_periods: set[str] = set()
    periods = list(BILL_PERIODS)
    if fault == "suspended_unpaid":
        periods = periods[:3]  # service stopped before March ended: no March bill
        unpaid_periods = {"2026-02"} if rng.random() < 0.5 else {"2026-01", "2026-02"}
    elif not autopay and rng.random() < 0.6:
        unpaid_periods = {"2026-03"}
    for period in periods:
        issued = _month_end(period)
        due = _due(period, billing_day)
        amount = monthly + round(monthly * 0.08) + rng.choice([0, 0, 0, 5, 10])
        paid_on = None if period in unpaid_periods else (
            issued if autopay or period == "2026-03" else due - dt.timedelta(days=rng.randint(0, 6)))
        cur = db.execute(
            "INSERT INTO bills (account_id, period, amount, issued_on, due_date, status, paid_on) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (account_id, period, amount, issued.isoformat(), due.isoformat(),
             "unpaid" if paid_on is None else "paid", paid_on.isoformat() if paid_on else None),
        )
        bill_id = int(cur.lastrowid or 0)
        if paid_on is not None:
            pay = db.execute(
                "INSERT INTO payments (reference, account_id, bill_id, payment_method_id, amount, paid_on) "
                "VALUES ('pending', ?, ?, ?, ?, ?)",
                (account_id, bill_id, card_id, amount, paid_on.isoformat()),
            )
            pay_id = int(pay.lastrowid or 0)
            db.execute("UPDATE payments SET reference=? WHERE id=?", (payment_reference(pay_id), pay_id))


def _seed_escalations(db: sqlite3.Connection, rng: random.Random) -> None:
    """A few earlier tickets and top-ups, so those tables hold history before any task writes."""
    lines = db.execute(
        "SELECT l.id, l.account_id, p.data_gb, (SELECT id FROM payment_methods m WHERE m.account_id = l.account_id "
        "AND m.is_default = 1) AS card FROM lines l JOIN plans p ON p.id = l.plan_id ORDER BY l.id"
    ).fetchall()
    for index, row in enumerate(rng.sample(lines, 8)):
        day = dt.date(2026, 3, rng.randint(1, 28)).isoformat()
        db.execute(
            "INSERT INTO escalations (ticket, account_id, line_id, summary, created_on) VALUES (?, ?, ?, ?, ?)",
            (f"ESC-{index + 1:05d}", row[1], row[0], ESCALATION_SUMMARIES[index % len(ESCALATION_SUMMARIES)], day),
        )
    capped = [r for r in lines if r[2] is not None]
    for row in rng.sample(capped, 12):
        gb = rng.choice(sorted(TOPUP_PRICES))
        day = dt.date(2026, 3, rng.randint(1, 28)).isoformat()
        db.execute(
            "INSERT INTO data_topups (line_id, gb, price, payment_method_id, purchased_on) VALUES (?, ?, ?, ?, ?)",
            (row[0], gb, TOPUP_PRICES[gb], row[3], day),
        )
        db.execute(
            "INSERT INTO line_events (line_id, kind, detail, created_on) VALUES (?, 'topup', ?, ?)",
            (row[0], f"{gb} GB top-up (previous cycle)", day),
        )
