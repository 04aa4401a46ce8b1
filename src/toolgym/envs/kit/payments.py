"""Payment methods as a list tool shows them: the same fields in every app, with whether each card has expired,
so a model sees before it pays which card the app would refuse."""

from __future__ import annotations

from typing import Any

from toolgym.envs.app import ToolContext


def listed_payment_methods(ctx: ToolContext, owner: tuple[str, int], order_by: str = "is_default DESC, id",
                           ) -> list[dict[str, Any]]:
    """The owner's payment methods (`owner` is the owning column and value, ("user_id", 7)) in `order_by`
    order, each with its id as payment_method_id, is_default as a bool and an `expired` flag for today."""
    column, owner_id = owner
    rows = ctx.query(
        f"SELECT id AS payment_method_id, kind, last4, expires, is_default FROM payment_methods WHERE {column}=? "
        f"ORDER BY {order_by}", (owner_id,))
    month = ctx.env.today.isoformat()[:7]
    return [{**r, "is_default": bool(r["is_default"]), "expired": r["expires"] < month} for r in rows]
