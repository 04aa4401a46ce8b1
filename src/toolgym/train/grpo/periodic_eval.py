"""Evaluation during a GRPO run: the current weights on the held-out splits into OUT/evals/step-<N>/ (the
layout `toolgym eval sweep` and `toolgym report` read), and the best step per split exported to
OUT/best/<split>/."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolgym.envs import Environment
from toolgym.policy.base import Policy
from toolgym.schema import Task
from toolgym.train.grpo.config import GRPOConfig
from toolgym.train.metrics import MetricsLog

EVALS_DIR = "evals"
BEST_DIR = "best"


def evaluate_step(config: GRPOConfig, policy: Policy, step: int, state: dict[str, Any], *, out: Path,
                  eval_tasks: list[Task], tasks_path: Path, env_factory: Callable[[str], Environment],
                  export: Callable[[Path], Path], metrics: MetricsLog) -> dict[str, Any]:
    """Eval the current weights (resumable) and track the best step per split in `state["best"]`."""
    from toolgym.eval.evaluate import run_eval

    settings = config.eval
    policy.weights_changed(f"{out.resolve()}@step-{step}")  # type: ignore[attr-defined]
    result = asyncio.run(run_eval(
        eval_tasks, policy, out_dir=out / EVALS_DIR / f"step-{step}", config=config.eval_config(),
        tasks_path=tasks_path, env_factory=env_factory, name=f"step {step}"))
    k = settings.best_k or settings.ks[0]
    numbers: dict[str, Any] = {}
    for group in result.summary.groups:
        total = group.total
        estimate = total.pass_at.get(k)
        value = estimate.value if estimate is not None and estimate.available else None
        numbers[group.split] = {"passes": total.passes, "scored": total.scored, "errored": total.errored,
                                "episodes": total.episodes, f"pass@{k}": value}
        if group.greedy is not None:
            numbers[group.split]["greedy_passes"] = group.greedy.passes
            numbers[group.split]["greedy_scored"] = group.greedy.scored
        best = state["best"].get(group.split)
        if value is not None and (best is None or value > best["value"]):
            path = export(Path(BEST_DIR) / group.split)
            (path / "best.json").write_text(json.dumps({"step": step, "split": group.split, "k": k,
                                                        "value": value, "passes": total.passes,
                                                        "scored": total.scored}) + "\n")
            state["best"][group.split] = {"step": step, "value": value, "k": k, "dir": str(path)}
    metrics.write({"kind": "eval", "step": step,
                   **{f"eval_{split}_pass@{k}": v[f"pass@{k}"] for split, v in numbers.items()}})
    state.setdefault("evals", {})[str(step)] = numbers
    return numbers
