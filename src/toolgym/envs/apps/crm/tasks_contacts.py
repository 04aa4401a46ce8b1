"""Company and contact task families: who owns a record, lifecycle updates, new contacts, reaching out to the
contact gone quiet longest, a whole new lead (contact + deal + reminder), and the duplicate-email refusal."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.crm.rules import LIFECYCLE_LABELS, LIFECYCLE_STAGES, lifecycle_rank
from toolgym.envs.apps.crm.task_common import (
    NEW_JOB_TITLES,
    companies,
    contacts,
    deals,
    name_matches_only_itself,
    new_person,
    sales_users,
)
from toolgym.envs.context import resolve_date
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, updated

# ---------------------------------------------------------------- lookup: who owns it

TEXTS = kit.module_texts(__file__)

OWNER_QUESTIONS = TEXTS["OWNER_QUESTIONS"]


def record_owner(rng: random.Random, world: World) -> TaskDraft | None:
    """'Who owns X': a company, a contact or a deal, plus one more fact about it."""
    kind = sorted(OWNER_QUESTIONS)[rng.randrange(len(OWNER_QUESTIONS))]
    templates = OWNER_QUESTIONS[kind]
    phrasing = rng.randrange(len(templates))
    if kind == "company":
        company = rng.choice(companies(world))
        if not name_matches_only_itself(world, company):
            return None
        prompt = templates[phrasing].format(company=company["name"])
        values = [company["owner"], company["city"]]
        solution = [kit.call("search_crm_companies", query=company["name"])]
        answer = f"{company['name']} is owned by {company['owner']}; the company is in {company['city']}."
        entity = company["id"]
    elif kind == "contact":
        contact = rng.choice(contacts(world))
        prompt = templates[phrasing].format(contact=contact["name"], company=contact["company"],
                                            first=contact["first_name"])
        values = [contact["owner"], contact["email"]]
        solution = [kit.call("search_crm_contacts", query=contact["name"])]
        answer = f"{contact['name']} is owned by {contact['owner']}; their email is {contact['email']}."
        entity = contact["id"]
    else:
        deal = rng.choice(deals(world))
        prompt = templates[phrasing].format(deal=deal["name"])
        values = [deal["owner"], deal["stage"]]
        solution = [kit.call("list_deals", query=deal["name"], status="all")]
        answer = f"{deal['name']} is owned by {deal['owner']} and is in {deal['stage']}."
        entity = deal["id"]
    return TaskDraft(
        prompt=prompt,
        checks=kit.lookup_checks(values),
        reference_solution=solution,
        env_variables=kit.env_for(rng.choice(sales_users(world)), kit.random_day(rng)),
        expected_answer=answer,
        difficulty=1,
        metadata={"phrasing": f"{kind}{phrasing}", "entity_id": entity},
    )


# ---------------------------------------------------------------- write: lifecycle stage

LIFECYCLE = TEXTS["LIFECYCLE"]


def update_lifecycle(rng: random.Random, world: World) -> TaskDraft | None:
    """A single forward move of a contact's lifecycle stage."""
    contact = rng.choice(contacts(world, "c.lifecycle_stage != 'evangelist'"))
    rank = lifecycle_rank(contact["lifecycle_stage"])
    target = LIFECYCLE_STAGES[rng.randint(rank + 1, min(rank + 3, len(LIFECYCLE_STAGES) - 1))]
    label = LIFECYCLE_LABELS[target]
    where = {"id": contact["id"]}
    phrasing, prompt = kit.phrase(
        rng, LIFECYCLE, contact=contact["name"], company=contact["company"], label=label,
        a_label=kit.with_article(label))
    return TaskDraft(
        prompt=prompt,
        checks=[field_is("contacts", where, "lifecycle_stage", target, f"{contact['name']} is {target}", weight=3.0),
                kit.diff_only([updated("contacts", where, ["lifecycle_stage"])])],
        reference_solution=[kit.call("search_crm_contacts", query=contact["name"]),
                            kit.call("update_contact_stage", contact_id=contact["id"], lifecycle_stage=target)],
        env_variables=kit.env_for(kit.user_by_id(world, contact["owner_id"]), kit.random_day(rng)),
        expected_answer=f"{contact['name']} is now {kit.with_article(label)} (was {contact['lifecycle_stage']}).",
        difficulty=1,
        metadata={"phrasing": phrasing, "contact_id": contact["id"]},
    )


# ---------------------------------------------------------------- write: new contact

ADD_CONTACT = TEXTS["ADD_CONTACT"]


def add_contact(rng: random.Random, world: World) -> TaskDraft | None:
    """A single insert: a new person at an existing company, with the stage or owner the prompt names."""
    company = rng.choice(companies(world))
    person = new_person(rng, world, company["domain"])
    if person is None:
        return None
    first, last, email = person
    title = rng.choice(NEW_JOB_TITLES)
    user = rng.choice(sales_users(world))
    phrasing = rng.randrange(len(ADD_CONTACT))
    stage, owner, owner_arg = "lead", user, None
    if phrasing == 1:
        stage = rng.choice(["subscriber", "lead", "marketing_qualified_lead", "sales_qualified_lead"])
    if phrasing == 2:
        others = [u for u in sales_users(world) if u["id"] != user["id"]]
        owner = rng.choice(others)
        owner_arg = owner["username"]
    name = f"{first} {last}"
    prompt = ADD_CONTACT[phrasing].format(name=name, company=company["name"], email=email, title=title,
                                          a_label=kit.with_article(LIFECYCLE_LABELS[stage]), rep=owner["name"])
    row = {"first_name": first, "last_name": last, "email": email, "company_id": company["id"], "job_title": title,
           "lifecycle_stage": stage, "owner_id": owner["id"]}
    arguments = {"first_name": first, "last_name": last, "email": email, "company_id": company["id"],
                 "job_title": title, "lifecycle_stage": stage}
    if owner_arg is not None:
        arguments["owner"] = owner_arg
    return TaskDraft(
        prompt=prompt,
        checks=[has_row("contacts", row, f"contact {name} added", weight=3.0, count=1),
                kit.diff_only([inserted("contacts", {"email": email})])],
        reference_solution=[kit.call("search_crm_companies", query=company["name"]),
                            kit.call("create_crm_contact", **arguments)],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=(f"Added {name} ({title}, {email}) as {kit.with_article(LIFECYCLE_LABELS[stage])} at {company['name']}, "
                         f"owned by {owner['name']}."),
        difficulty=1,
        metadata={"phrasing": phrasing, "company_id": company["id"]},
    )


# ---------------------------------------------------------------- search -> choose -> write: quietest contact

QUIETEST = TEXTS["QUIETEST"]


def remind_least_recent_contact(rng: random.Random, world: World) -> TaskDraft | None:
    """Compare the last activity of a company's contacts; remind me to reach the one gone quiet longest."""
    company = rng.choice(companies(world))
    if not name_matches_only_itself(world, company):
        return None
    people = world.query(
        "SELECT c.id, c.first_name || ' ' || c.last_name AS name, (SELECT MAX(a.occurred_on) FROM activities a "
        "WHERE a.contact_id = c.id) AS last_activity FROM contacts c WHERE c.company_id=? ORDER BY c.id",
        (company["id"],))
    if len(people) < 2 or any(p["last_activity"] is None for p in people):
        return None
    ordered = sorted(people, key=lambda p: (p["last_activity"], p["id"]))
    if ordered[0]["last_activity"] == ordered[1]["last_activity"]:
        return None
    quiet = ordered[0]
    today = kit.random_day(rng)
    due = kit.iso(today + dt.timedelta(days=rng.randint(1, 14)))
    phrasing = rng.randrange(len(QUIETEST))
    due_text = due if rng.random() < 0.5 else kit.human_date(due, year=True)
    user = kit.user_by_id(world, company["owner_id"])
    where = {"contact_id": quiet["id"], "assignee_id": user["id"], "due_date": due, "done": 0,
             "created_on": kit.iso(today)}
    return TaskDraft(
        prompt=QUIETEST[phrasing].format(company=company["name"], due=due_text),
        checks=[has_row("reminders", where, f"reminder on {due} about {quiet['name']}", weight=3.0, count=1),
                kit.diff_only([inserted("reminders", {"contact_id": quiet["id"]})]),
                kit.answer_has([quiet["name"]], label="answer names the chosen contact")],
        reference_solution=[
            kit.call("search_crm_contacts", company=company["name"]),
            kit.call("create_crm_reminder", title=f"Reach out to {quiet['name']}", due_date=due, contact_id=quiet["id"]),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"{quiet['name']} was last contacted on {quiet['last_activity']}, the longest ago at "
                         f"{company['name']}; I set a reminder for {due} to reach out."),
        difficulty=2,
        metadata={"phrasing": phrasing, "contact_id": quiet["id"]},
    )


# ---------------------------------------------------------------- multi-step: contact + deal + reminder

NEW_LEAD = TEXTS["NEW_LEAD"]
WHEN = ("next Friday", "next Friday", "next Monday", "next Wednesday")
PRODUCTS = TEXTS["PRODUCTS"]


def new_lead_with_deal(rng: random.Random, world: World) -> TaskDraft | None:
    """Three inserts that depend on each other: the contact, a deal pointing at it, and a dated reminder."""
    company = rng.choice(companies(world))
    if not name_matches_only_itself(world, company):
        return None
    person = new_person(rng, world, company["domain"])
    if person is None:
        return None
    first, last, email = person
    deal_name = f"{company['name']} - {rng.choice(PRODUCTS)}"
    if world.one("SELECT 1 AS hit FROM deals WHERE lower(name)=lower(?)", (deal_name,)) is not None:
        return None
    title = rng.choice(NEW_JOB_TITLES)
    amount = rng.randint(8, 90) * 1000
    today = kit.random_day(rng)
    close = kit.iso(today + dt.timedelta(days=rng.randint(30, 120)))
    when = rng.choice(WHEN)
    due = kit.iso(resolve_date(when, today))
    user = rng.choice(sales_users(world))
    me = user["id"]
    contact_id, deal_id = kit.next_id(world, "contacts"), kit.next_id(world, "deals")
    name = f"{first} {last}"
    phrasing, prompt = kit.phrase(
        rng, NEW_LEAD, name=name, first=first, title=title, company=company["name"], email=email,
        deal=deal_name, amount=kit.money(amount), close=close, when=when)
    return TaskDraft(
        prompt=prompt,
        checks=[
            has_row("contacts", {"id": contact_id, "first_name": first, "last_name": last, "email": email, "company_id": company["id"], "job_title": title, "owner_id": me},
                    f"contact {name} added", weight=2.0, count=1),
            has_row("deals", {"name": deal_name, "company_id": company["id"], "contact_id": contact_id, "amount": amount, "close_date": close, "stage_id": 1, "status": "open", "owner_id": me},
                    f"deal {deal_name} linked to the new contact", weight=2.0, count=1),
            has_row("reminders", {"assignee_id": me, "due_date": due, "done": 0, "created_on": kit.iso(today)},
                    f"reminder due {due} ({when})", weight=2.0, count=1),
            kit.diff_only([
                inserted("contacts", {"email": email}),
                inserted("deals", {"name": deal_name}),
                inserted("reminders", {"assignee_id": me}),
            ]),
        ],
        reference_solution=[
            kit.call("search_crm_companies", query=company["name"]),
            kit.call("create_crm_contact", first_name=first, last_name=last, email=email, company_id=company["id"],
                 job_title=title),
            kit.call("create_deal", name=deal_name, company_id=company["id"], amount=amount, close_date=close,
                 contact_id=contact_id),
            kit.call("create_crm_reminder", title=f"Follow up with {name}", due_date=when, contact_id=contact_id,
                 deal_id=deal_id),
        ],
        env_variables=kit.env_for(user, today),
        expected_answer=(f"Added {name} ({email}) at {company['name']}, opened \"{deal_name}\" for {kit.money(amount)} "
                         f"closing {close} with them as the contact, and set a reminder for {due}."),
        difficulty=3,
        metadata={"phrasing": phrasing, "company_id": company["id"], "when": when},
    )


# ---------------------------------------------------------------- impossible: duplicate email

DUPLICATE = TEXTS["DUPLICATE"]


def duplicate_email_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The email the user gives already belongs to another contact: emails are unique, so nothing is added."""
    existing = rng.choice(contacts(world))
    person = new_person(rng, world, existing["domain"])
    if person is None:
        return None
    first, last, _ = person
    title = rng.choice(NEW_JOB_TITLES)
    name = f"{first} {last}"
    phrasing, prompt = kit.phrase(
        rng, DUPLICATE, name=name, company=existing["company"], email=existing["email"], title=title)
    return TaskDraft(
        prompt=prompt,
        checks=[*kit.impossible_checks("create_crm_contact"),
                kit.answer_has([existing["name"]], label="answer names who already has the email")],
        reference_solution=[kit.call("search_crm_contacts", query=existing["email"])],
        env_variables=kit.env_for(rng.choice(sales_users(world)), kit.random_day(rng)),
        expected_answer=(f"I cannot add {name} with {existing['email']}: that email already belongs to "
                         f"{existing['name']} at {existing['company']}, and contact emails must be unique."),
        difficulty=2,
        metadata={"phrasing": phrasing, "contact_id": existing["id"]},
    )
