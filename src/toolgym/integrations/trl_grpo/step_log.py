"""toolgym's metrics.jsonl rows for a run TRL trains: the step's episodes (gathered from every rank) through
toolgym's own row builders, TRL's logged update numbers beside them.

A toolgym step is one generation batch; TRL logs once per optimizer step, `num_iterations` (update_epochs) of
them per batch. The row is written after the batch's last one, with each pass's loss in `losses`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from toolgym.algorithms.advantages import build_groups
from toolgym.config.grpo import GRPOConfig
from toolgym.integrations.trl_grpo.task_draw import TaskDraw
from toolgym.rollout.results import episode_to_row
from toolgym.schema import Episode, Task
from toolgym.schema.jsonl import write_jsonl
from toolgym.train.grpo.step_metrics import check_all_errored, check_collapse, family_counts, rollout_metrics
from toolgym.train.metrics import MetricsLog

ROLLOUTS_DIR = "rollouts"
# TRL's logged names → toolgym's row names where both have the number.
TRL_NAMES = {"loss": "loss", "grad_norm": "grad_norm", "kl": "kl", "entropy": "entropy",
             "clip_ratio/region_mean": "clip_fraction", "reward": "trl_reward_mean",
             "frac_reward_zero_std": "trl_frac_reward_zero_std"}


class StepLog(TrainerCallback):
    """Collects each generation batch's episodes and writes one toolgym metrics row per step."""

    def __init__(self, config: GRPOConfig, tasks_by_id: dict[str, Task], metrics: MetricsLog, *,
                 say: Any, state: dict[str, Any], draw: TaskDraw | None = None) -> None:
        self.config = config
        self.draw = draw
        self.tasks_by_id = tasks_by_id
        self.metrics = metrics
        self.say = say
        self.state = state  # the monitors' memory (tool-call baseline, all-errored steps)
        self.pending: dict[str, Any] | None = None
        self.logs: list[dict[str, float]] = []
        self.update_began = time.perf_counter()
        self.success_rates: list[float] = []

    def on_batch(self, batch: Any, trainer: Any) -> None:
        """rollout_func's report: gather every rank's episodes (all ranks call this once per batch)."""
        from accelerate.utils import gather_object

        accelerator = trainer.accelerator
        episodes: list[Episode] = (gather_object(batch.episodes) if accelerator.num_processes > 1
                                   else list(batch.episodes))
        config = self.config
        groups, stats = build_groups(episodes, config.reward.alpha_for, std_normalize=config.advantage.std_normalize)
        if self.draw is not None:  # on every rank: each holds the same curriculum
            self.draw.record(batch.step, groups, main=accelerator.is_main_process)
        if not accelerator.is_main_process:
            return
        rewards = [r for g in groups for r in g.rewards]
        self.pending = {"kind": "train", "step": batch.step + 1, "backend": "trl",
                        **rollout_metrics(episodes, stats, rewards),
                        "families": family_counts(groups, self.tasks_by_id),
                        "seconds_rollout": round(batch.seconds, 3)}
        if self.draw is not None:
            self.pending["curriculum_weights"] = self.draw.curriculum.weight_counts()
        if config.save_rollouts:
            write_jsonl(Path(config.out) / ROLLOUTS_DIR / f"step-{batch.step + 1}.jsonl",
                        [episode_to_row(e, self.tasks_by_id.get(e.task_id)) for e in episodes])
        self.logs = []
        self.update_began = time.perf_counter()

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> None:
        if not logs or "loss" not in logs or self.pending is None:
            return
        self.logs.append(dict(logs))
        if state.global_step % args.num_iterations:
            return
        row, last = self.pending, {}
        for log in self.logs:  # the batch's reward numbers are logged with its first pass only: keep them
            last.update(log)
        row["lr"] = last.get("learning_rate")
        for trl_name, name in TRL_NAMES.items():
            row[name] = last.get(trl_name)  # kl: None without a KL term, as toolgym's rows have it
        row["loss"] = sum(log["loss"] for log in self.logs) / len(self.logs)
        row["losses"] = [log["loss"] for log in self.logs]
        row["updated"] = True
        row["seconds_update"] = round(time.perf_counter() - self.update_began, 3)
        # the sampler/trainer mismatch TRL measures when vLLM samples (sampling/*), under toolgym-style names
        row.update({"mismatch_" + k.split("/", 1)[1].replace("/", "_"): v for k, v in last.items()
                    if k.startswith("sampling/")})
        row["trl"] = {k: v for k, v in last.items() if isinstance(v, int | float)}
        row["tool_call_collapse"] = check_collapse(row, self.state, self.config.monitor, self.say)
        self.metrics.write(row)
        check_all_errored(row, self.state, self.config.monitor, self.say)
        if row["success_rate"] is not None:
            self.success_rates.append(row["success_rate"])
        self.pending = None
