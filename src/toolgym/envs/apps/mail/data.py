"""Seed data for the mail app: 20 mailboxes of the shared population, with threads, notifications,
spam, contacts, custom folders, and a calendar that has planted "busy days" (pending invites next to
existing meetings, some clashing) and cancelled meetings with open invitations.

Everything comes from the seeded `fake` and `rng` in a fixed call order, so the database is
byte-identical on every build.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from faker import Faker

from toolgym.envs.apps.mail.content import (
    AUTOMATED,
    CONFERENCES,
    CONTENT_TYPES,
    CUSTOM_FOLDERS,
    DEPARTMENTS,
    EVENT_TITLES,
    GENERIC_REPLIES,
    LOCATIONS,
    PRODUCTS,
    ROLES,
    SPAM,
    SYSTEM_FOLDERS,
    TEAMS,
    TOPICS,
    Topic,
)
from toolgym.envs.people import Person, population

MAILBOX_COUNT = 20
MAIL_START = dt.datetime(2026, 3, 1, 7, 0)
MAIL_END = dt.datetime(2026, 9, 12, 18, 0)
CAL_START = dt.date(2026, 3, 2)
CAL_END = dt.date(2026, 9, 30)

TEAM_NAMES = ("Platform", "Growth", "Finance ops", "Customer", "Analytics")
SYNC_SLOTS = (("09:00", "09:30"), ("09:30", "10:00"), ("11:00", "11:30"), ("16:30", "17:00"))

# Day layouts for busy days: existing meetings, pending invites that clash with one, free invites.
BUSY_LAYOUTS: tuple[dict[str, list[tuple[str, str]]], ...] = (
    {"commit": [("09:00", "10:00")], "clash": [("09:30", "10:30")], "free": [("11:00", "11:30"), ("14:00", "15:00")]},
    {"commit": [("10:00", "11:00"), ("15:00", "16:00")], "clash": [("15:30", "16:30")], "free": [("13:00", "14:00")]},
    {"commit": [("13:00", "14:30")], "clash": [("14:00", "14:30")], "free": [("09:00", "09:45"), ("16:00", "17:00")]},
    {"commit": [("11:00", "12:00"), ("14:00", "15:00")], "clash": [("10:30", "11:30"), ("14:30", "15:30")],
     "free": [("16:00", "16:30")]},
    {"commit": [("08:30", "09:30")], "clash": [("09:00", "09:30")], "free": [("09:30", "10:00"), ("15:00", "15:45")]},
    {"commit": [("16:00", "17:00")], "clash": [("15:30", "16:15")], "free": [("10:00", "10:30"), ("11:00", "12:00"),
                                                                             ("13:30", "14:00")]},
)


@dataclass
class Party:
    """Someone who mails or meets: a directory person or an external contact."""

    name: str
    email: str
    username: str | None = None  # set for directory (population) people

    @property
    def first(self) -> str:
        return self.name.split()[0]


@dataclass
class Mailbox:
    owner: Person
    folders: dict[str, int] = field(default_factory=dict)
    contacts: list[Party] = field(default_factory=list)
    frequent: list[Party] = field(default_factory=list)
    strangers: list[Party] = field(default_factory=list)  # colleagues not in contacts
    busy_days: set[dt.date] = field(default_factory=set)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _stamp(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M")


def _random_moment(rng: random.Random, start: dt.datetime, end: dt.datetime) -> dt.datetime:
    span_days = (end.date() - start.date()).days
    day = start.date() + dt.timedelta(days=rng.randint(0, span_days))
    if day.weekday() >= 5 and rng.random() < 0.8:  # little weekend mail
        day += dt.timedelta(days=7 - day.weekday())
    return dt.datetime.combine(day, dt.time(rng.randint(7, 18), rng.randint(0, 59)))


def _weekday(rng: random.Random, start: dt.date, end: dt.date, avoid: set[dt.date] | None = None) -> dt.date:
    while True:
        day = start + dt.timedelta(days=rng.randint(0, (end - start).days))
        if day.weekday() < 5 and (not avoid or day not in avoid):
            return day


def _header(addresses: list[str]) -> str:
    return ", ".join(sorted({a.lower() for a in addresses}))


class MailSeeder:
    """Fills the schema; one instance per seed run."""

    def __init__(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        self.db = db
        self.fake = fake
        self.rng = rng
        self.people = population()
        self.thread_counter = 0
        self.external_names: set[str] = {p.name for p in self.people}

    # -- helpers ------------------------------------------------------------------------------
    def insert(self, table: str, row: dict[str, Any]) -> int:
        columns = ", ".join(f'"{c}"' for c in row)
        marks = ", ".join("?" for _ in row)
        cur = self.db.execute(f'INSERT INTO {table} ({columns}) VALUES ({marks})', tuple(row.values()))
        return int(cur.lastrowid or 0)

    def party(self, person: Person) -> Party:
        return Party(person.name, person.email, person.username)

    def external_party(self) -> tuple[Party, str]:
        while True:
            first, last = self.fake.first_name(), self.fake.last_name()
            name = f"{first} {last}"
            if name not in self.external_names:
                break
        self.external_names.add(name)
        company = self.fake.company()
        domain = _slug(company.split()[0].rstrip(",")).replace("_", "") + self.rng.choice([".com", ".io", ".co", ".net"])
        local = self.rng.choice([f"{first}.{last}", f"{first[0]}{last}", f"{first}"]).lower().replace("'", "")
        return Party(name, f"{local}@{domain}", None), company

    def fill(self, template: str, values: dict[str, str]) -> str:
        return template.format(**values)

    # -- users ----------------------------------------------------------------------------------
    def seed_users(self) -> list[Mailbox]:
        departments = sorted(DEPARTMENTS)
        for person in self.people:
            department = self.rng.choice(departments)
            self.insert("users", {
                "username": person.username, "name": person.name, "email": person.email, "phone": person.phone,
                "city": person.city, "department": department,
                "job_title": self.rng.choice(DEPARTMENTS[department]), "has_mailbox": 0,
            })
        chosen = sorted(self.rng.sample(range(len(self.people)), MAILBOX_COUNT))
        mailboxes = []
        for index in chosen:
            owner = self.people[index]
            self.db.execute("UPDATE users SET has_mailbox=1 WHERE username=?", (owner.username,))
            mailboxes.append(Mailbox(owner))
        return mailboxes

    # -- folders and contacts -------------------------------------------------------------------
    def seed_folders(self, box: Mailbox) -> None:
        for name in SYSTEM_FOLDERS:
            box.folders[name] = self.insert("folders", {
                "owner": box.owner.username, "name": name, "kind": "system", "created_at": "2024-09-02",
            })
        for name in sorted(self.rng.sample(CUSTOM_FOLDERS, self.rng.randint(2, 4))):
            created = dt.date(2025, 1, 6) + dt.timedelta(days=self.rng.randint(0, 400))
            box.folders[name] = self.insert("folders", {
                "owner": box.owner.username, "name": name, "kind": "custom", "created_at": created.isoformat(),
            })

    def seed_contacts(self, box: Mailbox) -> None:
        others = [p for p in self.people if p.username != box.owner.username]
        colleagues = self.rng.sample(others, self.rng.randint(10, 14))
        rows: list[tuple[Party, str, str]] = [(self.party(p), p.company, p.phone) for p in colleagues]
        for _ in range(self.rng.randint(3, 5)):
            party, company = self.external_party()
            phone = f"+1-{self.rng.randint(200, 989)}-{self.rng.randint(200, 989)}-{self.rng.randint(1000, 9999)}"
            rows.append((party, company, phone))
        for party, company, phone in sorted(rows, key=lambda r: r[0].name):
            self.insert("contacts", {
                "owner": box.owner.username, "name": party.name, "email": party.email,
                "phone": phone if self.rng.random() < 0.85 else None, "company": company,
                "is_favorite": int(self.rng.random() < 0.2),
            })
            box.contacts.append(party)
        box.frequent = self.rng.sample(box.contacts, 3)
        colleague_names = {c.name for c in box.contacts}
        box.strangers = [self.party(p) for p in self.rng.sample(others, 12) if p.name not in colleague_names][:6]

    # -- mail -----------------------------------------------------------------------------------
    def slot_values(self, when: dt.datetime, company: str | None = None) -> dict[str, str]:
        due = when.date() + dt.timedelta(days=self.rng.randint(5, 30))
        company = company or self.fake.company()
        city = self.fake.city()
        product = self.rng.choice(PRODUCTS)
        conf = self.rng.choice(CONFERENCES)
        return {
            "company": company, "company_file": _slug(company.split()[0].rstrip(",")),
            "city": city, "city_file": _slug(city),
            "amount": f"{self.rng.randint(3, 480) * 250:,}", "date": f"{due:%B} {due.day}",
            "day": self.rng.choice(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]),
            "num": str(self.rng.randint(1000, 9999)), "q": str((when.month - 1) // 3 + 1 + self.rng.randint(0, 1)),
            "product": product, "product_file": product.lower(), "role": self.rng.choice(ROLES),
            "team": self.rng.choice(TEAMS), "pct": str(self.rng.choice([3, 5, 8, 10, 12, 15])),
            "v": str(self.rng.randint(1, 4)), "n": str(self.rng.randint(2, 9)), "newhire": self.fake.name(),
            "conf": conf, "conf_file": conf.lower(), "code": self.fake.bothify("??####").upper(),
        }

    def pick_correspondent(self, box: Mailbox) -> Party:
        roll = self.rng.random()
        if roll < 0.45:
            return self.rng.choice(box.frequent)
        if roll < 0.85:
            return self.rng.choice(box.contacts)
        return self.rng.choice(box.strangers)

    def received_folder(self, box: Mailbox) -> int:
        roll = self.rng.random()
        custom = [n for n in box.folders if n not in SYSTEM_FOLDERS]
        if roll < 0.62:
            return box.folders["Inbox"]
        if roll < 0.80:
            return box.folders["Archive"]
        if roll < 0.95:
            return box.folders[self.rng.choice(custom)]
        return box.folders["Deleted Items"]

    def thread(self, box: Mailbox, topic: Topic) -> list[dict[str, Any]]:
        owner = self.party(box.owner)
        first_other = self.pick_correspondent(box)
        others = [first_other]
        if self.rng.random() < 0.3:
            extra = self.pick_correspondent(box)
            if extra.email != first_other.email:
                others.append(extra)
        participants = [owner, *others]
        self.thread_counter += 1
        thread_id = f"th-{self.thread_counter:05d}"
        when = _random_moment(self.rng, MAIL_START, MAIL_END - dt.timedelta(days=6))
        values = self.slot_values(when)
        count = self.rng.choice([1, 1, 2, 2, 3, 3, 4])
        sender = owner if self.rng.random() < 0.3 else first_other
        subject = self.fill(self.rng.choice(topic.subjects), values)
        messages: list[dict[str, Any]] = []
        for position in range(count):
            recipients = [p for p in participants if p.email != sender.email]
            addressee = recipients[0]
            text_values = {**values, "first": addressee.first, "me": sender.first}
            if position == 0:
                body = self.fill(self.rng.choice(topic.openers), text_values)
            else:
                line = self.rng.choice(topic.replies + GENERIC_REPLIES)
                greeting = f"Hi {addressee.first},\n\n" if self.rng.random() < 0.5 else ""
                body = f"{greeting}{self.fill(line, text_values)}\n\n{sender.first}"
            cc = []
            if self.rng.random() < 0.15:
                cc_party = self.rng.choice(box.contacts)
                if cc_party.email not in {p.email for p in participants}:
                    cc = [cc_party.email]
            mine = sender.email == owner.email
            files = []
            if position == 0 and topic.attachments and self.rng.random() < 0.45:
                files = [self.fill(self.rng.choice(topic.attachments), values)]
            messages.append({
                "owner": box.owner.username,
                "folder_id": box.folders["Sent"] if mine else self.received_folder(box),
                "thread_id": thread_id, "sender_name": sender.name, "sender_address": sender.email,
                "to_addresses": _header([p.email for p in recipients]), "cc_addresses": _header(cc),
                "subject": subject if position == 0 else f"Re: {subject}", "body": body,
                "sent_at": _stamp(when), "is_read": 1 if mine else int(self.rng.random() < 0.55),
                "importance": "high" if self.rng.random() < 0.08 else "normal", "_files": files,
                "_reply": position > 0,
            })
            when = when + dt.timedelta(hours=self.rng.randint(1, 50))
            if when.hour < 7 or when.hour > 18:
                when = dt.datetime.combine(when.date() + dt.timedelta(days=1), dt.time(self.rng.randint(7, 11),
                                                                                      self.rng.randint(0, 59)))
            if mine:
                sender = self.rng.choice(others)
            else:
                sender = owner if self.rng.random() < 0.6 or len(others) == 1 else self.rng.choice(
                    [o for o in others if o.email != sender.email])
        return messages

    def notifications(self, box: Mailbox) -> list[dict[str, Any]]:
        rows = []
        owner = box.owner
        for _ in range(self.rng.randint(5, 8)):
            name, address, subjects, body = self.rng.choice(AUTOMATED)
            when = _random_moment(self.rng, MAIL_START, MAIL_END)
            values = {**self.slot_values(when), "first": owner.first_name}
            self.thread_counter += 1
            folder = box.folders["Inbox"] if self.rng.random() < 0.7 else box.folders[
                self.rng.choice(["Archive", "Deleted Items"])]
            rows.append({
                "owner": owner.username, "folder_id": folder, "thread_id": f"th-{self.thread_counter:05d}",
                "sender_name": name, "sender_address": address, "to_addresses": owner.email, "cc_addresses": "",
                "subject": self.fill(self.rng.choice(subjects), values), "body": self.fill(body, values),
                "sent_at": _stamp(when), "is_read": int(self.rng.random() < 0.5), "importance": "normal",
                "_files": [], "_reply": False,
            })
        for name, address, subject, body in self.rng.sample(SPAM, self.rng.randint(1, 3)):
            when = _random_moment(self.rng, MAIL_START, MAIL_END)
            self.thread_counter += 1
            rows.append({
                "owner": owner.username, "folder_id": box.folders["Junk Email"],
                "thread_id": f"th-{self.thread_counter:05d}", "sender_name": name, "sender_address": address,
                "to_addresses": owner.email, "cc_addresses": "", "subject": subject, "body": body,
                "sent_at": _stamp(when), "is_read": int(self.rng.random() < 0.3), "importance": "normal",
                "_files": [], "_reply": False,
            })
        return rows

    def seed_mail(self, box: Mailbox) -> None:
        rows: list[dict[str, Any]] = []
        for topic in self.rng.sample(TOPICS, self.rng.randint(10, 13)):
            rows.extend(self.thread(box, topic))
        rows.extend(self.notifications(box))
        rows.sort(key=lambda r: (r["sent_at"], r["thread_id"]))
        last_in_thread: dict[str, int] = {}
        for row in rows:
            files = row.pop("_files")
            is_reply = row.pop("_reply")
            row["in_reply_to"] = last_in_thread.get(row["thread_id"]) if is_reply else None
            message_id = self.insert("messages", row)
            last_in_thread[row["thread_id"]] = message_id
            for file_name in files:
                extension = file_name.rsplit(".", 1)[-1]
                self.insert("attachments", {
                    "message_id": message_id, "file_name": file_name,
                    "size_bytes": self.rng.randint(18, 4200) * 1024 + self.rng.randint(0, 1023),
                    "content_type": CONTENT_TYPES[extension],
                })

    # -- calendar -------------------------------------------------------------------------------
    def event(self, organizer: Party, day: dt.date, start: str, end: str, invitees: list[tuple[Party, str]],
              status: str = "scheduled", title: str | None = None) -> int:
        other = invitees[0][0] if invitees else organizer
        values = {"first": other.first, "product": self.rng.choice(PRODUCTS), "company": self.fake.company(),
                  "role": self.rng.choice(ROLES)}
        created = day - dt.timedelta(days=self.rng.randint(3, 25))
        event_id = self.insert("calendar_events", {
            "organizer": organizer.username, "title": title or self.rng.choice(EVENT_TITLES).format(**values),
            "description": self.rng.choice(["", "Agenda to follow.", "Please review the doc beforehand.",
                                            "Dial-in details below.", "Bring your laptop.", "Notes doc linked."]),
            "start": f"{day.isoformat()}T{start}", "end": f"{day.isoformat()}T{end}",
            "location": self.rng.choice(LOCATIONS), "status": status, "created_at": created.isoformat(),
        })
        for party, response in invitees:
            responded = None
            if response != "pending":
                responded = min(day, created + dt.timedelta(days=self.rng.randint(1, 3))).isoformat()
            self.insert("event_invites", {
                "event_id": event_id, "invitee_email": party.email, "invitee_name": party.name,
                "response": response, "responded_at": responded,
            })
        return event_id

    def random_slot(self) -> tuple[str, str]:
        start = dt.datetime(2026, 1, 1, self.rng.randint(8, 16), self.rng.choice([0, 30]))
        end = start + dt.timedelta(minutes=self.rng.choice([30, 30, 45, 60, 60, 90]))
        return start.strftime("%H:%M"), end.strftime("%H:%M")

    def response(self, accepted: float, declined: float) -> str:
        roll = self.rng.random()
        return "accepted" if roll < accepted else "declined" if roll < accepted + declined else "pending"

    def directory_colleagues(self, box: Mailbox) -> list[Party]:
        return [c for c in box.contacts if c.username is not None]

    def seed_calendar(self, box: Mailbox) -> None:
        me = self.party(box.owner)
        colleagues = self.directory_colleagues(box)
        box.busy_days = set()
        while len(box.busy_days) < 3:
            box.busy_days.add(_weekday(self.rng, dt.date(2026, 4, 6), dt.date(2026, 8, 31)))
        for _ in range(4):  # meetings I organize
            day = _weekday(self.rng, CAL_START, CAL_END, box.busy_days)
            guests = self.rng.sample(box.contacts, self.rng.randint(1, 3))
            status = "cancelled" if self.rng.random() < 0.1 else "scheduled"
            self.event(me, day, *self.random_slot(), [(g, self.response(0.6, 0.15)) for g in guests], status)
        for _ in range(6):  # meetings others invite me to
            day = _weekday(self.rng, CAL_START, CAL_END, box.busy_days)
            host = self.rng.choice(colleagues)
            guests = [(me, self.response(0.5, 0.15))]
            guests += [(g, self.response(0.6, 0.15)) for g in self.rng.sample(box.contacts, self.rng.randint(0, 2))
                       if g.email != host.email]
            self.event(host, day, *self.random_slot(), guests)
        for _ in range(3):  # cancelled meetings whose invitation I never answered
            day = _weekday(self.rng, dt.date(2026, 4, 3), dt.date(2026, 9, 10), box.busy_days)
            host = self.rng.choice(colleagues)
            self.event(host, day, *self.random_slot(), [(me, "pending")], status="cancelled")
        for day in sorted(box.busy_days):
            layout = self.rng.choice(BUSY_LAYOUTS)
            for start, end in layout["commit"]:
                if self.rng.random() < 0.5:
                    guests = self.rng.sample(box.contacts, self.rng.randint(1, 2))
                    self.event(me, day, start, end, [(g, self.response(0.7, 0.1)) for g in guests])
                else:
                    self.event(self.rng.choice(colleagues), day, start, end, [(me, "accepted")])
            for start, end in layout["clash"] + layout["free"]:
                host = self.rng.choice(colleagues)
                self.event(host, day, start, end, [(me, "pending")])


    def seed_team_syncs(self, mailboxes: list[Mailbox]) -> None:
        """Biweekly syncs shared by teams of four mailbox owners: dense, overlapping calendars."""
        members = list(mailboxes)
        self.rng.shuffle(members)
        for index in range(0, len(members), 4):
            team = members[index:index + 4]
            name = TEAM_NAMES[index // 4]
            weekday = self.rng.randint(0, 4)
            start, end = self.rng.choice(SYNC_SLOTS)
            day = CAL_START + dt.timedelta(days=(weekday - CAL_START.weekday()) % 7)
            organizer = self.party(team[0].owner)
            while day <= CAL_END:
                guests = [(self.party(m.owner), self.response(0.85, 0.1)) for m in team[1:]]
                self.event(organizer, day, start, end, guests, title=f"{name} biweekly sync")
                day += dt.timedelta(days=14)


def seed_mail(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    """Entry point: MailApp.seed_data."""
    seeder = MailSeeder(db, fake, rng)
    mailboxes = seeder.seed_users()
    for box in mailboxes:
        seeder.seed_folders(box)
        seeder.seed_contacts(box)
    for box in mailboxes:
        seeder.seed_mail(box)
    for box in mailboxes:
        seeder.seed_calendar(box)
    seeder.seed_team_syncs(mailboxes)
