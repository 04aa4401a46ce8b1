"""mail + maps: calendar meetings in rooms of the office building, and how to get there.

Mail invites name meeting rooms ('Room 4A', 'Boardroom'); the maps app knows them as rooms inside
Example HQ, and knows every person's home and workplace. Tasks join the two: accept an invitation
and say how long the trip takes, block travel time before a meeting, plan a meal after a meeting at
the best-rated place near its room (a calendar event plus a saved place), report the commute to the
first in-person meeting of a day, and refuse what cannot be done (travel to a video call, accepting
a cancelled meeting).
"""

from __future__ import annotations

import datetime as dt
import math
import random
from typing import Any

from toolgym.envs import kit
from toolgym.envs.app import TaskDraft
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, only, updated
from toolgym.envs.multi.base import (
    MultiTaskFamily,
    Scratch,
    Unusable,
    Worlds,
    choice,
    day_phrases,
    draft,
    guarded,
    no_change,
    refusal,
)
from toolgym.schema import AnswerContains, ExpectedChange

TEXTS = kit.module_texts(__file__)

MODES = TEXTS["MODES"]  # mode -> (how to get there, the trip)
ORIGINS: dict[str, tuple[str, ...]] = {"home": ("home", "my place"), "work": ("the office", "work")}
VIRTUAL = ("Zoom", "Microsoft Teams")
# (latest end time of the meeting, category, meal word) for the meal-after-a-meeting family
MEALS: tuple[tuple[str, str, str], ...] = (("10:59", "cafe", "coffee"), ("14:30", "restaurant", "lunch"),
                                           ("23:59", "bar", "drinks"))
RADII = (0.5, 1.0, 1.5)


def rooms(worlds: Worlds) -> set[str]:
    """Meeting-room names the map knows (each is inside an office building)."""
    return {r["alias"] for r in worlds["maps"].query("SELECT alias FROM place_aliases ORDER BY id")}


def setup(rng: random.Random, worlds: Worlds) -> tuple[dict[str, Any], dict[str, str], Scratch, dt.date]:
    """A mailbox owner (every person has a home and a workplace on the map) on a day of the task window."""
    me = choice(rng, worlds["mail"].query("SELECT username, name, email FROM users WHERE has_mailbox=1 ORDER BY username"))
    today = kit.random_day(rng)
    env = kit.env_vars(me["username"], me["name"], today)
    return me, env, worlds.scratch(env), today


def trip(rng: random.Random, scratch: Scratch, destination: str) -> tuple[str, str, str, dict[str, Any]]:
    """A mode and origin ('home', or 'work' unless that is the meeting's building), and the route."""
    mode = rng.choice(sorted(MODES))
    origins = ["home", "work"]
    origin = rng.choice(origins)
    if scratch.fails("get_directions", origin=origin, destination=destination, mode=mode):
        origin = "home"
    route = scratch("get_directions", origin=origin, destination=destination, mode=mode)
    return mode, origin, rng.choice(ORIGINS[origin]), route


def spoken_day(rng: random.Random, today: dt.date, day: dt.date) -> tuple[str, str]:
    """How the prompt says the day and what a tool is given: a relative phrase when one fits."""
    options = day_phrases(today, day)
    relative = [o for o in options if not o[0].startswith("on ")]
    return rng.choice(relative) if relative and rng.random() < 0.7 else options[0]


def unique_title(events: list[dict[str, Any]], title: str) -> bool:
    return [e["title"] for e in events].count(title) == 1


def minutes_check(route: dict[str, Any], weight: float = 2.0) -> AnswerContains:
    return AnswerContains(values=[str(route["duration_min"])], weight=weight,
                          label=f"gives the travel time ({route['duration_min']} min)")


# -- accept an invitation and say how long the trip is ----------------------------------------------------

ACCEPT_PHRASINGS = TEXTS["ACCEPT_PHRASINGS"]


@guarded
def accept_with_travel_time(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """Find a pending invitation by day and title, route to its room, and accept it (mail -> maps -> mail)."""
    me, env, scratch, today = setup(rng, worlds)
    known = rooms(worlds)
    invites = [i for i in scratch("list_invites", status="pending")
               if i["event_status"] == "scheduled" and i["location"] in known]
    invite = choice(rng, invites)
    day = dt.date.fromisoformat(invite["start"][:10])
    said, argument = spoken_day(rng, today, day)
    if not unique_title(scratch("list_invites", status="pending", date=argument), invite["title"]):
        raise Unusable("two pending invitations share the title that day")
    mode, origin, origin_words, route = trip(rng, scratch, invite["location"])
    accept = kit.call("respond_to_invite", event_id=invite["event_id"], response="accepted")
    scratch.rehearse([accept])
    index, prompt = kit.phrase(rng, ACCEPT_PHRASINGS, title=invite["title"], day=said, verb=MODES[mode][0],
                           noun=MODES[mode][1], origin=origin_words)
    where = {"event_id": invite["event_id"], "invitee_email": me["email"].lower()}
    checks = [
        field_is("mail.event_invites", where, "response", "accepted", f"accepted event {invite['event_id']}", weight=2.0),
        only("only the invitation answered; maps unchanged", [updated("mail.event_invites", where, ["response", "responded_at"])], weight=2.0),
        minutes_check(route),
    ]
    return draft(
        prompt, env, [kit.call("list_invites", status="pending", date=argument),
                      kit.call("get_directions", origin=origin, destination=invite["location"], mode=mode),
                      accept],
        f"I accepted '{invite['title']}' ({invite['start']}, {invite['location']}). The {MODES[mode][1]} "
        f"from {origin} is {route['distance_km']} km and takes {route['duration_min']} minutes.",
        checks, 2, index, event_id=invite["event_id"], mode=mode, origin=origin,
    )


# -- block travel time before a meeting -------------------------------------------------------------------

BLOCK_PHRASINGS = TEXTS["BLOCK_PHRASINGS"]


def _meetings(scratch: Scratch, today: dt.date, days: int = 14) -> list[dict[str, Any]]:
    """Meetings on my calendar (organized or accepted) from today on."""
    return scratch("list_events", date=today.isoformat(), end_date=(today + dt.timedelta(days=days)).isoformat())


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _minutes(clock: str) -> int:
    return int(clock[:2]) * 60 + int(clock[3:5])


@guarded
def block_travel_time(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """Route to a meeting's room and put a travel block that long before it (maps -> mail write)."""
    me, env, scratch, today = setup(rng, worlds)
    known = rooms(worlds)
    event = choice(rng, [e for e in _meetings(scratch, today) if e["location"] in known])
    day = dt.date.fromisoformat(event["start"][:10])
    said, argument = spoken_day(rng, today, day)
    if not unique_title(scratch("list_events", date=argument), event["title"]):
        raise Unusable("two meetings share the title that day")
    mode, origin, origin_words, route = trip(rng, scratch, event["location"])
    length = math.ceil(route["duration_min"] / 5) * 5
    start = _minutes(event["start"][11:16]) - length
    if start < 6 * 60:
        raise Unusable("the trip would start before 06:00")
    block = f"Travel to {event['title']}"
    create = kit.call("create_event", title=block, date=day.isoformat(), start_time=_hhmm(start),
                  end_time=event["start"][11:16])
    scratch.rehearse([create])
    index, prompt = kit.phrase(rng, BLOCK_PHRASINGS, title=event["title"], day=said, block=block,
                           noun=MODES[mode][1], verb=MODES[mode][0], origin=origin_words)
    new = {"organizer": me["username"], "title": block}
    checks = [
        has_row("mail.calendar_events", {**new, "start": f"{day.isoformat()}T{_hhmm(start)}", "end": event["start"], "status": "scheduled"},
                f"'{block}' from {_hhmm(start)} to {event['start'][11:16]}", weight=3.0, count=1),
        only("only the travel block; maps unchanged", [inserted("mail.calendar_events", new)], weight=2.0),
        minutes_check(route, weight=1.0),
    ]
    return draft(
        prompt, env, [kit.call("list_events", date=argument),
                      kit.call("get_directions", origin=origin, destination=event["location"], mode=mode),
                      create],
        f"The {MODES[mode][1]} from {origin} to {event['location']} takes {route['duration_min']} "
        f"minutes, so I added '{block}' on {day.isoformat()} from {_hhmm(start)} to "
        f"{event['start'][11:16]}.",
        checks, 3, index, event_id=event["id"], mode=mode, origin=origin, minutes=length,
    )


# -- a meal after a meeting near its room ------------------------------------------------------------------

MEAL_PHRASINGS = TEXTS["MEAL_PHRASINGS"]


@guarded
def meal_after_meeting(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """Choose the best-rated open place near a meeting's room (maps), then write to both apps."""
    me, env, scratch, today = setup(rng, worlds)
    known = rooms(worlds)
    mine = [e for e in _meetings(scratch, today, days=21) if e["location"] in known and e["my_role"] == "organizer"]
    event = scratch("get_event", event_id=choice(rng, mine)["id"])
    accepted = sorted(a["email"] for a in event["attendees"] if a["response"] == "accepted")
    if not accepted:
        raise Unusable("nobody accepted")
    day = dt.date.fromisoformat(event["start"][:10])
    end = event["end"][11:16]
    _, category, meal = next(m for m in MEALS if end <= m[0])
    radius = rng.choice(RADII)

    def best(within: float) -> list[dict[str, Any]]:
        return scratch("nearby_places", place=event["location"], category=category, radius_km=within,
                       open_on=day.isoformat(), open_at=end, sort_by="rating")["places"]

    places = best(radius)
    if not places or (len(places) > 1 and places[1]["rating"] == places[0]["rating"]):
        raise Unusable("no clear best place")
    if len(best(radius + 0.05)) != len(places) or len(best(max(0.1, radius - 0.05))) != len(places):
        raise Unusable("a place lies right at the radius")
    place = places[0]
    lists = [entry for entry in scratch("list_my_lists")
             if all(p["place_id"] != place["place_id"] for p in entry["places"]) and entry["count"] < 25]
    saved_list = choice(rng, lists)
    said, argument = spoken_day(rng, today, day)
    if not unique_title(scratch("list_events", date=argument), event["title"]):
        raise Unusable("two meetings share the title that day")
    title = f"{meal.capitalize()} after {event['title']}"
    finish = _hhmm(_minutes(end) + 60)
    if finish <= end:
        raise Unusable("the meal would run past midnight")
    create = kit.call("create_event", title=title, date=day.isoformat(), start_time=end, end_time=finish,
                  location=place["name"], invitees=accepted)
    save = kit.call("save_place", list_name=saved_list["name"], place=place["place_id"])
    created = scratch.rehearse([create, save])[0]
    index, prompt = kit.phrase(rng, MEAL_PHRASINGS, title=event["title"], day=said, meal=meal, category=category,
                           radius=f"{radius:g}", event=title, list=saved_list["name"])
    new = {"organizer": me["username"], "title": title}
    saved = {"list_id": saved_list["list_id"], "place_id": place["place_id"]}
    checks: list = [
        has_row("mail.calendar_events", {**new, "start": f"{day.isoformat()}T{end}", "end": f"{day.isoformat()}T{finish}", "location": place["name"]},
                f"'{title}' at {place['name']}", weight=2.0, count=1),
        *(has_row("mail.event_invites", {"event_id": created["id"], "invitee_email": email}, f"{email} invited", weight=1.0, count=1) for email in accepted),
        has_row("maps.saved_places", saved, f"{place['name']} saved to '{saved_list['name']}'", weight=2.0, count=1),
        only("only the event, its invitations and the saved place", [inserted("mail.calendar_events", new), *(ExpectedChange(table="mail.event_invites", op="insert", where={"event_id": created["id"], "invitee_email": email}) for email in accepted), inserted("maps.saved_places", saved)], weight=2.0),
        AnswerContains(values=[place["name"]], weight=1.0, label="names the place"),
    ]
    return draft(
        prompt, env, [kit.call("list_events", date=argument), kit.call("get_event", event_id=event["id"]),
                      kit.call("nearby_places", place=event["location"], category=category, radius_km=radius,
                           open_on=day.isoformat(), open_at=end, sort_by="rating"),
                      kit.call("list_my_lists"), create, save],
        f"{place['name']} (rated {place['rating']}) is the best-rated {category} within "
        f"{radius:g} km that is open at {end}. I booked '{title}' there from {end} to {finish} "
        f"with {', '.join(accepted)} and saved it to '{saved_list['name']}'.",
        checks, 3, index, event_id=event["id"], place_id=place["place_id"],
    )


# -- the commute to the first in-person meeting of a day --------------------------------------------------

COMMUTE_PHRASINGS = TEXTS["COMMUTE_PHRASINGS"]


@guarded
def first_meeting_commute(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """Read a day of my calendar, skip video calls, and route to the first room (a lookup over both apps)."""
    _me, env, scratch, today = setup(rng, worlds)
    known = rooms(worlds)
    day = today + dt.timedelta(days=rng.randint(0, 7))
    said, argument = spoken_day(rng, today, day)
    events = scratch("list_events", date=argument)
    in_person = [e for e in events if e["location"] in known]
    if not in_person:
        raise Unusable("no in-person meeting that day")
    first = in_person[0]
    if len(in_person) > 1 and in_person[1]["start"] == first["start"]:
        raise Unusable("two meetings start together")
    mode, origin, origin_words, route = trip(rng, scratch, first["location"])
    index, prompt = kit.phrase(rng, COMMUTE_PHRASINGS, day=said, day_cap=said[0].upper() + said[1:],
                           verb=MODES[mode][0], noun=MODES[mode][1], origin=origin_words)
    checks = [
        AnswerContains(values=[first["title"]], weight=1.0, label="names the meeting"),
        AnswerContains(values=[first["location"]], weight=1.0, label="names the room"),
        minutes_check(route),
        no_change(),
    ]
    return draft(
        prompt, env, [kit.call("list_events", date=argument),
                      kit.call("get_directions", origin=origin, destination=first["location"], mode=mode)],
        f"Your first in-person meeting {said} is '{first['title']}' at {first['start'][11:16]} in "
        f"{first['location']}; the {MODES[mode][1]} from {origin} takes {route['duration_min']} "
        f"minutes ({route['distance_km']} km).",
        checks, 2, index, event_id=first["id"], skipped_video_calls=events.index(first),
    )


# -- impossible -----------------------------------------------------------------------------------------

@guarded
def travel_impossible(rng: random.Random, worlds: Worlds) -> TaskDraft:
    """A travel block for a video call (no place to go), or accepting a cancelled meeting: change nothing."""
    _me, env, scratch, today = setup(rng, worlds)
    mode = rng.choice(sorted(MODES))
    origin_words = rng.choice(ORIGINS["home"])
    if rng.random() < 0.5:
        event = choice(rng, [e for e in _meetings(scratch, today) if e["location"] in VIRTUAL])
        day = dt.date.fromisoformat(event["start"][:10])
        said, argument = spoken_day(rng, today, day)
        if not unique_title(scratch("list_events", date=argument), event["title"]):
            raise Unusable("two meetings share the title that day")
        index, prompt = kit.phrase(rng, BLOCK_PHRASINGS, title=event["title"], day=said,
                               block=f"Travel to {event['title']}", noun=MODES[mode][1], verb=MODES[mode][0],
                               origin=origin_words)
        gold = [kit.call("list_events", date=argument)]
        reason = f"'{event['title']}' is a {event['location']} call, so there is no room to travel to"
        write_tools, kind = ["create_event"], "video_call"
    else:
        invites = [i for i in scratch("list_invites", status="all")
                   if i["event_status"] == "cancelled" and i["my_response"] == "pending"]
        invite = choice(rng, invites)
        day = dt.date.fromisoformat(invite["start"][:10])
        said, argument = spoken_day(rng, today, day)
        if not unique_title(scratch("list_invites", status="all", date=argument), invite["title"]):
            raise Unusable("two invitations share the title that day")
        index, prompt = kit.phrase(rng, ACCEPT_PHRASINGS, title=invite["title"], day=said, verb=MODES[mode][0],
                               noun=MODES[mode][1], origin=origin_words)
        index += len(BLOCK_PHRASINGS)
        gold = [kit.call("list_invites", status="all", date=argument)]
        reason = f"'{invite['title']}' was cancelled by its organizer, so its invitation can no longer be accepted"
        write_tools, kind = ["respond_to_invite"], "cancelled_meeting"
    return refusal(env, prompt, index, kind, reason, gold, write_tools)


FAMILIES: tuple[MultiTaskFamily, ...] = (
    MultiTaskFamily("accept_invite_with_travel_time", "context", accept_with_travel_time),
    MultiTaskFamily("block_travel_time_before_meeting", "multi_step", block_travel_time),
    MultiTaskFamily("meal_near_meeting_room", "search_choose_write", meal_after_meeting),
    MultiTaskFamily("first_in_person_meeting_commute", "context", first_meeting_commute),
    MultiTaskFamily("travel_plan_impossible", "impossible", travel_impossible),
)
