"""mail + drive: the mailbox and the Drive of the same person, over one company directory.

Every mailbox owner also has a Drive, and colleagues who write to them are Drive users too, so a
request can start in one app and finish in the other: share a file with whoever just emailed and
answer that email, share a file with everyone who accepted a meeting, ask a file's owner for edit
access by email, and refuse when the rules of either app forbid it (the sender is outside the
directory, I only view the file, the owner is not in my contacts).
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import kit
from toolgym.envs.app import TaskDraft
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, only
from toolgym.envs.multi.base import (
    MultiTaskFamily,
    Scratch,
    Unusable,
    Worlds,
    choice,
    day_phrases,
    draft,
    guarded,
    refusal,
)
from toolgym.schema import AnswerContains, DiffOnly, ExpectedChange, RowAbsent

TEXTS = kit.module_texts(__file__)

ROLE_WORDS = TEXTS["ROLE_WORDS"]
# words that pick out a kind of file by name: "my most recently changed budget file"
FILE_WORDS = ("budget", "invoice", "report", "roadmap", "onboarding", "proposal", "runbook", "postmortem",
              "mockup", "deck", "agenda", "notes", "forecast", "policy", "checklist", "plan", "spec", "resume")
READABLE_FOLDERS = ("Inbox", "Archive")


def mailbox_users(worlds: Worlds) -> list[dict[str, Any]]:
    """Mailbox owners who also have a Drive (all of them, by the drive seed's design)."""
    drive = {r["username"] for r in worlds["drive"].query("SELECT username FROM users WHERE has_drive=1 ORDER BY id")}
    rows = worlds["mail"].query("SELECT username, name, email FROM users WHERE has_mailbox=1 ORDER BY username")
    return [r for r in rows if r["username"] in drive]


def directory(worlds: Worlds) -> dict[str, dict[str, Any]]:
    """Drive's company directory by lowercase email: who files can be shared with."""
    return {r["email"].lower(): r for r in worlds["drive"].query("SELECT username, name, email FROM users ORDER BY id")}


def setup(rng: random.Random, worlds: Worlds) -> tuple[dict[str, Any], dict[str, str], Scratch]:
    me = choice(rng, mailbox_users(worlds))
    env = kit.env_vars(me["username"], me["name"], kit.random_day(rng))
    return me, env, worlds.scratch(env)


def exact_file(scratch: Scratch, name: str) -> dict[str, Any] | None:
    """The one file I can open that has exactly this name, or None if there are several (ambiguous)."""
    hits = [f for f in scratch("search_files", query=name, limit=50)["files"] if f["name"].lower() == name.lower()]
    return hits[0] if len(hits) == 1 else None


def newest_with_word(scratch: Scratch, word: str) -> dict[str, Any] | None:
    """My most recently changed file with `word` in its name, unless that is a tie."""
    files = scratch("search_files", query=word, owner="me", limit=50)["files"]
    if not files or (len(files) > 1 and files[0]["modified_at"] == files[1]["modified_at"]):
        return None
    return files[0]


def no_access(worlds: Worlds, scratch: Scratch, file_id: int, username: str) -> bool:
    """`username` cannot open the file today and holds no share of it dated later (which a share would update)."""
    if any(a["username"] == username for a in scratch("get_file", file_id=file_id)["access"]):
        return False
    return worlds["drive"].one("SELECT id FROM permissions WHERE file_id=? AND grantee=?", (file_id, username)) is None


def pick_own_file(rng: random.Random, worlds: Worlds, scratch: Scratch, grantees: list[str]) -> tuple[dict, str, list]:
    """A file of mine none of `grantees` can open, how the prompt names it, and the gold call that finds it.

    Half the time by its exact name, half the time as 'my most recently changed <word> file'.
    """
    if rng.random() < 0.5:
        mine = scratch("search_files", owner="me", limit=50)["files"]
        for candidate in rng.sample(mine, min(len(mine), 6)):
            file = exact_file(scratch, candidate["name"])
            if file and all(no_access(worlds, scratch, file["id"], g) for g in grantees):
                return file, file["name"], [kit.call("search_files", query=file["name"])]
        raise Unusable("no nameable file")
    names = " ".join(f["name"].lower() for f in scratch("search_files", owner="me", limit=50)["files"])
    word = choice(rng, [w for w in FILE_WORDS if w in names])
    file = newest_with_word(scratch, word)
    if file is None or not all(no_access(worlds, scratch, file["id"], g) for g in grantees):
        raise Unusable("no clear newest file")
    return file, f"my most recently changed {word} file", [kit.call("search_files", query=word, owner="me")]


def share_rows(file: dict[str, Any], grantee: str, role: str, me: str) -> tuple[list, list[ExpectedChange]]:
    """Checks that `grantee` got `role` on the file, and the changes that share makes (permission + activity)."""
    where = {"file_id": file["id"], "grantee": grantee}
    checks = [
        has_row("drive.permissions", where, f"{file['name']} shared with {grantee}", weight=2.0, count=1),
        field_is("drive.permissions", where, "role", role, f"{grantee} is a {role}", weight=1.0),
    ]
    expected = [inserted("drive.permissions", where),
                inserted("drive.activity", {"actor": me, "action": "share", "file_id": file["id"]})]
    return checks, expected


def latest_from(scratch: Scratch, sender: dict[str, Any]) -> dict[str, Any]:
    """The newest message a person sent me, found the way an agent would: by their name."""
    hits = scratch("search_messages", sender=sender["name"], limit=50)["messages"]
    if not hits or any(h["sender_address"].lower() != sender["email"].lower() for h in hits):
        raise Unusable("the sender's name is ambiguous")
    if hits[0]["folder"] not in READABLE_FOLDERS:
        raise Unusable("their latest message is not in the inbox or archive")
    return hits[0]


# -- share with the sender and answer ------------------------------------------------------------------

SENDER_PHRASINGS = TEXTS["SENDER_PHRASINGS"]


@guarded
def share_with_sender(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """Find a sender's latest mail, share a Drive file with them, and reply to that mail (mail -> drive -> mail)."""
    me, env, scratch = setup(rng, worlds)
    people = directory(worlds)
    inbox = scratch("list_messages", folder="Inbox", limit=50)["messages"]
    senders = sorted({m["sender_address"].lower() for m in inbox} - {me["email"].lower()})
    sender = people.get(choice(rng, senders))
    if sender is None:
        raise Unusable("the sender is not in the directory")
    message = latest_from(scratch, sender)
    file, named, finds = pick_own_file(rng, worlds, scratch, [sender["username"]])
    role = rng.choice(sorted(ROLE_WORDS))
    first = sender["name"].split()[0]
    writes = [
        kit.call("share_file", file_id=file["id"], username=sender["username"], role=role),
        kit.call("reply_to_message", message_id=message["id"],
             body=f"Hi {first}, I've shared {file['name']} with you on Drive ({role}).\n\n{me['name'].split()[0]}"),
    ]
    scratch.rehearse(writes)
    index, prompt = kit.phrase(rng, SENDER_PHRASINGS, sender=sender["name"], file=named,
                           role_words=rng.choice(ROLE_WORDS[role]))
    checks, expected = share_rows(file, sender["username"], role, me["username"])
    reply = {"owner": me["username"], "in_reply_to": message["id"]}
    earlier = len(worlds["mail"].query(
        "SELECT id FROM messages WHERE owner=? AND in_reply_to=? AND to_addresses=? ORDER BY id",
        (me["username"], message["id"], sender["email"].lower())))
    checks += [
        has_row("mail.messages", {**reply, "to_addresses": sender["email"].lower()},
                f"replied to message {message['id']}", weight=2.0, count=earlier + 1),
        only("only the share and the reply", [*expected, inserted("mail.messages", reply)], weight=2.0),
        AnswerContains(values=[file["name"]], weight=1.0, label="names the file"),
    ]
    return draft(
        prompt, env, [kit.call("search_messages", sender=sender["name"]), *finds, *writes],
        f"I shared {file['name']} with {sender['name']} as {role} and replied to their email "
        f"'{message['subject']}'.",
        checks, 3, index, message_id=message["id"], file_id=file["id"],
    )


# -- share with the people who accepted a meeting -------------------------------------------------------

ATTENDEE_PHRASINGS = TEXTS["ATTENDEE_PHRASINGS"]


@guarded
def share_with_attendees(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """Read a meeting's responses in mail and share a Drive file with exactly the people who accepted."""
    me, env, scratch = setup(rng, worlds)
    today = dt.date.fromisoformat(env["CURRENT_DATE"])
    end = today + dt.timedelta(days=21)
    mine = [e for e in scratch("list_events", date=today.isoformat(), end_date=end.isoformat())
            if e["my_role"] == "organizer"]
    event = scratch("get_event", event_id=choice(rng, mine)["id"])
    day = dt.date.fromisoformat(event["start"][:10])
    if [e["title"] for e in scratch("list_events", date=day.isoformat())].count(event["title"]) != 1:
        raise Unusable("two meetings share the title that day")
    people = directory(worlds)
    accepted = [people.get(a["email"].lower()) for a in event["attendees"] if a["response"] == "accepted"]
    if not accepted or None in accepted:
        raise Unusable("no accepted attendee, or one outside the directory")
    others = [people[a["email"].lower()] for a in event["attendees"]
              if a["response"] != "accepted" and a["email"].lower() in people]
    file, named, finds = pick_own_file(rng, worlds, scratch, [p["username"] for p in accepted])
    role = rng.choice(sorted(ROLE_WORDS))
    writes = [kit.call("share_file", file_id=file["id"], username=p["username"], role=role)
              for p in sorted(accepted, key=lambda p: p["username"])]
    scratch.rehearse(writes)
    said, argument = rng.choice(day_phrases(today, day))
    index, prompt = kit.phrase(rng, ATTENDEE_PHRASINGS, file=named, role_words=rng.choice(ROLE_WORDS[role]),
                           title=event["title"], day=said)
    checks: list = []
    expected: list[ExpectedChange] = []
    for person in accepted:
        rows, changes = share_rows(file, person["username"], role, me["username"])
        checks += rows
        expected += changes
    checks += [RowAbsent(table="drive.permissions", where={"file_id": file["id"], "grantee": p["username"]},
                         weight=1.0, label=f"not shared with {p['username']} (did not accept)")
               for p in others if no_access(worlds, scratch, file["id"], p["username"])]
    checks += [
        DiffOnly(expected=expected, weight=2.0, label="only shares with the accepted attendees"),
        AnswerContains(values=[p["name"] for p in accepted], weight=1.0, label="names who got access"),
    ]
    return draft(
        prompt, env, [kit.call("list_events", date=argument), kit.call("get_event", event_id=event["id"]),
                      *finds, *writes],
        f"I shared {file['name']} as {role} with "
        f"{', '.join(p['name'] for p in accepted)}, who accepted '{event['title']}'.",
        checks, 3, index, event_id=event["id"], file_id=file["id"], grantees=len(accepted),
    )


# -- ask the owner for edit access -----------------------------------------------------------------------

ACCESS_PHRASINGS = TEXTS["ACCESS_PHRASINGS"]


def _shared_file_owner(rng: random.Random, worlds: Worlds, scratch: Scratch) -> tuple[dict, dict]:
    """A file shared with me below editor, nameable, and its owner's directory row."""
    files = [f for f in scratch("search_files", limit=50)["files"] if f["my_role"] in ("viewer", "commenter")]
    file = exact_file(scratch, choice(rng, files)["name"])
    if file is None:
        raise Unusable("file name is ambiguous")
    owner = worlds["drive"].one("SELECT u.username, u.name, u.email FROM files f JOIN users u ON u.username = f.owner "
                                "WHERE f.id=?", (file["id"],))
    if owner is None:
        raise Unusable("no owner")
    return file, owner


def in_contacts(scratch: Scratch, person: dict[str, Any]) -> bool:
    hits = scratch("search_contacts", query=person["name"])
    return any(h["email"].lower() == person["email"].lower() for h in hits)


@guarded
def request_edit_access(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """A Drive file I only view: find its owner in Drive and email them from my mailbox (drive -> mail)."""
    me, env, scratch = setup(rng, worlds)
    file, owner = _shared_file_owner(rng, worlds, scratch)
    if not in_contacts(scratch, owner):
        raise Unusable("the owner is not in my contacts")
    subject = rng.choice(("Edit access to {name}", "Request: edit rights on {name}",
                          "Could you make me an editor of {name}?")).format(name=file["name"])
    send = kit.call("send_message", to=[owner["email"]], subject=subject,
                body=f"Hi {owner['name'].split()[0]},\n\nCould you give me edit access to {file['name']}? "
                     f"I currently only have {file['my_role']} access.\n\nThanks,\n{me['name'].split()[0]}")
    scratch.rehearse([send])
    index, prompt = kit.phrase(rng, ACCESS_PHRASINGS, file=file["name"], subject=subject)
    sent = {"owner": me["username"], "subject": subject}
    checks = [
        has_row("mail.messages", {**sent, "to_addresses": owner["email"].lower(), "cc_addresses": ""},
                f"emailed {owner['email']}", weight=3.0, count=1),
        only("only the email; Drive unchanged", [inserted("mail.messages", sent)], weight=2.0),
        AnswerContains(values=[owner["name"]], weight=1.0, label="names the owner"),
    ]
    return draft(
        prompt, env, [kit.call("search_files", query=file["name"]), kit.call("get_file", file_id=file["id"]),
                      kit.call("search_contacts", query=owner["name"]), send],
        f"{file['name']} is owned by {owner['name']}; I emailed them asking for edit access.",
        checks, 2, index, file_id=file["id"], owner=owner["username"],
    )


# -- impossible -----------------------------------------------------------------------------------------

@guarded
def share_or_ask_impossible(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """The same requests, where a rule forbids them: an external sender, a file I only view, an owner
    outside my contacts. Nothing may change in either app."""
    me, env, scratch = setup(rng, worlds)
    people = directory(worlds)
    kind = rng.choice(("external_sender", "view_only_file", "owner_not_in_contacts"))
    if kind == "owner_not_in_contacts":
        file, owner = _shared_file_owner(rng, worlds, scratch)
        if in_contacts(scratch, owner):
            raise Unusable("the owner is a contact")
        subject = f"Edit access to {file['name']}"
        index, prompt = kit.phrase(rng, ACCESS_PHRASINGS, file=file["name"], subject=subject)
        index += len(SENDER_PHRASINGS)
        reason = (f"{owner['name']}, who owns {file['name']}, is not in your contacts, and new emails may only "
                  "go to contacts")
        gold = [kit.call("search_files", query=file["name"]), kit.call("get_file", file_id=file["id"]),
                kit.call("search_contacts", query=owner["name"])]
        return refusal(env, prompt, index, kind, reason, gold, ["send_message"])
    inbox = scratch("list_messages", folder="Inbox", limit=50)["messages"]
    contacts = {c["email"].lower() for c in scratch("search_contacts")}
    if kind == "external_sender":
        addresses = sorted(({m["sender_address"].lower() for m in inbox} & contacts) - set(people))
        address = choice(rng, addresses)
        sender_row = next(m for m in inbox if m["sender_address"].lower() == address)
        sender = {"name": sender_row["sender"], "email": sender_row["sender_address"].lower(), "username": None}
        message = latest_from(scratch, sender)
        file, named, finds = pick_own_file(rng, worlds, scratch, [])
        if scratch.fails("share_file", file_id=file["id"], username=sender["email"], role="viewer") is None:
            raise Unusable("the share would work")
        reason = f"{sender['name']} ({sender['email']}) is not in the company directory, so Drive cannot share with them"
    else:
        senders = sorted(({m["sender_address"].lower() for m in inbox} & set(people)) - {me["email"].lower()})
        sender = people[choice(rng, senders)]
        message = latest_from(scratch, sender)
        file, _ = _shared_file_owner(rng, worlds, scratch)
        if file["my_role"] == "owner" or not no_access(worlds, scratch, file["id"], sender["username"]):
            raise Unusable("sharing is allowed or pointless")
        named, finds = file["name"], [kit.call("search_files", query=file["name"])]
        reason = f"you only have {file['my_role']} access to {file['name']}; only its owner or an editor can share it"
    index, prompt = kit.phrase(rng, SENDER_PHRASINGS, sender=sender["name"], file=named,
                           role_words=rng.choice(ROLE_WORDS["viewer"]))
    gold = [kit.call("search_messages", sender=sender["name"]), *finds]
    metadata_extra = {"message_id": message["id"], "file_id": file["id"]}
    return refusal(env, prompt, index, kind, reason, gold, ["share_file", "reply_to_message"], metadata_extra)



FAMILIES: tuple[MultiTaskFamily, ...] = (
    MultiTaskFamily("share_file_with_sender_and_reply", "multi_step", share_with_sender),
    MultiTaskFamily("share_file_with_meeting_attendees", "search_choose_write", share_with_attendees),
    MultiTaskFamily("email_owner_for_edit_access", "write", request_edit_access),
    MultiTaskFamily("share_or_ask_impossible", "impossible", share_or_ask_impossible),
)
