"""Helpers the phone_support task generators share: picking customers and lines, context, checks.

Generators read the seed through `World` with ORDER BY in every query and draw only from their
`rng`, so the same seed yields the same tasks. Choices a task asks for (cheapest plan with enough
data) are computed with the rules the tools apply; an ambiguous draw is rejected, not guessed.
"""

from __future__ import annotations

from typing import Any

from toolgym.envs import World
from toolgym.envs.kit.row_checks import inserted
from toolgym.schema import ExpectedChange


def lines(world: World, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Lines with their plan, owner and account, filtered by `where` (over aliases l, p, a, u)."""
    return world.query(
        "SELECT l.*, p.code AS plan_code, p.name AS plan_name, p.data_gb, p.roaming_allowed, p.monthly_price, "
        "a.account_number, a.id AS account_id, u.username, u.name, u.city, "
        "(SELECT COUNT(*) FROM lines o WHERE o.account_id = l.account_id) AS line_count "
        f"FROM lines l JOIN plans p ON p.id = l.plan_id JOIN accounts a ON a.id = l.account_id "
        f"JOIN users u ON u.id = a.user_id WHERE {where} ORDER BY l.id",
        params,
    )


def plans(world: World) -> list[dict[str, Any]]:
    return world.query("SELECT * FROM plans ORDER BY monthly_price, id")


def first_name(row: dict[str, Any]) -> str:
    return str(row["name"]).split()[0]


def gb_text(value: float) -> str:
    """How a tool prints a GB figure (JSON float), so answers and checks agree: 12.4 -> '12.4'."""
    return repr(float(value))


def line_event(line_id: int) -> ExpectedChange:
    return inserted("line_events", {"line_id": line_id})


def country_name(country: str) -> str:
    """A country as it reads in a sentence: 'the United Kingdom', 'Japan'."""
    return f"the {country}" if country.startswith("United") else country


WHEN_TRAVEL = ("next week", "on Friday", "tomorrow", "at the end of the month", "in a few days")
