"""kit.grouped: a kind is drawn evenly whatever its size, and nothing is drawn from an empty list."""

from __future__ import annotations

import random
from collections import Counter

from toolgym.envs.kit.grouped import pick_group


def test_pick_group_draws_kinds_evenly_and_returns_the_whole_kind() -> None:
    items = [("doc", 1)] + [("sheet", n) for n in range(2, 20)]
    rng = random.Random(7)
    kinds = Counter(pick_group(rng, items, lambda i: i[0])[0][0] for _ in range(400))
    assert 150 < kinds["doc"] < 250  # the one doc is as likely as the 18 sheets
    assert pick_group(random.Random(1), items, lambda i: i[0]) in ([items[0]], items[1:])


def test_pick_group_of_nothing_is_empty_and_leaves_the_rng_alone() -> None:
    rng = random.Random(3)
    state = rng.getstate()
    assert pick_group(rng, [], lambda i: i) == []
    assert rng.getstate() == state
