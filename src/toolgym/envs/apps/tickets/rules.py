"""Ticketing rules shared by the seed, the tools and the task generators, so all three agree exactly.

Anything with a `query(sql, params)` method works as `source`: a ToolContext (episode state) or a
World (the seed, read-only). Order and transfer codes are a bijection of the rowid, so they are
unique, look random and need no randomness; seats follow from a section's sold counter.
"""

from __future__ import annotations

from typing import Any, Protocol

from toolgym.envs.kit.codes import scrambled_symbols
from toolgym.envs.kit.sql import Where

CATEGORIES = ("concert", "sports", "theater", "comedy", "family")
ORDER_PREFIX = "TK"
TRANSFER_PREFIX = "TR"


class Source(Protocol):
    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]: ...


def make_code(prefix: str, rowid: int) -> str:
    """'TK-' + 6 symbols for orders, 'TR-' + 6 for transfers, derived from the rowid.

    The scrambling is invertible on 30 bits, so distinct rowids never share a code.
    """
    start = rowid * 0x2545F491 + sum(map(ord, prefix)) * 0x9E3779
    return f"{prefix}-{scrambled_symbols(start, 6, 0x5BD1E995, (15, 13))}"


def order_code(rowid: int) -> str:
    return make_code(ORDER_PREFIX, rowid)


def transfer_code(rowid: int) -> str:
    return make_code(TRANSFER_PREFIX, rowid)


def normalize_code(text: str) -> str:
    """'tk4f7qk2', ' TK-4F7QK2 ' -> 'TK-4F7QK2': people drop the dash and the case."""
    compact = "".join(text.split()).upper().replace("-", "")
    if len(compact) == 8 and compact[:2] in (ORDER_PREFIX, TRANSFER_PREFIX):
        return f"{compact[:2]}-{compact[2:]}"
    return compact


def seat_at(index: int, seats_per_row: int) -> tuple[int, int]:
    """(row, seat) of the `index`-th seat of a section (0-based), filled row by row."""
    return index // seats_per_row + 1, index % seats_per_row + 1


def next_seats(section: dict[str, Any], quantity: int) -> list[tuple[int, int]]:
    """The seats the next purchase of `quantity` in `section` gets: the first unsold ones."""
    sold = section["capacity"] - section["seats_available"]
    return [seat_at(sold + i, section["seats_per_row"]) for i in range(quantity)]


EVENT_COLUMNS = (
    "e.id AS event_id, e.title, p.name AS performer, p.category, e.date, e.start_time, v.name AS venue, "
    "v.city, e.status, e.max_per_order, "
    "(SELECT MIN(s.price) FROM sections s WHERE s.event_id = e.id AND s.seats_available > 0) AS min_price, "
    "(SELECT COALESCE(SUM(s.seats_available), 0) FROM sections s WHERE s.event_id = e.id) AS seats_available"
)
EVENT_JOINS = "FROM events e JOIN performers p ON p.id = e.performer_id JOIN venues v ON v.id = e.venue_id"


def find_events(
    source: Source, *, city: str | None = None, category: str | None = None, date_from: str | None = None,
    date_to: str | None = None, performer: str | None = None,
) -> list[dict[str, Any]]:
    """Events matching every given filter, soonest first. `performer` matches the performer's name or the
    event title (case-insensitive substring), so a team's away games are found too."""
    where = Where()
    where.when(city, "lower(v.city) = lower(?)")
    where.when(category, "p.category = ?")
    where.when(date_from, "e.date >= ?")
    where.when(date_to, "e.date <= ?")
    if performer is not None:
        needle = f"%{' '.join(performer.split()).lower()}%"
        where.add("(lower(p.name) LIKE ? OR lower(e.title) LIKE ?)", needle, needle)
    return source.query(
        f"SELECT {EVENT_COLUMNS} {EVENT_JOINS} WHERE {where.sql} ORDER BY e.date, e.start_time, e.id", where.params)


def event_sections(source: Source, event_id: int) -> list[dict[str, Any]]:
    """The sections of an event, cheapest first."""
    return source.query("SELECT * FROM sections WHERE event_id=? ORDER BY price, id", (event_id,))


def cheapest_section(sections: list[dict[str, Any]], quantity: int, max_price: int | None = None) -> dict | None:
    """The cheapest section with at least `quantity` seats left (and a price within `max_price`)."""
    fits = [s for s in sections if s["seats_available"] >= quantity and (max_price is None or s["price"] <= max_price)]
    return min(fits, key=lambda s: (s["price"], s["id"])) if fits else None
