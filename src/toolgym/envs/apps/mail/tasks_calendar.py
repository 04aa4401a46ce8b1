"""Mail task families over the calendar: cancelling a meeting, answering invitations, a day's agenda and
scheduling on a relative day."""

from __future__ import annotations

import datetime as dt
import random

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.mail import tools as t
from toolgym.envs.apps.mail.content import LOCATIONS
from toolgym.envs.apps.mail.task_common import (
    MEETING_STARTS,
    MEETING_TITLES,
    Reader,
    overlaps,
    owners,
    pick_listed_day,
    pick_when,
    setup,
)
from toolgym.schema import AnswerContains, DiffOnly, ExpectedChange, FieldEquals, RowExists

TEXTS = kit.module_texts(__file__)


def cancel_meeting(rng: random.Random, world: World) -> TaskDraft | None:
    reader = setup(rng, world)
    owner, today = reader.owner, reader.today
    rows = world.query(
        "SELECT id, title, start FROM calendar_events WHERE organizer=? AND status='scheduled' AND start > ? "
        "ORDER BY start, id",
        (owner.username, f"{today.isoformat()}T23:59"),
)
    if not rows:
        return None
    event = rng.choice(rows)
    day = event["start"][:10]
    same_day = [e for e in reader(t.list_events, date=day) if e["title"] == event["title"]]
    if len(same_day) != 1:
        return None
    when = kit.human_date(dt.date.fromisoformat(day), weekday=True)
    phrasing, prompt = kit.phrase(rng, TEXTS["cancel_meeting"], title=event["title"], date=when)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(today),
        reference_solution=[kit.call("list_events", date=day), kit.call("cancel_event", event_id=event["id"])],
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


def accept_invites_without_clashes(rng: random.Random, world: World) -> TaskDraft | None:
    owner = rng.choice(owners(world))
    when = pick_listed_day(
        rng, world,
        "SELECT DISTINCT substr(e.start, 1, 10) AS day FROM event_invites i JOIN calendar_events e "
        "ON e.id = i.event_id WHERE i.invitee_email=? AND i.response='pending' AND e.status='scheduled' "
        "AND e.start >= '2026-04-01' ORDER BY day",
        (owner.email,),
    )
    if when is None:
        return None
    reader = Reader(world, owner, when.today)
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
    gold = [kit.call("list_invites", date=when.argument), kit.call("list_events", date=when.argument)]
    checks: list = []
    expected = []
    for invite in pending:
        accepted = invite in free
        if accepted or decline:
            response = "accepted" if accepted else "declined"
            gold.append(kit.call("respond_to_invite", event_id=invite["event_id"], response=response))
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
    phrasing, prompt = kit.phrase(rng, TEXTS["accept_invites_without_clashes.decline_phrasings"] if decline else TEXTS["accept_invites_without_clashes.leave_phrasings"], noun=when.noun)
    phrasing += 0 if decline else len(TEXTS["accept_invites_without_clashes.decline_phrasings"])
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(when.today),
        reference_solution=gold,
        expected_answer=answer,
        checks=checks,
        difficulty=3,
        metadata={"phrasing": phrasing, "day": when.day.isoformat(), "declines": decline},
)


def agenda_for_day(rng: random.Random, world: World) -> TaskDraft | None:
    owner = rng.choice(owners(world))
    when = pick_listed_day(
        rng, world,
        "SELECT DISTINCT substr(e.start, 1, 10) AS day FROM calendar_events e WHERE e.status='scheduled' "
        "AND e.start >= '2026-04-01' AND e.start < '2026-09-08' AND (e.organizer=? OR EXISTS (SELECT 1 FROM "
        "event_invites i WHERE i.event_id=e.id AND i.invitee_email=? AND i.response='accepted')) ORDER BY day",
        (owner.username, owner.email),
    )
    if when is None:
        return None
    part = rng.choice(TEXTS["agenda_for_day.parts"])
    events = Reader(world, owner, when.today)(t.list_events, date=when.argument)
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
    phrasing, prompt = kit.phrase(rng, TEXTS["agenda_for_day.phrasings"], adverb=adverb, part=part)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(when.today),
        reference_solution=[kit.call("list_events", date=when.argument)],
        expected_answer=f"You have {len(events)} meeting(s) {adverb}{part}: {listing}.",
        checks=[AnswerContains(values=titles, weight=2.0, label="names every meeting"), kit.diff_only([], weight=1.0)],
        difficulty=2,
        metadata={"phrasing": phrasing, "day": when.day.isoformat()},
)


def schedule_meeting(rng: random.Random, world: World) -> TaskDraft | None:
    owner = rng.choice(owners(world))
    day = kit.random_day(rng, dt.date(2026, 4, 2), dt.date(2026, 9, 7))
    if day.weekday() >= 5:
        return None
    when = pick_when(rng, day, allow_today=False)
    if when is None:
        return None
    reader = Reader(world, owner, when.today)
    contact = rng.choice(reader(t.search_contacts))
    title = rng.choice(MEETING_TITLES)
    start = rng.choice(MEETING_STARTS)
    minutes = rng.choice([30, 45, 60])
    end_dt = dt.datetime.combine(day, dt.time(int(start[:2]), int(start[3:]))) + dt.timedelta(minutes=minutes)
    end = end_dt.strftime("%H:%M")
    location = rng.choice(LOCATIONS)
    style = rng.randrange(3)
    new_id = kit.next_id(world, "calendar_events")
    iso = day.isoformat()
    phrasing, prompt = kit.phrase(rng, TEXTS["schedule_meeting"], title=title, name=contact["name"], adverb=when.adverb,
                                  start=kit.clock(start, style), end=kit.clock(end, style), location=location)
    return TaskDraft(
        prompt=prompt,
        env_variables=owner.env(when.today),
        reference_solution=[
            kit.call("search_contacts", query=contact["name"]),
            kit.call("create_event", title=title, date=when.argument, start_time=start, end_time=end,
                 location=location, invitees=[contact["email"]]),
        ],
        expected_answer=f"\"{title}\" is on your calendar on {kit.human_date(day, weekday=True)}, {start}-{end} in {location}, "
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
