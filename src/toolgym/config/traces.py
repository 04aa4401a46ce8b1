"""`toolgym traces diff`'s settings: which passes of two runs are compared, and where the tables also go."""

from __future__ import annotations

from pathlib import Path

from toolgym.config.base import Section


class TracesDiffConfig(Section):
    """`toolgym traces diff RUN_A RUN_B`: calls per tool, turns, format errors, error/timeout/final-answer/tool-call
    rates, tokens, same-denominator success tests and flipped tasks."""

    greedy: bool = False
    """Compare the runs' greedy/ passes instead of their trials (the default when a run has no trials, e.g. a
    greedy-only eval)."""
    markdown: Path | None = None
    """Also write the tables to this markdown file."""
