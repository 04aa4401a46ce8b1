"""Mail requests that cannot be done (a message that does not exist, a cancelled invitation, an address
outside the contacts): the agent must change nothing and say so."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.mail import tools as t
from toolgym.envs.apps.mail.task_common import (
    KEYWORDS,
    OUTSIDE_ADDRESSES,
    REPLY_TEXTS,
    SEND_TEXTS,
    Reader,
    owners,
    setup,
)

TEXTS = kit.module_texts(__file__)


def reply_to_missing_message(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    owner, today = reader.owner, reader.today
    contact = rng.choice(reader(t.search_contacts))
    text = rng.choice(REPLY_TEXTS)
    from_them = reader(t.search_messages, sender=contact["name"])["messages"]
    if from_them:
        keyword = rng.choice(KEYWORDS)
        if reader(t.search_messages, sender=contact["name"], query=keyword)["total"]:
            return None
        phrasing, prompt = kit.phrase(rng, TEXTS["reply_to_missing_message.about_phrasings"], sender=contact["name"], kw=keyword, text=text)
        gold = [kit.call("search_messages", sender=contact["name"], query=keyword)]
        reason = f"there is no email from {contact['name']} about the {keyword} in your mailbox"
    else:
        phrasing, prompt = kit.phrase(rng, TEXTS["reply_to_missing_message.never_phrasings"], sender=contact["name"], text=text)
        phrasing += len(TEXTS["reply_to_missing_message.about_phrasings"])
        gold = [kit.call("search_messages", sender=contact["name"])]
        reason = f"{contact['name']} has not sent you any email"
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=gold,
        expected_answer=f"I cannot reply: {reason}.",
        checks=kit.impossible_checks("reply_to_message", reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata={"phrasing": phrasing, "contact": contact["email"]},
)


def accept_cancelled_invite(rng: random.Random, world: World) -> TaskDraft | None:
    owner = rng.choice(owners(world))
    rows = world.query(
        "SELECT e.id, e.title, e.start FROM event_invites i JOIN calendar_events e ON e.id = i.event_id "
        "WHERE i.invitee_email=? AND i.response='pending' AND e.status='cancelled' AND e.start >= '2026-04-02' "
        "ORDER BY e.start, e.id",
        (owner.email,),
)
    if not rows:
        return None
    event = rng.choice(rows)
    day = dt.date.fromisoformat(event["start"][:10])
    latest = min(day - dt.timedelta(days=1), dt.date(2026, 8, 31))
    today = kit.random_day(rng, max(dt.date(2026, 4, 1), day - dt.timedelta(days=20)), latest)
    reader = Reader(world, owner, today)
    invites = [i for i in reader(t.list_invites, status="all", date=day.isoformat()) if i["title"] == event["title"]]
    if len(invites) != 1:
        return None
    invite = invites[0]
    when = f"{day:%B} {day.day}"
    phrasing, prompt = kit.phrase(
        rng, TEXTS["accept_cancelled_invite"], title=event["title"], organizer=invite["organizer"], date=when)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=[kit.call("list_invites", status="all", date=day.isoformat())],
        expected_answer=f"I cannot accept it: \"{event['title']}\" on {when} was cancelled by "
                        f"{invite['organizer']}.",
        checks=kit.impossible_checks("respond_to_invite", reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata={"phrasing": phrasing, "event_id": event["id"]},
)


def send_to_non_contact(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    owner, today = reader.owner, reader.today
    known = {c["email"] for c in reader(t.search_contacts)}
    if rng.random() < 0.5:
        strangers = world.query(
            "SELECT name, email FROM users WHERE username != ? AND email NOT IN "
            "(SELECT email FROM contacts WHERE owner=?) ORDER BY username",
            (owner.username, owner.username),
        )
        person = rng.choice(strangers)
        who, query = (person["email"], person["email"]) if rng.random() < 0.5 else (person["name"], person["name"])
    else:
        who = query = rng.choice(OUTSIDE_ADDRESSES)
    if who in known or reader(t.search_contacts, query=query):
        return None
    subject, body = rng.choice(SEND_TEXTS)
    phrasing, prompt = kit.phrase(rng, TEXTS["send_to_non_contact.by_address"], who=who, subject=subject, body=body)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=[kit.call("search_contacts", query=query)],
        expected_answer=f"I cannot send it: {who} is not in your contacts, and new messages may only go to "
                        "your contacts.",
        checks=kit.impossible_checks("send_message", reply_label=kit.SAYS_IT_CANNOT),
        difficulty=2,
        metadata={"phrasing": phrasing, "recipient": who},
)
