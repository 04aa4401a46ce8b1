"""Drawing evenly among kinds rather than among items: a kind with one item is as likely as a kind with
twenty, so a task family's draws cover every phrasing or file type, not just the common ones."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

Item = TypeVar("Item")


def pick_group(rng: random.Random, items: Sequence[Item], key: Callable[[Item], Hashable]) -> list[Item]:
    """The items of one kind (`key`), the kind drawn evenly among the sorted distinct kinds; [] when there
    are no items (and then nothing is drawn from `rng`)."""
    if not items:
        return []
    kind = rng.choice(sorted({key(item) for item in items}))  # type: ignore[type-var]
    return [item for item in items if key(item) == kind]
