"""Helpers the crm task generators share: runtime context, entity picks, new-record predictions, checks.

Generators read the seed through `World` with ORDER BY in every query and draw only from the `rng`
they are given, so the same seed yields the same tasks. A choice a task asks for (biggest, soonest,
least recently contacted) is computed with the rules the tools apply, and a draw whose answer would
be ambiguous (a tie) is rejected rather than guessed.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toolgym.envs import World
from toolgym.envs.app import answer_has as answer_has  # re-exported: the check builders apps share
from toolgym.envs.app import diff_only as diff_only
from toolgym.envs.app import impossible_checks as impossible_checks
from toolgym.envs.app import lookup_checks as lookup_checks
from toolgym.schema import ToolCall

FIRST_DAY = dt.date(2026, 4, 1)  # range of CURRENT_DATE in tasks
LAST_DAY = dt.date(2026, 8, 31)

NEW_FIRST_NAMES = ("Avery", "Priya", "Mateo", "Hannah", "Lucas", "Sofia", "Elijah", "Nora", "Omar", "Grace",
                   "Felix", "Leah", "Tobias", "Isla", "Ravi", "Clara", "Hugo", "Maya", "Dmitri", "Yuki", "Ines",
                   "Kofi", "Selma", "Jonah")
NEW_LAST_NAMES = ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Castillo", "Novak", "Brennan", "Haddad",
                  "Kowalski", "Ferreira", "Nakamura", "Delgado", "Sorensen", "Abernathy", "Quinn", "Varga",
                  "Whitfield", "Ibarra")
NEW_JOB_TITLES = ("CFO", "Head of IT", "VP of Sales", "Procurement Manager", "Operations Director",
                  "IT Manager", "Marketing Director", "Engineering Manager")

_DEALS = (
    "SELECT d.*, s.name AS stage, s.position, co.name AS company, u.name AS owner, u.username AS owner_username, "
    "c.first_name || ' ' || c.last_name AS contact, c.lifecycle_stage AS contact_stage FROM deals d "
    "JOIN pipeline_stages s ON s.id = d.stage_id JOIN companies co ON co.id = d.company_id "
    "JOIN users u ON u.id = d.owner_id LEFT JOIN contacts c ON c.id = d.contact_id"
)


def iso(day: dt.date) -> str:
    return day.isoformat()


def day_of(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


def human_date(text: str) -> str:
    """'2026-05-03' -> 'May 3, 2026': some prompts say dates the way people do."""
    day = day_of(text)
    return f"{day.strftime('%B')} {day.day}, {day.year}"


def any_today(rng: random.Random) -> dt.date:
    return FIRST_DAY + dt.timedelta(days=rng.randint(0, (LAST_DAY - FIRST_DAY).days))


def today_before(rng: random.Random, deadline: str, lead_days: int = 60) -> dt.date | None:
    """A CURRENT_DATE in the task range, on or before `deadline` (a close date); None if there is none."""
    end = day_of(deadline)
    low, high = max(FIRST_DAY, end - dt.timedelta(days=lead_days)), min(LAST_DAY, end)
    if low > high:
        return None
    return low + dt.timedelta(days=rng.randint(0, (high - low).days))


def pick(rng: random.Random, rows: list[Any]) -> Any:
    return rows[rng.randrange(len(rows))]


def sales_users(world: World) -> list[dict[str, Any]]:
    """The sales team members who own at least one open deal: the users tasks log in as."""
    return world.query(
        "SELECT u.id, u.username, u.name FROM users u WHERE u.role IN ('sales_rep', 'sales_manager') "
        "AND EXISTS (SELECT 1 FROM deals d WHERE d.owner_id = u.id AND d.status = 'open') ORDER BY u.id")


def user_by_id(world: World, user_id: int) -> dict[str, Any]:
    row = world.one("SELECT id, username, name, role FROM users WHERE id=?", (user_id,))
    assert row is not None, f"no user {user_id}"
    return row


def env_for(user: dict[str, Any], today: dt.date) -> dict[str, str]:
    return {"CURRENT_DATE": iso(today), "LOGGED_IN_USER": user["username"], "LOGGED_IN_NAME": user["name"]}


def deals(world: World, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    return world.query(f"{_DEALS} WHERE {where} ORDER BY d.id", params)


def stage_names(world: World) -> dict[int, str]:
    """Stage position -> name."""
    return {r["position"]: r["name"] for r in world.query("SELECT name, position FROM pipeline_stages ORDER BY position")}


def contacts(world: World, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    return world.query(
        "SELECT c.*, c.first_name || ' ' || c.last_name AS name, co.name AS company, co.domain, u.name AS owner "
        "FROM contacts c JOIN companies co ON co.id = c.company_id JOIN users u ON u.id = c.owner_id "
        f"WHERE {where} ORDER BY c.id", params)


def companies(world: World) -> list[dict[str, Any]]:
    return world.query(
        "SELECT co.*, u.name AS owner, u.username AS owner_username FROM companies co "
        "JOIN users u ON u.id = co.owner_id ORDER BY co.id")


def name_matches_only_itself(world: World, company: dict[str, Any]) -> bool:
    """True when searching by this company's name finds no other company (the LIKE search is a substring one)."""
    rows = world.query("SELECT id FROM companies WHERE name LIKE ? ORDER BY id", (f"%{company['name']}%",))
    return [r["id"] for r in rows] == [company["id"]]


def new_person(rng: random.Random, world: World, domain: str) -> tuple[str, str, str] | None:
    """A first and last name nobody in the CRM has, and their email at `domain`; None on a clash."""
    first, last = pick(rng, NEW_FIRST_NAMES), pick(rng, NEW_LAST_NAMES)
    email = f"{first}.{last}@{domain}".lower()
    taken = world.one(
        "SELECT 1 AS hit FROM contacts WHERE (lower(first_name)=lower(?) AND lower(last_name)=lower(?)) "
        "OR lower(email)=lower(?)", (first, last, email))
    return None if taken else (first, last, email)


def next_id(world: World, table: str, offset: int = 1) -> int:
    """The id the `offset`-th new row of `table` gets in a fresh episode (SQLite uses max(rowid) + 1)."""
    return int(world.one(f"SELECT COALESCE(MAX(id), 0) AS n FROM {table}")["n"]) + offset  # type: ignore[index]


def unique_best(rows: list[dict[str, Any]], key: str, largest: bool = False) -> dict[str, Any] | None:
    """The row with the smallest (or largest) `key`, or None when empty or tied."""
    if not rows:
        return None
    ordered = sorted(rows, key=lambda r: (-r[key] if largest else r[key], r["id"]))
    if len(ordered) > 1 and ordered[0][key] == ordered[1][key]:
        return None
    return ordered[0]


def with_article(phrase: str) -> str:
    """'an opportunity', 'a customer': prompts read naturally for every lifecycle label."""
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase


def money(amount: int) -> str:
    return f"${amount:,}"


def call(tool_name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(name=tool_name, arguments=arguments)
