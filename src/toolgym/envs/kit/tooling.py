"""Helpers for writing tools: date arguments resolved against CURRENT_DATE, the logged-in user's row and the
card a purchase is paid with, each failing with a ToolError that says what was wrong (a model can act on it)."""

from __future__ import annotations

from typing import Any

from toolgym.envs.app import ToolContext
from toolgym.envs.tool import ToolError


def date_arg(ctx: ToolContext, name: str, text: str) -> str:
    """A date argument ('2026-05-03', 'tomorrow', 'next Friday') as ISO text; the error names the argument."""
    try:
        return ctx.env.date(text)
    except ToolError as exc:
        raise ToolError(f"argument '{name}': {exc}") from None


def logged_in_user(ctx: ToolContext, where: str, columns: str = "id, username, name") -> dict[str, Any]:
    """The users row of LOGGED_IN_USER; `where` names the app in the error ('the booking app')."""
    username = ctx.env.require_user()
    row = ctx.one(f"SELECT {columns} FROM users WHERE username=?", (username,))
    if row is None:
        raise ToolError(f"the logged-in user {username!r} has no account in {where}")
    return row


def directory_member(ctx: ToolContext, columns: str, account: str, lacking: str) -> dict[str, Any]:
    """The logged-in user's row of an organisation's directory (the users table holds every employee), who
    must hold this app's account: `account` is its 0/1 column, `lacking` what the error says they have not."""
    username = ctx.env.require_user()
    row = ctx.one(f"SELECT {columns}, {account} FROM users WHERE username=?", (username,))
    if row is None:
        raise ToolError(f"the logged-in user {username!r} is not in the directory")
    if not row[account]:
        raise ToolError(f"user {username!r} has no {lacking} in this organisation")
    return row


def payment_method(ctx: ToolContext, owner: tuple[str, int], payment_method_id: int | None, *, no_default: str,
                   not_found: str) -> dict[str, Any]:
    """The named payment method (it must be the owner's and unexpired) or the owner's default one.

    `owner` is the payment_methods column and value that own the card (("user_id", 7), ("account_id", 3));
    `no_default` and `not_found` are the app's messages (`not_found` gets the asked id as {id}).
    """
    column, owner_id = owner
    if payment_method_id is None:
        row = ctx.one(f"SELECT * FROM payment_methods WHERE {column}=? AND is_default=1 ORDER BY id LIMIT 1",
                      (owner_id,))
        if row is None:
            raise ToolError(no_default)
    else:
        row = ctx.one(f"SELECT * FROM payment_methods WHERE id=? AND {column}=?", (payment_method_id, owner_id))
        if row is None:
            raise ToolError(f"argument 'payment_method_id': {not_found.format(id=payment_method_id)}")
    if row["expires"] < ctx.env.today.isoformat()[:7]:
        raise ToolError(f"payment method {row['id']} ({row['kind']} ending {row['last4']}) expired in {row['expires']}")
    return row
