"""`toolgym report`'s settings: what a run folder's report.md / report.html shows.

`ReportOptions` is the report builder's own settings type (`toolgym.eval.report` takes it, as does the
pipeline's report stage); the command adds where the report is written.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from toolgym.config.base import REPEATABLE
from toolgym.config.pieces import PassAtK


class ReportOptions(PassAtK):
    """What the report compares and shows."""

    before: Path | None = None
    """Run folder (under RUN_DIR) to compare from (default: the first run in stage order)."""
    after: Path | None = None
    """Run folder (under RUN_DIR) to compare to (default: the last run in stage order)."""
    max_episodes_per_run: int = Field(200, ge=1)
    """Episodes per run in the viewer."""
    train_data: list[Path] = Field(default_factory=list, json_schema_extra={REPEATABLE: True})
    """Extra training data for the leakage check."""
    title: str | None = None
    """Page title (default: Run <folder name>)."""
    runs: list[str] = Field(default_factory=list, json_schema_extra={REPEATABLE: True})
    """Only these run folders (relative to RUN_DIR); empty: every run."""
    detect_points: float = Field(5.0, gt=0, lt=100)
    """Over several seeds: the stage difference (points) whose power each paired test states."""


class ReportConfig(ReportOptions):
    """`toolgym report RUN_DIR`: dataset, stages, training curves, pass@k per env, before/after, trace diff and a
    trajectory viewer, as report.md and one self-contained report.html. `toolgym report RUN_DIR...` over seed runs
    of one pipeline (or a study folder): pooled success per stage and paired tests stratified by seed, with
    study.json."""

    out: str | None = None
    """Where to write report.md / report.html (default: RUN_DIR, or the study folder)."""

    def options(self) -> ReportOptions:
        """The report's own settings, without where it is written."""
        return self.part(ReportOptions)
