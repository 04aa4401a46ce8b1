"""code_host rules shared by the tools and the task generators, so both agree exactly.

Anything with a `query(sql, params)` method works as `source`: a ToolContext (episode state) or a
World (the seed, read-only).
"""

from __future__ import annotations

from typing import Any, Protocol


class Source(Protocol):
    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]: ...


def approvals_of(source: Source, pr_id: int) -> list[str]:
    """Reviewers whose latest approve/request-changes review is an approval (comments don't count)."""
    latest: dict[str, str] = {}
    for row in source.query(
        "SELECT reviewer, state FROM reviews WHERE pr_id=? AND state != 'commented' ORDER BY id", (pr_id,)
    ):
        latest[row["reviewer"]] = row["state"]
    return sorted(r for r, s in latest.items() if s == "approved")
