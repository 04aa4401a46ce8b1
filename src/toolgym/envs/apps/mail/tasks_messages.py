"""Mail task families over messages: who wrote last, attachments, sending, forwarding, filing, replying
and triage. Each reads the seed through the app's own tools (`Reader`), so answers follow the tools'
semantics."""

from __future__ import annotations

import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.mail import tools as t
from toolgym.envs.apps.mail.task_common import (
    KEYWORDS,
    REPLY_TEXTS,
    SEND_TEXTS,
    Owner,
    folder_id,
    is_person,
    setup,
)
from toolgym.schema import AnswerContains, DiffOnly, ExpectedChange, FieldEquals, RowExists

TEXTS = kit.module_texts(__file__)


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


def latest_sender_about_topic(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    owner, today = reader.owner, reader.today
    keyword = rng.choice(KEYWORDS)
    found = reader(t.search_messages, query=keyword, limit=50)
    latest = _clear_latest(_received(found["messages"], owner))
    if latest is None:
        return None
    phrasing, prompt = kit.phrase(rng, TEXTS["latest_sender_about_topic"], kw=keyword)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=[kit.call("search_messages", query=keyword)],
        expected_answer=f"The latest email about the {keyword} came from {latest['sender']} "
                        f"({latest['sender_address']}) on {latest['date'][:10]}: \"{latest['subject']}\".",
        checks=[AnswerContains(values=[latest["sender"]], weight=2.0, label="names the sender"), kit.diff_only([], weight=1.0)],
        difficulty=1,
        metadata={"phrasing": phrasing, "message_id": latest["id"]},
)


def attachment_name(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    owner, today = reader.owner, reader.today
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
    hits = reader(t.search_messages, sender=pick["sender_name"], query=pick["subject"])["messages"]
    if [m["id"] for m in hits if m["attachments"]] != [pick["id"]] or not _single_sender(hits):
        return None
    phrasing, prompt = kit.phrase(rng, TEXTS["attachment_name"], sender=pick["sender_name"], subject=pick["subject"])
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=[
            kit.call("search_messages", sender=pick["sender_name"], query=pick["subject"]),
            kit.call("read_message", message_id=pick["id"]),
        ],
        expected_answer=f"The attachment is {pick['file_name']} ({round(pick['size_bytes'] / 1024)} KB).",
        checks=[AnswerContains(values=[pick["file_name"]], weight=2.0, label="names the file"), kit.diff_only([], weight=1.0)],
        difficulty=1,
        metadata={"phrasing": phrasing, "message_id": pick["id"]},
)


def send_to_contact(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    owner, today = reader.owner, reader.today
    contacts = reader(t.search_contacts)
    contact = rng.choice(contacts)
    subject, body = rng.choice(SEND_TEXTS)
    if world.one("SELECT id FROM messages WHERE owner=? AND subject=?", (owner.username, subject)):
        return None
    new_id = kit.next_id(world, "messages")
    phrasing, prompt = kit.phrase(rng, TEXTS["send_to_contact"], name=contact["name"], subject=subject, body=body)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=[
            kit.call("search_contacts", query=contact["name"]),
            kit.call("send_message", to=[contact["email"]], subject=subject, body=body),
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


def forward_latest_about_topic(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    owner, today = reader.owner, reader.today
    keyword = rng.choice(KEYWORDS)
    latest = _clear_latest(_received(reader(t.search_messages, query=keyword, limit=50)["messages"], owner))
    if latest is None:
        return None
    contacts = [c for c in reader(t.search_contacts) if c["email"] != latest["sender_address"].lower()]
    contact = rng.choice(contacts)
    new_id = kit.next_id(world, "messages")
    files = world.query("SELECT id FROM attachments WHERE message_id=? ORDER BY id", (latest["id"],))
    expected = [ExpectedChange(table="messages", op="insert",
                               where={"owner": owner.username, "forwarded_from": latest["id"]})]
    expected += [ExpectedChange(table="attachments", op="insert", where={"message_id": new_id}) for _ in files]
    phrasing, prompt = kit.phrase(rng, TEXTS["forward_latest_about_topic"], kw=keyword, name=contact["name"])
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=[
            kit.call("search_messages", query=keyword),
            kit.call("search_contacts", query=contact["name"]),
            kit.call("forward_message", message_id=latest["id"], to=[contact["email"]]),
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


def move_latest_unread_from_sender(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    owner, today = reader.owner, reader.today
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
    phrasing, prompt = kit.phrase(rng, TEXTS["move_latest_unread_from_sender"], sender=sender, folder=folder)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=[
            kit.call("search_messages", sender=sender, unread_only=True),
            kit.call("move_message", message_id=target["id"], folder=folder),
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


def reply_to_last_from(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    owner, today = reader.owner, reader.today
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
    new_id = kit.next_id(world, "messages")
    phrasing, prompt = kit.phrase(rng, TEXTS["reply_to_last_from"], sender=sender, text=text)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=[
            kit.call("search_messages", sender=sender),
            kit.call("reply_to_message", message_id=target["id"], body=text),
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


def triage_unread_from_sender(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    owner, today = reader.owner, reader.today
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
    gold = [kit.call("search_messages", sender=sender, folder="Inbox", unread_only=True)]
    checks: list = []
    expected = []
    for message in sorted(hits, key=lambda m: m["id"]):
        gold += [kit.call("mark_as_read", message_id=message["id"]),
                 kit.call("move_message", message_id=message["id"], folder=folder)]
        checks += [
            FieldEquals(table="messages", where={"id": message["id"]}, field="is_read", value=1, weight=1.0,
                        label=f"message {message['id']} read"),
            FieldEquals(table="messages", where={"id": message["id"]}, field="folder_id", value=target_folder,
                        weight=1.0, label=f"message {message['id']} in {folder}"),
        ]
        expected.append(ExpectedChange(table="messages", op="update", where={"id": message["id"]},
                                       fields=["is_read", "folder_id"]))
    checks.append(DiffOnly(expected=expected, weight=2.0, label="only those messages changed"))
    phrasing, prompt = kit.phrase(rng, TEXTS["triage_unread_from_sender"], sender=sender, folder=folder)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=gold,
        expected_answer=f"I marked {len(hits)} unread emails from {sender} as read and moved them to {folder}.",
        checks=checks,
        difficulty=3,
        metadata={"phrasing": phrasing, "message_ids": sorted(m["id"] for m in hits)},
)
