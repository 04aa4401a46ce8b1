"""CPU seconds of this process: the cost measure every trainer and stage reports, since wall time on a
shared machine says more about the neighbours than about the run."""

from __future__ import annotations

import os


def cpu_seconds(*, children: bool = False) -> float:
    """User and system CPU time of this process (all threads), plus its finished children's when asked."""
    times = os.times()
    own = times.user + times.system
    return own + times.children_user + times.children_system if children else own


def cpu_since(started: float, *, children: bool = False) -> float:
    """CPU seconds since `started`, never negative: the kernel may move a tick between user and system time."""
    return max(0.0, cpu_seconds(children=children) - started)
