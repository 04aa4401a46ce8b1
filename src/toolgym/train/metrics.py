"""metrics.jsonl (always) and TensorBoard / W&B through accelerate's trackers (only when installed and asked).

A resumed run first drops the rows logged after its checkpoint (they will be computed again), so the
file holds one continuous curve with one row per step.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from toolgym.schema.jsonl import iter_lines

METRICS_FILE = "metrics.jsonl"
TRACKERS = ("tensorboard", "wandb")


def check_trackers(report_to: list[str]) -> list[str]:
    """The trackers asked for; a tracker that is not installed is an error, not a silent no-op."""
    from accelerate.utils import is_tensorboard_available, is_wandb_available

    available = {"tensorboard": is_tensorboard_available, "wandb": is_wandb_available}
    for name in report_to:
        if name not in TRACKERS:
            raise ValueError(f"unknown tracker {name!r}; use {', '.join(TRACKERS)}")
        if not available[name]():
            package = "tensorboard" if name == "tensorboard" else "wandb"
            raise ValueError(f"--report-to {name} needs the {package!r} package, which is not installed")
    return list(report_to)


class MetricsLog:
    """Append-and-fsync rows to `metrics.jsonl`; mirror numbers to accelerate trackers if any."""

    def __init__(self, out_dir: str | Path, accelerator: Any | None = None) -> None:
        self.path = Path(out_dir) / METRICS_FILE
        self.accelerator = accelerator

    @property
    def enabled(self) -> bool:
        return self.accelerator is None or self.accelerator.is_main_process

    def reset(self, keep_through_step: int) -> int:
        """Keep rows with step ≤ keep_through_step (0: start a new file); returns rows dropped."""
        if not self.enabled or not self.path.exists():
            return 0
        # A line a kill cut short is dropped here, not fatal: otherwise every resume would trip on it.
        rows = [row for _, row in iter_lines(self.path) if isinstance(row, dict)]
        kept = [r for r in rows if int(r.get("step", 0)) <= keep_through_step] if keep_through_step > 0 else []
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w", encoding="utf-8") as handle:
            for row in kept:
                handle.write(json.dumps(row) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)
        return len(rows) - len(kept)

    def write(self, row: dict[str, Any]) -> None:
        if not self.enabled:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        if self.accelerator is not None and self.accelerator.trackers:
            numbers = {f"{row.get('kind', 'train')}/{k}": v for k, v in row.items()
                       if isinstance(v, int | float) and not isinstance(v, bool) and k != "step"}
            self.accelerator.log(numbers, step=int(row["step"]))


def read_metrics(out_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(out_dir) / METRICS_FILE
    if not path.exists():
        return []
    return [row for _, row in iter_lines(path) if isinstance(row, dict)]  # a torn last line is skipped
