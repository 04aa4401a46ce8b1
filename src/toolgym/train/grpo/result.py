"""What a GRPO run reports: its error type, its result, and the progress line of each step."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class GRPOError(RuntimeError):
    """The run cannot start or resume (no tasks, changed settings on resume)."""


@dataclass
class GRPOResult:
    out_dir: str
    steps: int
    total_steps: int
    resumed_from_step: int
    final_dir: str
    base_model: str
    lora: bool
    best: dict[str, dict[str, Any]] = field(default_factory=dict)  # split → {step, value, k, dir}
    evals: dict[int, dict[str, Any]] = field(default_factory=dict)  # step → split → numbers
    first_success_rate: float | None = None
    last_success_rate: float | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def render(self) -> str:
        lines = [f"steps {self.steps}/{self.total_steps}"
                 + (f" (resumed from step {self.resumed_from_step})" if self.resumed_from_step else "")]
        if self.first_success_rate is not None and self.last_success_rate is not None:
            lines.append(f"train success rate (this call's first → last step): "
                         f"{self.first_success_rate:.1%} → {self.last_success_rate:.1%}")
        for step, splits in sorted(self.evals.items()):
            parts = [f"{split} {v['passes']}/{v['scored']} (errored {v['errored']})" for split, v in splits.items()]
            lines.append(f"eval step {step}: " + ", ".join(parts))
        for split, best in self.best.items():
            lines.append(f"best {split}: pass@{best['k']} {best['value']:.3f} at step {best['step']} → {best['dir']}")
        lines.append(f"final: {self.final_dir}" + (f" (LoRA adapter on {self.base_model})" if self.lora else ""))
        lines.append(f"{self.seconds / 60:.1f} wall-min · {self.cpu_seconds / 60:.1f} CPU-min (this call)")
        return "\n".join(lines)


def stats_text(row: dict[str, Any]) -> str:
    """The progress bar's summary of one step's metrics row."""
    rate = row.get("success_rate")
    reward = row.get("reward_mean")
    return (f"success {row['successes']}/{row['scored_episodes']}"
            + (f" ({rate:.0%})" if rate is not None else "")
            + (f" · reward {reward:.3f}" if reward is not None else "")
            + f" · signal {row['groups_with_signal']}/{row['groups']} groups · errors {row['episodes_errored']}")


def progress_bar(console: Any | None, enabled: bool) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]grpo"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[stats]}"),
                    TimeElapsedColumn(), console=console, disable=not enabled or console is None)
