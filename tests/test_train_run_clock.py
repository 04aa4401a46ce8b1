"""RunClock: a resumed run's loop time counts the earlier calls' time; the call time counts only this call."""

from __future__ import annotations

import time

from toolgym.train.runtime import RunClock


def test_the_loop_adds_what_earlier_calls_recorded_and_the_call_does_not() -> None:
    clock = RunClock()
    time.sleep(0.02)
    clock.start_loop(100.0, 40.0)
    wall, cpu = clock.loop_seconds()
    call_wall, call_cpu = clock.call_seconds()
    assert 40.0 <= cpu < 41.0 and call_cpu >= 0.0
    assert call_wall >= 0.02  # the call began before the sleep
    assert 100.0 <= wall <= 100.0 + call_wall - 0.02  # the sleep before the loop started is not loop time


def test_a_fresh_loop_counts_from_zero() -> None:
    clock = RunClock()
    clock.start_loop(0.0, 0.0)
    time.sleep(0.01)
    wall, _ = clock.loop_seconds()
    assert 0.01 <= wall < 1.0
