"""cpu_seconds/cpu_since: a busy loop shows up, a difference is never negative, children add their time."""

from __future__ import annotations

import subprocess
import sys

from toolgym.cpu_time import cpu_seconds, cpu_since


def test_a_busy_loop_counts_and_a_later_reading_is_never_below_zero() -> None:
    started = cpu_seconds()
    total = 0
    while cpu_since(started) < 0.05:
        total += 1
    assert total > 0
    assert cpu_since(cpu_seconds() + 10.0) == 0.0  # a start in the future clamps at zero


def test_finished_children_count_only_when_asked() -> None:
    own, with_children = cpu_seconds(), cpu_seconds(children=True)
    subprocess.run([sys.executable, "-c", "x = 0\nfor i in range(3_000_000): x += i"], check=True)
    assert cpu_since(with_children, children=True) - cpu_since(own) > 0.05
