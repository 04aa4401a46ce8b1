"""The row an id argument names, found or refused with one wording in every app: the error names the argument
and, where the app gives one, the tool that lists valid ids, so a model can recover on its own."""

from __future__ import annotations

from typing import Any

from toolgym.envs.app import ToolContext
from toolgym.envs.tool import ToolError


def row_by_id(ctx: ToolContext, sql: str, argument: str, row_id: int, noun: str, hint: str | None = None,
              ) -> dict[str, Any]:
    """The row `sql` (one `?` placeholder, for the id) finds for `row_id`; otherwise a ToolError
    "argument '<argument>': no <noun> with id <row_id>; <hint>" (without the hint when it is None)."""
    row = ctx.one(sql, (row_id,))
    if row is None:
        where_to_look = "" if hint is None else f"; {hint}"
        raise ToolError(f"argument '{argument}': no {noun} with id {row_id}{where_to_look}")
    return row
