"""Who belongs to a group with a given role: the collaborators of a repository with write access, the
admins of a project. Apps keep memberships in a table of (group id, username, role) rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class Source(Protocol):
    """What members_with reads through: the seed (World) or an episode's database (ToolContext)."""

    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]: ...


def members_with(
    source: Source, table: str, group: tuple[str, int], role_column: str, roles: Sequence[str]
) -> list[str]:
    """Usernames in `table` whose `group` (a column and its value) matches and whose `role_column` is one of
    `roles`, in username order (so a generator's draws from them are fixed by its seed)."""
    column, group_id = group
    marks = ",".join("?" * len(roles))
    return [
        r["username"]
        for r in source.query(
            f"SELECT username FROM {table} WHERE {column}=? AND {role_column} IN ({marks}) ORDER BY username",
            (group_id, *roles),
        )
    ]
