"""kit.codes: rowid-derived codes are unique, readable and fixed for given constants."""

from __future__ import annotations

from toolgym.envs.apps.booking.rules import confirmation_code
from toolgym.envs.apps.tickets.rules import order_code, transfer_code
from toolgym.envs.kit.codes import CODE_ALPHABET, scrambled_symbols


def test_distinct_starts_give_distinct_codes_of_readable_symbols() -> None:
    codes = [scrambled_symbols(rowid * 0x9E3779, 4, 0x5BD1E9, (9, 7)) for rowid in range(1, 5001)]
    assert len(set(codes)) == len(codes)
    assert all(len(code) == 4 and set(code) <= set(CODE_ALPHABET) for code in codes)
    assert not set("01IO") & set(CODE_ALPHABET)


def test_the_same_start_and_constants_always_give_the_same_code() -> None:
    assert scrambled_symbols(12345, 6, 0x5BD1E995, (15, 13)) == scrambled_symbols(12345, 6, 0x5BD1E995, (15, 13))
    assert scrambled_symbols(12345, 6, 0x5BD1E995, (15, 13)) != scrambled_symbols(12346, 6, 0x5BD1E995, (15, 13))


def test_apps_codes_keep_their_published_values() -> None:
    """Seeded rows and task answers hold these codes, so the shared scrambling must not drift."""
    assert [confirmation_code("F", 1), confirmation_code("H", 7)] == ["FLUQRH", "H57WHQ"]
    assert [order_code(1), transfer_code(3)] == ["TK-TXK8PV", "TR-CVPPBY"]
