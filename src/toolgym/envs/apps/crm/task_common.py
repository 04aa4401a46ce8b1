"""Helpers the crm task generators share: runtime context, entity picks, new-record predictions, checks.

Generators read the seed through `World` with ORDER BY in every query and draw only from the `rng`
they are given, so the same seed yields the same tasks. A choice a task asks for (biggest, soonest,
least recently contacted) is computed with the rules the tools apply, and a draw whose answer would
be ambiguous (a tie) is rejected rather than guessed.
"""

from __future__ import annotations

import random
from typing import Any

from toolgym.envs import World, kit

TEXTS = kit.module_texts(__file__)

NEW_FIRST_NAMES = TEXTS["NEW_FIRST_NAMES"]
NEW_LAST_NAMES = TEXTS["NEW_LAST_NAMES"]
NEW_JOB_TITLES = ("CFO", "Head of IT", "VP of Sales", "Procurement Manager", "Operations Director",
                  "IT Manager", "Marketing Director", "Engineering Manager")

_DEALS = (
    "SELECT d.*, s.name AS stage, s.position, co.name AS company, u.name AS owner, u.username AS owner_username, "
    "c.first_name || ' ' || c.last_name AS contact, c.lifecycle_stage AS contact_stage FROM deals d "
    "JOIN pipeline_stages s ON s.id = d.stage_id JOIN companies co ON co.id = d.company_id "
    "JOIN users u ON u.id = d.owner_id LEFT JOIN contacts c ON c.id = d.contact_id"
)


def sales_users(world: World) -> list[dict[str, Any]]:
    """The sales team members who own at least one open deal: the users tasks log in as."""
    return world.query(
        "SELECT u.id, u.username, u.name FROM users u WHERE u.role IN ('sales_rep', 'sales_manager') "
        "AND EXISTS (SELECT 1 FROM deals d WHERE d.owner_id = u.id AND d.status = 'open') ORDER BY u.id")


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
    first, last = rng.choice(NEW_FIRST_NAMES), rng.choice(NEW_LAST_NAMES)
    email = f"{first}.{last}@{domain}".lower()
    taken = world.one(
        "SELECT 1 AS hit FROM contacts WHERE (lower(first_name)=lower(?) AND lower(last_name)=lower(?)) "
        "OR lower(email)=lower(?)", (first, last, email))
    return None if taken else (first, last, email)
