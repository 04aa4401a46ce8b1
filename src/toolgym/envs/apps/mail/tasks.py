"""Task families of the mail app: fourteen kinds of request over the mailbox and the calendar.

Each generator picks a mailbox owner and a CURRENT_DATE with `rng`, reads the seed through the
app's own tools, and emits the prompt, the gold calls, the expected answer and weighted checks.
Writes are checked on the intended row (new rows by the id the next insert gets) plus a
`diff_only` of exactly the expected changes.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable

from toolgym.envs import App, TaskDraft, TaskFamily, World
from toolgym.envs.apps.mail import tools as t
from toolgym.envs.apps.mail.content import LOCATIONS, TOPICS
from toolgym.envs.apps.mail.task_support import (
    MEETING_STARTS,
    MEETING_TITLES,
    OUTSIDE_ADDRESSES,
    REPLY_TEXTS,
    SEND_TEXTS,
    Owner,
    Reader,
    call,
    clock,
    folder_id,
    is_person,
    long_date,
    next_id,
    overlaps,
    owners,
    pick_when,
    random_day,
)
from toolgym.schema import (
    AnswerContains,
    DiffOnly,
    ExpectedChange,
    FieldEquals,
    RowExists,
    ToolNotCalled,
)

Generator = Callable[[random.Random, World], TaskDraft | None]
KEYWORDS = tuple(topic.keyword for topic in TOPICS)


def _no_change() -> DiffOnly:
    return DiffOnly(expected=[], weight=1.0, label="nothing changed")


def _impossible_checks(write_tool: str) -> list:
    return [
        DiffOnly(expected=[], weight=2.0, label="nothing changed"),
        ToolNotCalled(name=write_tool, weight=1.0, label=f"{write_tool} not called"),
        AnswerContains(values=["cannot"], weight=1.0, label="says it cannot"),
    ]


def _phrase(rng: random.Random, phrasings: tuple[str, ...], **slots: str) -> tuple[int, str]:
    """One phrasing, filled; its index goes into the task metadata (tests count distinct phrasings)."""
    index = rng.randrange(len(phrasings))
    return index, phrasings[index].format(**slots)


def _received(messages: list[dict], owner: Owner) -> list[dict]:
    return [m for m in messages if m["sender_address"].lower() != owner.email]


def _clear_latest(messages: list[dict]) -> dict | None:
    """The newest message, unless it ties with the next or sits in Deleted Items/Junk (ambiguous asks)."""
    if not messages or messages[0]["folder"] in ("Deleted Items", "Junk Email"):
        return None
    if len(messages) > 1 and messages[1]["date"] == messages[0]["date"]:
        return None
    return messages[0]


def _single_sender(messages: list[dict]) -> bool:
    return len({m["sender_address"].lower() for m in messages}) == 1


# -- lookups ---------------------------------------------------------------------------------------

def latest_sender_about_topic(app: App) -> Generator:
    phrasings = (
        "Who sent me the most recent email about the {kw}?",
        "Which person emailed me last about {kw}? Just give me their name.",
        "Find the latest message someone sent me regarding the {kw} and tell me who it's from.",
        "I need to follow up on the {kw} thread. Who was the last person to write to me about it?",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        today = random_day(rng)
        keyword = rng.choice(KEYWORDS)
        found = Reader(app, world, owner, today)(t.search_messages, query=keyword, limit=50)
        latest = _clear_latest(_received(found["messages"], owner))
        if latest is None:
            return None
        phrasing, prompt = _phrase(rng, phrasings, kw=keyword)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=[call("search_messages", query=keyword)],
            expected_answer=f"The latest email about the {keyword} came from {latest['sender']} "
                            f"({latest['sender_address']}) on {latest['date'][:10]}: \"{latest['subject']}\".",
            checks=[AnswerContains(values=[latest["sender"]], weight=2.0, label="names the sender"), _no_change()],
            difficulty=1,
            metadata={"phrasing": phrasing, "message_id": latest["id"]},
        )

    return generate


def attachment_name(app: App) -> Generator:
    phrasings = (
        "What is the name of the file {sender} attached to the email \"{subject}\"?",
        "{sender} sent me \"{subject}\" with an attachment. What's the attachment called?",
        "Look up the attachment on {sender}'s message \"{subject}\" and tell me its file name.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        today = random_day(rng)
        rows = world.query(
            "SELECT m.id, m.sender_name, m.sender_address, m.subject, a.file_name, a.size_bytes FROM messages m "
            "JOIN attachments a ON a.message_id = m.id WHERE m.owner=? AND m.sent_at <= ? AND m.sender_address != ? "
            "ORDER BY m.id, a.id",
            (owner.username, f"{today.isoformat()}T23:59", owner.email),
        )
        if not rows:
            return None
        pick = rng.choice(rows)
        same = [r for r in rows if r["sender_address"] == pick["sender_address"] and r["subject"] == pick["subject"]]
        if len(same) != 1:  # several files, or several messages with this subject from this sender
            return None
        reader = Reader(app, world, owner, today)
        hits = reader(t.search_messages, sender=pick["sender_name"], query=pick["subject"])["messages"]
        if [m["id"] for m in hits if m["attachments"]] != [pick["id"]] or not _single_sender(hits):
            return None
        phrasing, prompt = _phrase(rng, phrasings, sender=pick["sender_name"], subject=pick["subject"])
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=[
                call("search_messages", sender=pick["sender_name"], query=pick["subject"]),
                call("read_message", message_id=pick["id"]),
            ],
            expected_answer=f"The attachment is {pick['file_name']} ({round(pick['size_bytes'] / 1024)} KB).",
            checks=[AnswerContains(values=[pick["file_name"]], weight=2.0, label="names the file"), _no_change()],
            difficulty=1,
            metadata={"phrasing": phrasing, "message_id": pick["id"]},
        )

    return generate


# -- single writes ---------------------------------------------------------------------------------

def send_to_contact(app: App) -> Generator:
    phrasings = (
        "Send {name} an email with the subject \"{subject}\" and this text: \"{body}\"",
        "Email {name}. Subject: \"{subject}\". Message: \"{body}\"",
        "Could you write to {name}? Use the subject \"{subject}\" and say \"{body}\"",
        "Please send a new message to {name} saying \"{body}\" with \"{subject}\" as the subject.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        today = random_day(rng)
        contacts = Reader(app, world, owner, today)(t.search_contacts)
        contact = rng.choice(contacts)
        subject, body = rng.choice(SEND_TEXTS)
        if world.one("SELECT id FROM messages WHERE owner=? AND subject=?", (owner.username, subject)):
            return None
        new_id = next_id(world, "messages")
        phrasing, prompt = _phrase(rng, phrasings, name=contact["name"], subject=subject, body=body)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=[
                call("search_contacts", query=contact["name"]),
                call("send_message", to=[contact["email"]], subject=subject, body=body),
            ],
            expected_answer=f"I sent \"{subject}\" to {contact['name']} ({contact['email']}).",
            checks=[
                RowExists(table="messages", weight=2.0, label="message sent to the contact", where={
                    "id": new_id, "owner": owner.username, "folder_id": folder_id(world, owner, "Sent"),
                    "subject": subject, "to_addresses": contact["email"], "cc_addresses": ""}),
                FieldEquals(table="messages", where={"id": new_id}, field="body", value=body, weight=1.0,
                            label="body as asked"),
                DiffOnly(expected=[ExpectedChange(table="messages", op="insert",
                                                  where={"owner": owner.username, "subject": subject})],
                         weight=1.0, label="only the new message"),
            ],
            difficulty=1,
            metadata={"phrasing": phrasing, "contact": contact["email"]},
        )

    return generate


def cancel_meeting(app: App) -> Generator:
    phrasings = (
        "Cancel my \"{title}\" meeting on {date}.",
        "Please call off \"{title}\" on {date}; I organized it.",
        "I need to cancel the meeting \"{title}\" that I set up for {date}.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        today = random_day(rng)
        rows = world.query(
            "SELECT id, title, start FROM calendar_events WHERE organizer=? AND status='scheduled' AND start > ? "
            "ORDER BY start, id",
            (owner.username, f"{today.isoformat()}T23:59"),
        )
        if not rows:
            return None
        event = rng.choice(rows)
        day = event["start"][:10]
        reader = Reader(app, world, owner, today)
        same_day = [e for e in reader(t.list_events, date=day) if e["title"] == event["title"]]
        if len(same_day) != 1:
            return None
        when = long_date(dt.date.fromisoformat(day))
        phrasing, prompt = _phrase(rng, phrasings, title=event["title"], date=when)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=[call("list_events", date=day), call("cancel_event", event_id=event["id"])],
            expected_answer=f"I cancelled \"{event['title']}\" on {when}.",
            checks=[
                FieldEquals(table="calendar_events", where={"id": event["id"]}, field="status", value="cancelled",
                            weight=2.0, label="meeting cancelled"),
                DiffOnly(expected=[ExpectedChange(table="calendar_events", op="update", where={"id": event["id"]},
                                                  fields=["status"])], weight=1.0, label="only that meeting"),
            ],
            difficulty=1,
            metadata={"phrasing": phrasing, "event_id": event["id"]},
        )

    return generate


# -- search, choose, write -------------------------------------------------------------------------

def forward_latest_about_topic(app: App) -> Generator:
    phrasings = (
        "Forward the most recent email I received about the {kw} to {name}.",
        "{name} needs to see the latest message I got about the {kw}. Please forward it to them.",
        "Find the newest email someone sent me about {kw} and forward it to {name}.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        today = random_day(rng)
        keyword = rng.choice(KEYWORDS)
        reader = Reader(app, world, owner, today)
        latest = _clear_latest(_received(reader(t.search_messages, query=keyword, limit=50)["messages"], owner))
        if latest is None:
            return None
        contacts = [c for c in reader(t.search_contacts) if c["email"] != latest["sender_address"].lower()]
        contact = rng.choice(contacts)
        new_id = next_id(world, "messages")
        files = world.query("SELECT id FROM attachments WHERE message_id=? ORDER BY id", (latest["id"],))
        expected = [ExpectedChange(table="messages", op="insert",
                                   where={"owner": owner.username, "forwarded_from": latest["id"]})]
        expected += [ExpectedChange(table="attachments", op="insert", where={"message_id": new_id}) for _ in files]
        phrasing, prompt = _phrase(rng, phrasings, kw=keyword, name=contact["name"])
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=[
                call("search_messages", query=keyword),
                call("search_contacts", query=contact["name"]),
                call("forward_message", message_id=latest["id"], to=[contact["email"]]),
            ],
            expected_answer=f"I forwarded \"{latest['subject']}\" from {latest['sender']} to {contact['name']}.",
            checks=[
                RowExists(table="messages", weight=2.0, label="latest message forwarded to the contact", where={
                    "id": new_id, "owner": owner.username, "forwarded_from": latest["id"],
                    "to_addresses": contact["email"]}),
                DiffOnly(expected=expected, weight=1.0, label="only the forward (and its attachments)"),
            ],
            difficulty=2,
            metadata={"phrasing": phrasing, "message_id": latest["id"], "contact": contact["email"]},
        )

    return generate


def move_latest_unread_from_sender(app: App) -> Generator:
    phrasings = (
        "Move the newest unread email from {sender} into my {folder} folder.",
        "There's an unread message from {sender}, the most recent one. File it under {folder}.",
        "Take the latest unread email {sender} sent me and put it in the {folder} folder. Leave it unread.",
        "Please move {sender}'s most recent unread message to {folder}.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        today = random_day(rng)
        reader = Reader(app, world, owner, today)
        unread = _received(reader(t.search_messages, unread_only=True, limit=50)["messages"], owner)
        senders = sorted({m["sender"] for m in unread})
        if not senders:
            return None
        sender = rng.choice(senders)
        hits = reader(t.search_messages, sender=sender, unread_only=True)["messages"]
        target = _clear_latest(hits)
        if target is None or not _single_sender(hits):
            return None
        folders = [f["name"] for f in reader(t.list_folders)
                   if f["name"] not in ("Inbox", "Sent", "Deleted Items", "Junk Email", target["folder"])]
        folder = rng.choice(folders)
        phrasing, prompt = _phrase(rng, phrasings, sender=sender, folder=folder)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=[
                call("search_messages", sender=sender, unread_only=True),
                call("move_message", message_id=target["id"], folder=folder),
            ],
            expected_answer=f"I moved \"{target['subject']}\" from {sender} to {folder}.",
            checks=[
                FieldEquals(table="messages", where={"id": target["id"]}, field="folder_id",
                            value=folder_id(world, owner, folder), weight=2.0, label="message in the folder"),
                DiffOnly(expected=[ExpectedChange(table="messages", op="update", where={"id": target["id"]},
                                                  fields=["folder_id"])], weight=1.0, label="only that move"),
            ],
            difficulty=2,
            metadata={"phrasing": phrasing, "message_id": target["id"]},
        )

    return generate


def reply_to_last_from(app: App) -> Generator:
    phrasings = (
        "Reply to the last email from {sender} with: \"{text}\"",
        "Answer {sender}'s most recent message. Say: \"{text}\"",
        "{sender} wrote to me recently. Reply to their latest email with \"{text}\"",
        "Send a reply to the newest message I got from {sender}: \"{text}\"",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        today = random_day(rng)
        reader = Reader(app, world, owner, today)
        received = _received(reader(t.search_messages, limit=50)["messages"], owner)
        senders = sorted({m["sender"] for m in received if is_person(m["sender_address"])})
        if not senders:
            return None
        sender = rng.choice(senders)
        hits = reader(t.search_messages, sender=sender)["messages"]
        target = _clear_latest(hits)
        if target is None or not _single_sender(hits):
            return None
        text = rng.choice(REPLY_TEXTS)
        new_id = next_id(world, "messages")
        phrasing, prompt = _phrase(rng, phrasings, sender=sender, text=text)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=[
                call("search_messages", sender=sender),
                call("reply_to_message", message_id=target["id"], body=text),
            ],
            expected_answer=f"I replied to \"{target['subject']}\" from {sender}.",
            checks=[
                RowExists(table="messages", weight=2.0, label="reply to the latest message", where={
                    "id": new_id, "owner": owner.username, "in_reply_to": target["id"],
                    "folder_id": folder_id(world, owner, "Sent"),
                    "to_addresses": target["sender_address"].lower(), "cc_addresses": ""}),
                FieldEquals(table="messages", where={"id": new_id}, field="body", value=text, weight=1.0,
                            label="reply text as asked"),
                DiffOnly(expected=[ExpectedChange(table="messages", op="insert",
                                                  where={"owner": owner.username, "in_reply_to": target["id"]})],
                         weight=1.0, label="only the reply"),
            ],
            difficulty=2,
            metadata={"phrasing": phrasing, "message_id": target["id"]},
        )

    return generate


# -- multi-step ------------------------------------------------------------------------------------

def triage_unread_from_sender(app: App) -> Generator:
    phrasings = (
        "Mark every unread email from {sender} in my inbox as read and move them all to {folder}.",
        "Clean up my inbox: all unread messages from {sender} should be marked read and filed in {folder}.",
        "Go through my inbox, take the unread emails from {sender}, mark them as read, then move them to the "
        "{folder} folder. Don't touch anything else.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        today = random_day(rng)
        reader = Reader(app, world, owner, today)
        unread = reader(t.search_messages, folder="Inbox", unread_only=True, limit=50)["messages"]
        counts: dict[str, int] = {}
        for message in unread:
            counts[message["sender"]] = counts.get(message["sender"], 0) + 1
        senders = sorted(s for s, n in counts.items() if n >= 2)
        if not senders:
            return None
        sender = rng.choice(senders)
        hits = reader(t.search_messages, sender=sender, folder="Inbox", unread_only=True)["messages"]
        if not _single_sender(hits):
            return None
        folders = [f["name"] for f in reader(t.list_folders) if f["name"] not in ("Inbox", "Sent", "Deleted Items",
                                                                                      "Junk Email")]
        folder = rng.choice(folders)
        target_folder = folder_id(world, owner, folder)
        gold = [call("search_messages", sender=sender, folder="Inbox", unread_only=True)]
        checks: list = []
        expected = []
        for message in sorted(hits, key=lambda m: m["id"]):
            gold += [call("mark_as_read", message_id=message["id"]),
                     call("move_message", message_id=message["id"], folder=folder)]
            checks += [
                FieldEquals(table="messages", where={"id": message["id"]}, field="is_read", value=1, weight=1.0,
                            label=f"message {message['id']} read"),
                FieldEquals(table="messages", where={"id": message["id"]}, field="folder_id", value=target_folder,
                            weight=1.0, label=f"message {message['id']} in {folder}"),
            ]
            expected.append(ExpectedChange(table="messages", op="update", where={"id": message["id"]},
                                           fields=["is_read", "folder_id"]))
        checks.append(DiffOnly(expected=expected, weight=2.0, label="only those messages changed"))
        phrasing, prompt = _phrase(rng, phrasings, sender=sender, folder=folder)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=gold,
            expected_answer=f"I marked {len(hits)} unread emails from {sender} as read and moved them to {folder}.",
            checks=checks,
            difficulty=3,
            metadata={"phrasing": phrasing, "message_ids": sorted(m["id"] for m in hits)},
        )

    return generate


def accept_invites_without_clashes(app: App) -> Generator:
    decline_phrasings = (
        "Accept all my pending meeting invitations for {noun}, except ones that clash with meetings already on my "
        "calendar. Decline those.",
        "For {noun}: accept every invite I haven't answered yet unless it overlaps something already on my "
        "calendar; decline the ones that overlap.",
        "Go through my unanswered invitations for {noun}. If one doesn't conflict with my existing meetings, "
        "accept it; if it does, decline it.",
        "Handle my pending invitations for {noun}: say yes to the ones that fit my calendar and no to the ones "
        "that overlap an existing meeting.",
    )
    leave_phrasings = (
        "Accept all pending invites for {noun} except the ones that overlap with meetings I already have. Leave "
        "the overlapping ones unanswered.",
        "Please accept my open invitations for {noun}, but skip any that clash with my current calendar (don't "
        "respond to those).",
        "RSVP yes to every pending invitation for {noun} that fits around my existing meetings; leave the clashing "
        "ones alone.",
        "I have some unanswered invites for {noun}. Accept the ones that don't overlap my existing meetings and "
        "don't reply to the others.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        days = [r["day"] for r in world.query(
            "SELECT DISTINCT substr(e.start, 1, 10) AS day FROM event_invites i JOIN calendar_events e "
            "ON e.id = i.event_id WHERE i.invitee_email=? AND i.response='pending' AND e.status='scheduled' "
            "AND e.start >= '2026-04-01' ORDER BY day",
            (owner.email,),
        )]
        if not days:
            return None
        when = pick_when(rng, dt.date.fromisoformat(rng.choice(days)))
        if when is None:
            return None
        reader = Reader(app, world, owner, when.today)
        invites = reader(t.list_invites, date=when.day.isoformat())
        if any(i["event_status"] == "cancelled" and i["my_response"] == "pending" for i in invites):
            return None
        pending = [i for i in invites if i["my_response"] == "pending"]
        if len(pending) < 2 or any(overlaps(a, b) for k, a in enumerate(pending) for b in pending[k + 1:]):
            return None
        calendar = reader(t.list_events, date=when.day.isoformat())
        clashing = [i for i in pending if any(overlaps(i, e) for e in calendar)]
        free = [i for i in pending if i not in clashing]
        if not clashing or not free:
            return None
        decline = rng.random() < 0.5
        gold = [call("list_invites", date=when.argument), call("list_events", date=when.argument)]
        checks: list = []
        expected = []
        for invite in pending:
            accepted = invite in free
            if accepted or decline:
                response = "accepted" if accepted else "declined"
                gold.append(call("respond_to_invite", event_id=invite["event_id"], response=response))
                expected.append(ExpectedChange(table="event_invites", op="update",
                                               where={"event_id": invite["event_id"], "invitee_email": owner.email},
                                               fields=["response", "responded_at"]))
            else:
                response = "pending"
            checks.append(FieldEquals(table="event_invites", field="response", value=response, weight=1.0,
                                      where={"event_id": invite["event_id"], "invitee_email": owner.email},
                                      label=f"'{invite['title']}' {response}"))
        checks.append(DiffOnly(expected=expected, weight=2.0, label="only those invitations answered"))
        accepted_titles = ", ".join(i["title"] for i in free)
        clash_titles = ", ".join(i["title"] for i in clashing)
        answer = f"Accepted: {accepted_titles}. " + (
            f"Declined because they clash: {clash_titles}." if decline else f"Left unanswered (clash): {clash_titles}."
        )
        phrasing, prompt = _phrase(rng, decline_phrasings if decline else leave_phrasings, noun=when.noun)
        phrasing += 0 if decline else len(decline_phrasings)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(when.today),
            reference_solution=gold,
            expected_answer=answer,
            checks=checks,
            difficulty=3,
            metadata={"phrasing": phrasing, "day": when.day.isoformat(), "declines": decline},
        )

    return generate


# -- context: relative dates -----------------------------------------------------------------------

def agenda_for_day(app: App) -> Generator:
    phrasings = (
        "What's on my calendar {adverb}{part}?",
        "Which meetings do I have {adverb}{part}? Give me the titles and start times.",
        "Do I have any meetings {adverb}{part}? Tell me what they are.",
        "List my meetings {adverb}{part}, please.",
    )
    parts = ("", " morning", " afternoon")

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        days = [r["day"] for r in world.query(
            "SELECT DISTINCT substr(e.start, 1, 10) AS day FROM calendar_events e WHERE e.status='scheduled' "
            "AND e.start >= '2026-04-01' AND e.start < '2026-09-08' AND (e.organizer=? OR EXISTS (SELECT 1 FROM "
            "event_invites i WHERE i.event_id=e.id AND i.invitee_email=? AND i.response='accepted')) ORDER BY day",
            (owner.username, owner.email),
        )]
        if not days:
            return None
        when = pick_when(rng, dt.date.fromisoformat(rng.choice(days)))
        if when is None:
            return None
        part = rng.choice(parts)
        events = Reader(app, world, owner, when.today)(t.list_events, date=when.argument)
        if part == " morning":
            events = [e for e in events if e["start"][11:] < "12:00"]
        elif part == " afternoon":
            events = [e for e in events if e["start"][11:] >= "12:00"]
        titles = [e["title"] for e in events]
        if not events or len(events) > 4 or len(set(titles)) != len(titles):
            return None
        adverb = when.adverb
        if adverb == "today" and part:  # "this morning", not "today morning"
            adverb, part = f"this{part}", ""
        listing = "; ".join(f"{e['start'][11:]}-{e['end'][11:]} {e['title']} ({e['location']})" for e in events)
        phrasing, prompt = _phrase(rng, phrasings, adverb=adverb, part=part)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(when.today),
            reference_solution=[call("list_events", date=when.argument)],
            expected_answer=f"You have {len(events)} meeting(s) {adverb}{part}: {listing}.",
            checks=[AnswerContains(values=titles, weight=2.0, label="names every meeting"), _no_change()],
            difficulty=2,
            metadata={"phrasing": phrasing, "day": when.day.isoformat()},
        )

    return generate


def schedule_meeting(app: App) -> Generator:
    phrasings = (
        "Schedule a meeting called \"{title}\" with {name} {adverb} from {start} to {end} in {location}.",
        "Set up \"{title}\" {adverb}, {start} to {end}, location {location}, and invite {name}.",
        "Book {location} {adverb} from {start} until {end} for a meeting named \"{title}\" with {name}.",
        "Can you put \"{title}\" on my calendar {adverb} ({start}-{end}, {location}) and send {name} an invite?",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        day = random_day(rng, dt.date(2026, 4, 2), dt.date(2026, 9, 7))
        if day.weekday() >= 5:
            return None
        when = pick_when(rng, day, allow_today=False)
        if when is None:
            return None
        reader = Reader(app, world, owner, when.today)
        contact = rng.choice(reader(t.search_contacts))
        title = rng.choice(MEETING_TITLES)
        start = rng.choice(MEETING_STARTS)
        minutes = rng.choice([30, 45, 60])
        end_dt = dt.datetime.combine(day, dt.time(int(start[:2]), int(start[3:]))) + dt.timedelta(minutes=minutes)
        end = end_dt.strftime("%H:%M")
        location = rng.choice(LOCATIONS)
        style = rng.randrange(3)
        new_id = next_id(world, "calendar_events")
        iso = day.isoformat()
        phrasing, prompt = _phrase(rng, phrasings, title=title, name=contact["name"], adverb=when.adverb,
                                   start=clock(start, style), end=clock(end, style), location=location)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(when.today),
            reference_solution=[
                call("search_contacts", query=contact["name"]),
                call("create_event", title=title, date=when.argument, start_time=start, end_time=end,
                     location=location, invitees=[contact["email"]]),
            ],
            expected_answer=f"\"{title}\" is on your calendar on {long_date(day)}, {start}-{end} in {location}, "
                            f"and {contact['name']} is invited.",
            checks=[
                RowExists(table="calendar_events", weight=2.0, label="meeting at the right day and time", where={
                    "id": new_id, "organizer": owner.username, "title": title, "start": f"{iso}T{start}",
                    "end": f"{iso}T{end}", "status": "scheduled"}),
                FieldEquals(table="calendar_events", where={"id": new_id}, field="location", value=location,
                            weight=1.0, label="location as asked"),
                RowExists(table="event_invites", weight=1.0, label="contact invited", where={
                    "event_id": new_id, "invitee_email": contact["email"], "response": "pending"}),
                DiffOnly(expected=[
                    ExpectedChange(table="calendar_events", op="insert",
                                   where={"organizer": owner.username, "title": title}),
                    ExpectedChange(table="event_invites", op="insert",
                                   where={"event_id": new_id, "invitee_email": contact["email"]}),
                ], weight=1.0, label="only the meeting and its invitation"),
            ],
            difficulty=2,
            metadata={"phrasing": phrasing, "day": iso, "contact": contact["email"]},
        )

    return generate


# -- impossible ------------------------------------------------------------------------------------

def reply_to_missing_message(app: App) -> Generator:
    about_phrasings = (
        "Reply to {sender}'s email about the {kw} and tell them \"{text}\"",
        "Answer the message {sender} sent me about {kw} with: \"{text}\"",
        "Find {sender}'s email on the {kw} and reply \"{text}\"",
    )
    never_phrasings = (
        "Reply to {sender}'s latest email with \"{text}\"",
        "{sender} emailed me recently. Send a reply to that message saying \"{text}\"",
        "Answer the last message from {sender}: \"{text}\"",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        today = random_day(rng)
        reader = Reader(app, world, owner, today)
        contact = rng.choice(reader(t.search_contacts))
        text = rng.choice(REPLY_TEXTS)
        from_them = reader(t.search_messages, sender=contact["name"])["messages"]
        if from_them:
            keyword = rng.choice(KEYWORDS)
            if reader(t.search_messages, sender=contact["name"], query=keyword)["total"]:
                return None
            phrasing, prompt = _phrase(rng, about_phrasings, sender=contact["name"], kw=keyword, text=text)
            gold = [call("search_messages", sender=contact["name"], query=keyword)]
            reason = f"there is no email from {contact['name']} about the {keyword} in your mailbox"
        else:
            phrasing, prompt = _phrase(rng, never_phrasings, sender=contact["name"], text=text)
            phrasing += len(about_phrasings)
            gold = [call("search_messages", sender=contact["name"])]
            reason = f"{contact['name']} has not sent you any email"
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=gold,
            expected_answer=f"I cannot reply: {reason}.",
            checks=_impossible_checks("reply_to_message"),
            difficulty=2,
            metadata={"phrasing": phrasing, "contact": contact["email"]},
        )

    return generate


def accept_cancelled_invite(app: App) -> Generator:
    phrasings = (
        "Accept the invitation to \"{title}\" on {date}.",
        "RSVP yes to {organizer}'s \"{title}\" meeting on {date}.",
        "Please accept the \"{title}\" invite for {date}.",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
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
        today = random_day(rng, max(dt.date(2026, 4, 1), day - dt.timedelta(days=20)), latest)
        reader = Reader(app, world, owner, today)
        invites = [i for i in reader(t.list_invites, status="all", date=day.isoformat()) if i["title"] == event["title"]]
        if len(invites) != 1:
            return None
        invite = invites[0]
        when = f"{day:%B} {day.day}"
        phrasing, prompt = _phrase(rng, phrasings, title=event["title"], organizer=invite["organizer"], date=when)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=[call("list_invites", status="all", date=day.isoformat())],
            expected_answer=f"I cannot accept it: \"{event['title']}\" on {when} was cancelled by "
                            f"{invite['organizer']}.",
            checks=_impossible_checks("respond_to_invite"),
            difficulty=2,
            metadata={"phrasing": phrasing, "event_id": event["id"]},
        )

    return generate


def send_to_non_contact(app: App) -> Generator:
    by_address = (
        "Send an email to {who} with the subject \"{subject}\" saying \"{body}\"",
        "Email {who}: subject \"{subject}\", text \"{body}\"",
        "Please write a new message to {who}. Subject \"{subject}\"; body \"{body}\"",
    )

    def generate(rng: random.Random, world: World) -> TaskDraft | None:
        owner = rng.choice(owners(world))
        today = random_day(rng)
        reader = Reader(app, world, owner, today)
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
        phrasing, prompt = _phrase(rng, by_address, who=who, subject=subject, body=body)
        return TaskDraft(
            prompt=prompt,
            env_variables=owner.env(today),
            reference_solution=[call("search_contacts", query=query)],
            expected_answer=f"I cannot send it: {who} is not in your contacts, and new messages may only go to "
                            "your contacts.",
            checks=_impossible_checks("send_message"),
            difficulty=2,
            metadata={"phrasing": phrasing, "recipient": who},
        )

    return generate


def task_families(app: App) -> list[TaskFamily]:
    """All families, bound to `app` so generators can run its tools on the seed."""
    return [
        TaskFamily("latest_sender_about_topic", "lookup", latest_sender_about_topic(app)),
        TaskFamily("attachment_name", "lookup", attachment_name(app)),
        TaskFamily("send_to_contact", "write", send_to_contact(app)),
        TaskFamily("cancel_meeting", "write", cancel_meeting(app)),
        TaskFamily("forward_latest_about_topic", "search_choose_write", forward_latest_about_topic(app)),
        TaskFamily("move_latest_unread_from_sender", "search_choose_write", move_latest_unread_from_sender(app)),
        TaskFamily("reply_to_last_from", "search_choose_write", reply_to_last_from(app)),
        TaskFamily("triage_unread_from_sender", "multi_step", triage_unread_from_sender(app)),
        TaskFamily("accept_invites_without_clashes", "multi_step", accept_invites_without_clashes(app)),
        TaskFamily("agenda_for_day", "context", agenda_for_day(app)),
        TaskFamily("schedule_meeting", "context", schedule_meeting(app)),
        TaskFamily("reply_to_missing_message", "impossible", reply_to_missing_message(app)),
        TaskFamily("accept_cancelled_invite", "impossible", accept_cancelled_invite(app)),
        TaskFamily("send_to_non_contact", "impossible", send_to_non_contact(app)),
    ]

