"""Seed data of the crm app: a sales team from the shared population, the companies they sell to,
the people there, a deal pipeline, and the calls, emails, meetings and reminders around it.

Everything comes from the seeded `fake` and `rng`, so the database (and every task built on it) is
identical on every machine. The data is a snapshot taken on SNAPSHOT_DAY (2026-03-31): every activity
and closed deal lies on or before it, open deals close and reminders fall due after it, so any task
date from April to August sees a consistent history.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import sqlite3
from dataclasses import dataclass, field

from faker import Faker

from toolgym.envs import kit
from toolgym.envs.apps.crm.rules import LOST_REASONS, PIPELINE
from toolgym.envs.people import population

TEXTS = kit.module_texts(__file__)

SNAPSHOT_DAY = dt.date(2026, 3, 31)
SALES_REPS = 14
SALES_MANAGERS = 2
COMPANIES = 60

REP_TITLES = ("Account Executive", "Senior Account Executive", "Sales Development Rep")
STAFF_TITLES = ("Marketing Specialist", "Customer Success Manager", "Finance Analyst", "Product Manager",
                "Support Engineer", "Operations Coordinator", "Solutions Engineer", "HR Generalist")
INDUSTRIES = ("Software", "Healthcare", "Manufacturing", "Retail", "Financial Services", "Logistics",
              "Education", "Media", "Energy", "Hospitality", "Real Estate", "Telecommunications")
CITIES = ("Boston", "Chicago", "Denver", "Austin", "Seattle", "Atlanta", "Portland", "San Diego", "Minneapolis",
          "Nashville", "Phoenix", "Pittsburgh", "Raleigh", "Columbus")
EMPLOYEE_BANDS = (12, 28, 45, 90, 160, 340, 620, 1300, 2800, 6100)
JOB_TITLES = TEXTS["JOB_TITLES"]
PRODUCTS = TEXTS["PRODUCTS"]

CALL_NOTES = TEXTS["CALL_NOTES"]
EMAIL_NOTES = ("Sent {first} the {product} proposal", "Emailed {first} a case study for {product}",
               "Followed up with {first} on open {product} questions", "Sent {first} the {product} quote")
MEETING_NOTES = ("Demo of {product} for {first}'s team", "On-site meeting with {first} about {product}",
                 "Quarterly review with {first}", "Kick-off meeting with {first} on {product}")
NOTE_NOTES = ("{first} is the decision maker for {product}", "Budget for {product} is approved for Q2",
              "{first} prefers email over calls", "Legal review of the {product} contract is needed")
REMINDER_TITLES = TEXTS["REMINDER_TITLES"]
CONTACT_REMINDERS = ("Reconnect with {contact} at {company}", "Send {contact} the product newsletter",
                     "Ask {contact} for an intro to procurement")



def _phone(rng: random.Random) -> str:
    return f"+1-{rng.randint(200, 989)}-{rng.randint(200, 989)}-{rng.randint(1000, 9999)}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


@dataclass
class _Deal:
    """A deal drawn but not inserted yet: deals go in ordered by creation day, so ids grow with time."""

    values: dict
    contact_index: int | None
    activities: list[dict] = field(default_factory=list)


def seed_crm(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    with kit.named_rows(db):
        _seed_all(db, fake, rng)


def _seed_all(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    reps, managers = _seed_users(db, rng)
    sellers = reps + managers
    _seed_stages(db)
    companies = _seed_companies(db, fake, rng, reps, managers)
    contacts = _draw_contacts(fake, rng, companies)
    deals = _draw_deals(rng, companies, contacts, sellers)
    _settle_lifecycles(rng, contacts, deals)
    _insert_contacts(db, contacts)
    _insert_deals(db, deals, contacts)
    _seed_activities(db, rng, contacts)
    _seed_reminders(db, rng)


def _seed_users(db: sqlite3.Connection, rng: random.Random) -> tuple[list[int], list[int]]:
    """Everyone in the shared population; a few are the sales team that owns the CRM records."""
    people = population()
    team = rng.sample(range(len(people)), SALES_REPS + SALES_MANAGERS)
    reps = sorted(team[:SALES_REPS])
    managers = sorted(team[SALES_REPS:])
    for index, person in enumerate(people):
        if index in reps:
            role, title = "sales_rep", rng.choice(REP_TITLES)
        elif index in managers:
            role, title = "sales_manager", "Sales Manager"
        else:
            role, title = "staff", rng.choice(STAFF_TITLES)
        db.execute(
            "INSERT INTO users(id, username, name, email, phone, role, title) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (index + 1, person.username, person.name, person.email, person.phone, role, title))
    return [i + 1 for i in reps], [i + 1 for i in managers]


def _seed_stages(db: sqlite3.Connection) -> None:
    for position, (name, probability, outcome) in enumerate(PIPELINE, start=1):
        db.execute("INSERT INTO pipeline_stages(id, name, position, win_probability, outcome) VALUES (?, ?, ?, ?, ?)",
                   (position, name, position, probability, outcome))


def _seed_companies(
    db: sqlite3.Connection, fake: Faker, rng: random.Random, reps: list[int], managers: list[int]
) -> list[dict]:
    companies: list[dict] = []
    names: set[str] = set()
    domains: set[str] = set()
    while len(companies) < COMPANIES:
        name = fake.company()
        domain = _slug(name.replace(" and ", " ")) + ".com"
        if name.lower() in names or domain in domains or len(domain) < 6:
            continue
        names.add(name.lower())
        domains.add(domain)
        owner = rng.choice(managers) if rng.random() < 0.08 else rng.choice(reps)
        band = rng.choice(EMPLOYEE_BANDS)
        company = {
            "id": len(companies) + 1, "name": name, "domain": domain, "industry": rng.choice(INDUSTRIES),
            "employees": max(3, int(band * rng.uniform(0.8, 1.25))), "city": rng.choice(CITIES),
            "owner_id": owner, "created_on": kit.random_day(rng, dt.date(2025, 3, 1), dt.date(2026, 2, 20)).isoformat(),
        }
        companies.append(company)
        db.execute(
            "INSERT INTO companies(id, name, domain, industry, employees, city, owner_id, created_on) "
            "VALUES (:id, :name, :domain, :industry, :employees, :city, :owner_id, :created_on)", company)
    return companies


def _draw_contacts(fake: Faker, rng: random.Random, companies: list[dict]) -> list[dict]:
    """2-5 people per company; full names are unique across the CRM and the sales team."""
    taken = {p.name.lower() for p in population()}
    contacts: list[dict] = []
    for company in companies:
        for _ in range(rng.choices([2, 3, 4, 5], weights=[3, 4, 3, 1])[0]):
            while True:
                first, last = fake.first_name(), fake.last_name()
                if f"{first} {last}".lower() not in taken:
                    break
            taken.add(f"{first} {last}".lower())
            owner = company["owner_id"]
            created = dt.date.fromisoformat(company["created_on"]) + dt.timedelta(days=rng.randint(0, 40))
            contacts.append({
                "company_id": company["id"], "first_name": first, "last_name": last,
                "email": f"{_slug(first)}.{_slug(last)}@{company['domain']}",
                "phone": _phone(rng) if rng.random() < 0.85 else None,
                "job_title": rng.choice(JOB_TITLES),
                "lifecycle_stage": rng.choices(
                    ["subscriber", "lead", "marketing_qualified_lead", "sales_qualified_lead"],
                    weights=[2, 5, 3, 2])[0],
                "owner_id": owner, "created_on": min(created, SNAPSHOT_DAY).isoformat(),
            })
    return contacts


def _draw_deals(rng: random.Random, companies: list[dict], contacts: list[dict], sellers: list[int]) -> list[_Deal]:
    open_positions = [i + 1 for i, (_, _, outcome) in enumerate(PIPELINE) if outcome == "open"]
    won_id = next(i + 1 for i, (_, _, outcome) in enumerate(PIPELINE) if outcome == "won")
    lost_id = next(i + 1 for i, (_, _, outcome) in enumerate(PIPELINE) if outcome == "lost")
    by_company: dict[int, list[int]] = {}
    for index, contact in enumerate(contacts):
        by_company.setdefault(contact["company_id"], []).append(index)
    deals: list[_Deal] = []
    for company in companies:
        count = rng.choices([0, 1, 2, 3, 4], weights=[1, 3, 4, 3, 2])[0]
        size = 1 + EMPLOYEE_BANDS.index(min(EMPLOYEE_BANDS, key=lambda b: abs(b - company["employees"])))
        for product in rng.sample(PRODUCTS, count):
            status = rng.choices(["open", "won", "lost"], weights=[60, 25, 15])[0]
            amount = rng.randint(6, 40) * size * 250
            owner = company["owner_id"] if rng.random() < 0.8 else rng.choice(sellers)
            contact_index = rng.choice(by_company[company["id"]]) if rng.random() < 0.9 else None
            values = {
                "name": f"{company['name']} - {product}", "company_id": company["id"], "amount": amount,
                "status": status, "owner_id": owner, "closed_on": None, "lost_reason": None,
            }
            if status == "open":
                values["stage_id"] = rng.choices(open_positions, weights=[25, 22, 20, 15, 18])[0]
                values["close_date"] = kit.random_day(rng, dt.date(2026, 4, 3), dt.date(2026, 9, 30)).isoformat()
                created = kit.random_day(rng, dt.date(2026, 1, 5), dt.date(2026, 3, 25))
            else:
                closed = kit.random_day(rng, dt.date(2026, 1, 8), SNAPSHOT_DAY)
                created = closed - dt.timedelta(days=rng.randint(20, 120))
                values["stage_id"] = won_id if status == "won" else lost_id
                values["close_date"] = values["closed_on"] = closed.isoformat()
                if status == "lost":
                    values["lost_reason"] = rng.choice(sorted(LOST_REASONS))
            values["created_on"] = created.isoformat()
            deals.append(_Deal(values, contact_index))
    deals.sort(key=lambda d: (d.values["created_on"], d.values["name"]))
    return deals


def _settle_lifecycles(rng: random.Random, contacts: list[dict], deals: list[_Deal]) -> None:
    """A won deal's contact is a customer; an open deal's contact is at least a sales qualified lead."""
    for deal in deals:
        if deal.contact_index is None:
            continue
        contact = contacts[deal.contact_index]
        if deal.values["status"] == "won":
            contact["lifecycle_stage"] = "evangelist" if rng.random() < 0.2 else "customer"
        elif deal.values["status"] == "open" and contact["lifecycle_stage"] not in ("customer", "evangelist"):
            contact["lifecycle_stage"] = "opportunity" if rng.random() < 0.75 else "sales_qualified_lead"


def _insert_contacts(db: sqlite3.Connection, contacts: list[dict]) -> None:
    for index, contact in enumerate(contacts, start=1):
        contact["id"] = index
        db.execute(
            "INSERT INTO contacts(id, company_id, first_name, last_name, email, phone, job_title, lifecycle_stage, "
            "owner_id, created_on) VALUES (:id, :company_id, :first_name, :last_name, :email, :phone, :job_title, "
            ":lifecycle_stage, :owner_id, :created_on)", contact)


def _insert_deals(db: sqlite3.Connection, deals: list[_Deal], contacts: list[dict]) -> None:
    for index, deal in enumerate(deals, start=1):
        contact_id = contacts[deal.contact_index]["id"] if deal.contact_index is not None else None
        db.execute(
            "INSERT INTO deals(id, name, company_id, contact_id, amount, stage_id, status, close_date, owner_id, "
            "created_on, closed_on, lost_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (index, deal.values["name"], deal.values["company_id"], contact_id, deal.values["amount"],
             deal.values["stage_id"], deal.values["status"], deal.values["close_date"], deal.values["owner_id"],
             deal.values["created_on"], deal.values["closed_on"], deal.values["lost_reason"]))


def _summary(rng: random.Random, kind: str, first: str, product: str) -> str:
    pool = {"call": CALL_NOTES, "email": EMAIL_NOTES, "meeting": MEETING_NOTES, "note": NOTE_NOTES}[kind]
    return rng.choice(pool).format(first=first, product=product.lower())


def _seed_activities(db: sqlite3.Connection, rng: random.Random, contacts: list[dict]) -> None:
    """Activities on deals (by the deal owner) and on contacts alone (by the contact owner), oldest first."""
    kinds, weights = ["call", "email", "meeting", "note"], [4, 4, 2, 1]
    rows: list[tuple] = []
    deals = db.execute(
        "SELECT d.*, c.first_name FROM deals d LEFT JOIN contacts c ON c.id = d.contact_id ORDER BY d.id").fetchall()
    for deal in deals:
        product = deal["name"].split(" - ")[-1]
        last = SNAPSHOT_DAY if deal["status"] == "open" else dt.date.fromisoformat(deal["closed_on"])
        for _ in range(rng.randint(1, 4)):
            kind = rng.choices(kinds, weights=weights)[0]
            day = kit.random_day(rng, dt.date.fromisoformat(deal["created_on"]), last).isoformat()
            first = deal["first_name"] or "the buyer"
            rows.append((kind, _summary(rng, kind, first, product), deal["contact_id"], deal["id"], deal["owner_id"],
                         day, day))
    for contact in contacts:
        for _ in range(rng.choices([0, 1, 2], weights=[3, 4, 2])[0]):
            kind = rng.choices(kinds, weights=weights)[0]
            start = max(dt.date.fromisoformat(contact["created_on"]), dt.date(2026, 1, 5))
            day = kit.random_day(rng, start, SNAPSHOT_DAY).isoformat()
            rows.append((kind, _summary(rng, kind, contact["first_name"], "our platform"), contact["id"], None,
                         contact["owner_id"], day, day))
    rows.sort(key=lambda r: (r[5], r[3] or 0, r[2] or 0, r[0], r[1]))
    db.executemany(
        "INSERT INTO activities(kind, summary, contact_id, deal_id, user_id, occurred_on, created_on) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def _reminder_row(
    rng: random.Random, title: str, assignee: int, contact_id: int | None, deal_id: int | None
) -> tuple:
    due = kit.random_day(rng, dt.date(2026, 3, 16), dt.date(2026, 9, 20))
    created = min(due, SNAPSHOT_DAY) - dt.timedelta(days=rng.randint(0, 30))
    done = (due <= SNAPSHOT_DAY and rng.random() < 0.7) or rng.random() < 0.08
    done_on = min(due, SNAPSHOT_DAY).isoformat() if done else None
    return (title, due.isoformat(), assignee, contact_id, deal_id, int(done), done_on, assignee, created.isoformat())


def _seed_reminders(db: sqlite3.Connection, rng: random.Random) -> None:
    """Follow-up reminders on open deals and on some contacts, assigned to the record's owner."""
    rows: list[tuple] = []
    deals = db.execute(
        "SELECT d.id, d.name, d.owner_id, d.contact_id, c.first_name || ' ' || c.last_name AS contact "
        "FROM deals d JOIN contacts c ON c.id = d.contact_id WHERE d.status = 'open' ORDER BY d.id").fetchall()
    for deal in deals:
        product = deal["name"].split(" - ")[-1]
        for _ in range(rng.choices([0, 1, 2], weights=[2, 5, 2])[0]):
            title = rng.choice(REMINDER_TITLES).format(contact=deal["contact"], product=product)
            rows.append(_reminder_row(rng, title, deal["owner_id"], deal["contact_id"], deal["id"]))
    contacts = db.execute(
        "SELECT c.id, c.first_name || ' ' || c.last_name AS contact, c.owner_id, co.name AS company "
        "FROM contacts c JOIN companies co ON co.id = c.company_id ORDER BY c.id").fetchall()
    for contact in contacts:
        if rng.random() < 0.2:
            title = rng.choice(CONTACT_REMINDERS).format(contact=contact["contact"], company=contact["company"])
            rows.append(_reminder_row(rng, title, contact["owner_id"], contact["id"], None))
    rows.sort(key=lambda r: (r[8], r[1], r[0]))
    db.executemany(
        "INSERT INTO reminders(title, due_date, assignee_id, contact_id, deal_id, done, done_on, created_by, "
        "created_on) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
