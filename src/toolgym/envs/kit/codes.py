"""Short codes people read aloud (booking and order codes), derived from a rowid so that they are unique,
look random and need no randomness: each app picks its own constants, the scrambling is shared."""

from __future__ import annotations

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # 32 symbols, no 0/O or 1/I look-alikes
SYMBOL_BITS = 5  # one symbol of CODE_ALPHABET


def scrambled_symbols(start: int, length: int, multiplier: int, shifts: tuple[int, int]) -> str:
    """`length` symbols of CODE_ALPHABET from `start`, scrambled by an xor-shift, an odd `multiplier` and a
    second xor-shift on `length * 5` bits: each step is invertible there, so distinct starts never collide."""
    mask = (1 << (SYMBOL_BITS * length)) - 1
    value = start & mask
    value ^= value >> shifts[0]
    value = (value * multiplier) & mask
    value ^= value >> shifts[1]
    symbols = []
    for _ in range(length):
        value, digit = divmod(value, len(CODE_ALPHABET))
        symbols.append(CODE_ALPHABET[digit])
    return "".join(reversed(symbols))
