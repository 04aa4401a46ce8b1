"""`run_grpo`: GRPO on multi-turn tool use — sample, score, group, update, evaluate, checkpoint, resume.

Each step: the curriculum picks `tasks_per_step` train tasks; the current policy (the trainer's own
weights, in-process) plays `samples_per_task` episodes of each (with `dynamic_sampling`, fresh tasks are
drawn and played until enough groups carry signal); errored episodes leave their group;
shaped rewards give group advantages; the clipped surrogate (+ optional k3 KL) updates the weights.
With `off_policy`, the next step's episodes are sampled while the update runs (off_policy.py).
Checkpoints hold weights or adapter, optimizer, scheduler, RNG, curriculum and step, so re-running
the same command resumes as if the run had never stopped. Evals land in `OUT/evals/step-<N>/`
(periodic_eval.py), the best step per split in `OUT/best/<split>/`, one metrics row per step in
`OUT/metrics.jsonl` (step_metrics.py).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from toolgym.algorithms.advantages import Group, GroupStats, build_groups
from toolgym.algorithms.losses import cross_entropy_logprobs
from toolgym.algorithms.registry import lookup
from toolgym.algorithms.turn_credit import assign_credit, credit_metrics
from toolgym.dataset.manifest import write_manifest
from toolgym.envs import Environment, make_env
from toolgym.policy.base import TrainableEngine
from toolgym.policy.engines import build_trainable_engine
from toolgym.rollout.results import episode_to_row
from toolgym.rollout.tasks import load_tasks, select_tasks, tasks_file
from toolgym.schema import Episode, Task
from toolgym.schema.jsonl import read_models, write_jsonl
from toolgym.train.batching import Batch
from toolgym.train.checkpoint import export_model, install_adapter_hooks
from toolgym.train.distributed import as_float, export_on_main, is_main_process, make_accelerator
from toolgym.train.grpo.config import GRPOConfig
from toolgym.train.grpo.distributed import (
    DistributedGRPOError,
    check_launch,
    on_main,
    process_shard,
    sample_shared,
    sum_stats,
)
from toolgym.train.grpo.model_setup import disable_dropout, forget_earlier_accelerator, load_model_for_grpo
from toolgym.train.grpo.off_policy import RolloutPrefetch, SampledStep, sample_now, within_staleness
from toolgym.train.grpo.periodic_eval import evaluate_step
from toolgym.train.grpo.preflight import PreflightError, check_preflight
from toolgym.train.grpo.reference import build_reference
from toolgym.train.grpo.result import GRPOError, GRPOResult, progress_bar, stats_text
from toolgym.train.grpo.rollouts import make_rollout_pool, step_sampling
from toolgym.train.grpo.run_state import manifest_fields, resume_state, save_state
from toolgym.train.grpo.step_metrics import check_all_errored, check_collapse, family_counts, rollout_metrics
from toolgym.train.grpo.update import policy_update
from toolgym.train.loss import supervised_logits
from toolgym.train.metrics import MetricsLog
from toolgym.train.optim import build_optimizer, build_scheduler
from toolgym.train.runtime import RunClock, resolve_device, resolve_precision

__all__ = ["GRPOError", "GRPOResult", "load_model_for_grpo", "rollout_metrics", "run_grpo"]

FINAL_DIR = "final"
ROLLOUTS_DIR = "rollouts"
PENDING_KEY = "pending_rollouts"  # trainer state: off-policy rollouts sampled for the step after the checkpoint


class _Run:
    """One GRPO run; `run()` drives it to a GRPOResult."""

    def __init__(self, config: GRPOConfig, *, console: Any | None, progress: bool,
                 env_factory: Callable[[str], Environment], reward_fn: Callable[[Episode], float] | None) -> None:
        config.check_engine()
        self.config = config
        self.console = console
        self.progress = progress
        self.env_factory = env_factory
        self.reward_fn = reward_fn
        self.out = Path(config.out)
        self.clock = RunClock()
        self.prefetch: RolloutPrefetch | None = None

    def say(self, text: str) -> None:
        if self.console is not None and is_main_process():
            self.console.print(text)

    def label(self, step: int) -> str:
        """The name of the weights after `step` updates (what the rollout engine is told it serves)."""
        return f"{self.out.resolve()}@step-{step}"

    # -- setup ------------------------------------------------------------------------------------

    def load_tasks(self) -> None:
        config = self.config
        self.tasks_path, self.train_tasks = load_tasks(config.tasks, split=config.split, envs=config.envs,
                                                       limit=config.limit)
        if len(self.train_tasks) < 1:
            raise GRPOError(f"no tasks in {self.tasks_path} match split={config.split} envs={config.envs}")
        self.tasks_by_id = {t.id: t for t in self.train_tasks}
        if len(self.tasks_by_id) != len(self.train_tasks):
            raise GRPOError(f"{self.tasks_path}: duplicate task ids; GRPO groups are keyed by task id")
        self.eval_tasks: list[Task] = []
        if config.eval.enabled:
            every = read_models(tasks_file(config.tasks), Task)
            for split in config.eval.splits:
                self.eval_tasks.extend(select_tasks(every, split=split, envs=config.eval.envs,
                                                    limit=config.eval.limit))

    def build(self) -> None:
        from transformers import AutoTokenizer, set_seed

        config = self.config
        if config.threads:
            torch.set_num_threads(config.threads)
        device = resolve_device(config.engine.device)
        forget_earlier_accelerator()
        self.accelerator = make_accelerator(device=device, mixed_precision=resolve_precision(config.optim.precision, device))
        try:  # several processes: DDP, each rank sampling its share of the groups (grpo/distributed.py)
            check_launch(self.accelerator, config.engine.name, config.off_policy.enabled)
        except DistributedGRPOError as exc:
            raise GRPOError(str(exc)) from exc
        if device.startswith("cuda") and config.preflight.enabled:  # refuse before the weights load, not in an OOM
            try:
                note = check_preflight(config, processes=self.accelerator.num_processes,
                                       device=str(self.accelerator.device))
            except PreflightError as exc:
                raise GRPOError(str(exc)) from exc
            if note:
                self.say(note)
        set_seed(config.seed)
        self.tokenizer = AutoTokenizer.from_pretrained(config.model, local_files_only=True)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (self.tokenizer.eos_token_id or 0))
        model = load_model_for_grpo(config)
        disable_dropout(model)
        # Full fine-tuning has no switch-off for its update: with KL, the reference is a frozen copy of the start.
        self.reference_model = build_reference(model, config, self.accelerator.device)
        optimizer = build_optimizer(model, config.optim.lr, config.optim.weight_decay,
                                    name=config.experimental.optimizer, momentum=config.experimental.momentum)
        total_updates = config.steps * config.optim.mini_batches * config.optim.update_epochs
        self.scheduler = build_scheduler(optimizer, config.optim.schedule, config.optim.warmup_steps, total_updates)
        self.model, self.optimizer = self.accelerator.prepare(model, optimizer)
        self.accelerator.register_for_checkpointing(self.scheduler)
        if config.lora.enabled:
            install_adapter_hooks(self.accelerator)
        autocast_dtype = torch.bfloat16 if self.accelerator.mixed_precision == "bf16" else None
        # The rollout engine of engine.name, from the registry; it serves the trainer's weights once told their
        # label (weights_changed) and reports what following them cost (sync_metrics).
        self.policy: TrainableEngine = build_trainable_engine(
            config.engine.name, config, self.accelerator.unwrap_model(self.model), self.tokenizer,
            name=f"grpo:{self.out.resolve()}", device=str(self.accelerator.device), autocast_dtype=autocast_dtype)
        sampling = config.sampling
        self.sampling = sampling.to_params()
        slots = config.concurrency or config.tasks_per_step * config.samples_per_task
        self.turn_progress = lookup("credit", config.advantage.credit).turn_progress
        limits = sampling.model_copy(update={"turn_progress": True}) if self.turn_progress else sampling
        self.pool = make_rollout_pool(config, self.policy, slots=slots, env_factory=self.env_factory,
                                      limits=limits, out=self.out)
        self.metrics = MetricsLog(self.out, self.accelerator)
        if config.off_policy.enabled:
            self.prefetch = RolloutPrefetch(self.sample_step)

    # -- resume and save --------------------------------------------------------------------------

    def manifest_fields(self) -> dict[str, Any]:
        return manifest_fields(self.config, self.accelerator, self.tasks_path, len(self.train_tasks),
                               len(self.eval_tasks))

    def resume(self) -> dict[str, Any]:
        state, self.curriculum = resume_state(self.out, self.config, self.accelerator, self.manifest_fields(),
                                              self.tasks_by_id, self.metrics)
        pending = state.pop(PENDING_KEY, None)
        if pending is not None and self.prefetch is not None:
            self.prefetch.hold(SampledStep.from_state(pending, self.tasks_by_id))
        return state

    def save(self, step: int, state: dict[str, Any], elapsed: float, cpu: float) -> None:
        pending = self.prefetch.wait() if self.prefetch is not None else None
        if pending is not None:
            state[PENDING_KEY] = pending.to_state()
        save_state(self.out, self.config, self.accelerator, step, state, self.curriculum, elapsed, cpu)
        state.pop(PENDING_KEY, None)

    # -- one step ---------------------------------------------------------------------------------

    def choose_tasks(self, step: int, round_index: int = 0, drawn: frozenset[str] = frozenset()) -> list[Task]:
        """The curriculum's draw for one step (and sampling round), leaving out tasks drawn earlier in the step."""
        key = f"toolgym-grpo-tasks/{self.config.seed}/{step}" + (f"/{round_index}" if round_index else "")
        candidates = [i for i in self.tasks_by_id if i not in drawn]
        if not candidates:
            return []
        ids = self.curriculum.sample(candidates, self.config.tasks_per_step, random.Random(key))
        return [self.tasks_by_id[i] for i in ids]

    def build_groups(self, episodes: list[Episode]) -> tuple[list[Group], GroupStats]:
        advantage, experimental = self.config.advantage, self.config.experimental
        return build_groups(episodes, self.config.reward.alpha_for, std_normalize=advantage.std_normalize,
                            positive_only=experimental.positive_only, baseline=advantage.baseline,
                            solved_anchor=experimental.solved_anchor,
                            anchor_episodes=experimental.anchor_episodes, reward_fn=self.reward_fn)

    def sample_step(self, step: int) -> tuple[list[Task], list[Episode], int]:
        """The step's tasks, their episodes and the sampling rounds it took: one round, or with dynamic
        sampling more rounds of fresh tasks until tasks_per_step groups carry signal (or max_rounds)."""
        config = self.config
        rounds = config.dynamic_sampling.max_rounds if config.dynamic_sampling.enabled else 1
        tasks: list[Task] = []
        episodes: list[Episode] = []
        with_signal = 0
        used = 0
        for round_index in range(rounds):
            chosen = self.choose_tasks(step, round_index, frozenset(t.id for t in tasks))
            if not chosen:
                break
            sampling = step_sampling(self.sampling, config.seed, step, round_index)
            sampled = sample_shared(self.accelerator, chosen, config.samples_per_task,
                                    lambda mine, sampling=sampling: asyncio.run(
                                        self.pool.run(mine, config.samples_per_task, sampling)))
            tasks += chosen
            episodes += sampled
            used += 1
            if used == rounds:  # no round follows: train_step builds the groups once, over every round
                break
            with_signal += self.build_groups(sampled)[1].groups_with_signal
            if with_signal >= config.tasks_per_step:
                break
        return tasks, episodes, used

    def rollouts(self, step: int) -> SampledStep:
        """The episodes step `step` trains on: prefetched during the previous update (off-policy; those past
        the staleness bound dropped) or, when none are left, sampled now by the current weights."""
        too_stale = 0
        if self.prefetch is not None:
            held = self.prefetch.take(step)
            if held is not None:
                held = within_staleness(held, self.config.off_policy.max_staleness)
                if held.episodes:
                    return held
                too_stale = held.too_stale
        self.policy.weights_changed(self.label(step))
        sampled = sample_now(self.sample_step, step, version=step)
        sampled.too_stale = too_stale
        return sampled

    def reference(self) -> Callable[[Batch], torch.Tensor] | None:
        if self.config.loss.kl_coef <= 0:
            return None
        model = self.reference_model

        def logprobs(batch: Batch) -> torch.Tensor:
            with torch.no_grad(), self.accelerator.autocast():
                if model is not None:
                    logits, targets = supervised_logits(model, batch)
                else:  # LoRA: the reference is the base, i.e. the adapter switched off
                    with self.accelerator.unwrap_model(self.model).disable_adapter():
                        logits, targets = supervised_logits(self.model, batch)
                return cross_entropy_logprobs(logits, targets)

        return logprobs

    def train_step(self, step: int, state: dict[str, Any]) -> dict[str, Any]:
        config = self.config
        began = time.perf_counter()
        sampled = self.rollouts(step)
        tasks, episodes, rounds = sampled.tasks, sampled.episodes, sampled.rounds
        rollout_s = time.perf_counter() - began
        if config.save_rollouts and self.accelerator.is_main_process:
            task_of = {t.id: t for t in tasks}
            write_jsonl(self.out / ROLLOUTS_DIR / f"step-{step + 1}.jsonl",
                        [{**episode_to_row(e, task_of.get(e.task_id)), "policy_version": sampled.versions[i],
                          "staleness": sampled.staleness(i)} for i, e in enumerate(episodes)])
        groups, group_stats = self.build_groups(episodes)
        assign_credit(groups, config.advantage)  # credit episode: every group stays as build_groups left it
        for group in groups:
            self.curriculum.record(group.task_id, len(group.episodes), sum(e.succeeded for e in group.episodes))
        if self.prefetch is not None and step + 1 < config.steps:  # the next step samples during this update
            self.policy.weights_changed(self.label(step))
            self.prefetch.start(step + 1, version=step)
        rewards = [r for g in groups for r in g.rewards]
        update_began = time.perf_counter()
        lr = float(self.scheduler.get_last_lr()[0])
        self.model.train()
        rng = random.Random(f"toolgym-grpo-mini/{config.seed}/{step}")
        stats = policy_update(  # no optimizer step when no episode is trained (train_items decides which)
            self.model, self.optimizer, groups, config, pad_id=self.pad_id,
            device=self.accelerator.device, rng=rng, backward=self.accelerator.backward,
            clip_grad=self._clip_grad, autocast=self.accelerator.autocast, reference=self.reference(),
            shard=process_shard(self.accelerator, self.model))  # every rank holds all groups, trains its share
        stats = sum_stats(self.accelerator, stats)
        for _ in range(stats.optimizer_steps):  # the schedule counts optimizer steps (none without signal)
            self.scheduler.step()
        update_s = time.perf_counter() - update_began
        off_policy = ({"seconds_rollout_wait": round(rollout_s, 3), "episodes_too_stale": sampled.too_stale}
                      if self.prefetch is not None else {})
        row: dict[str, Any] = {"kind": "train", "step": step + 1, "lr": lr,
                               **rollout_metrics(episodes, group_stats, rewards), **stats.row(),
                               "updated": stats.optimizer_steps > 0, "sampling_rounds": rounds,
                               "seconds_rollout": round(sampled.seconds if self.prefetch else rollout_s, 3),
                               "seconds_update": round(update_s, 3), **sampled.row(), **off_policy,
                               "curriculum_weights": self.curriculum.weight_counts(),
                               "families": family_counts(groups, self.tasks_by_id),
                               **(credit_metrics(episodes, groups) if self.turn_progress else {}),
                               **self.policy.sync_metrics(),  # e.g. vllm: the step's weight sync
                               **getattr(self.pool, "sync_metrics", dict)()}  # Ray workers: the step's weight load
        row["tool_call_collapse"] = check_collapse(row, state, config.monitor, self.say)
        return row

    def _clip_grad(self, max_norm: float) -> float:
        parameters = [p for p in self.model.parameters() if p.requires_grad]
        if max_norm and max_norm > 0:
            return as_float(self.accelerator.clip_grad_norm_(parameters, max_norm))
        grads = [p.grad.detach().norm() for p in parameters if p.grad is not None]
        return float(torch.stack(grads).norm()) if grads else 0.0

    # -- eval and export --------------------------------------------------------------------------

    def evaluate(self, step: int, state: dict[str, Any]) -> dict[str, Any]:
        if self.prefetch is not None:  # the engine serves the eval's weights only once the prefetch is done
            self.prefetch.wait()

        def work() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
            numbers = evaluate_step(self.config, self.policy, step, state, out=self.out, eval_tasks=self.eval_tasks,
                                    tasks_path=self.tasks_path, env_factory=self.env_factory, export=self.export,
                                    metrics=self.metrics)
            return numbers, state["best"], state.get("evals", {})

        numbers, state["best"], state["evals"] = on_main(self.accelerator, work)  # the other ranks wait for it
        return numbers

    def export(self, relative: Path) -> Path:
        return export_model(self.accelerator.unwrap_model(self.model), self.tokenizer, self.config.model,
                            self.out / relative)

    # -- the loop ---------------------------------------------------------------------------------

    def run(self) -> GRPOResult:
        self.load_tasks()
        self.build()
        state = self.resume()
        config = self.config
        total = config.steps
        resumed_from = int(state["step"])
        if resumed_from:
            self.say(f"resuming {self.out} from step {resumed_from}/{total}")
        self.say(f"GRPO: {len(self.train_tasks)} train tasks · {config.tasks_per_step} tasks × "
                 f"{config.samples_per_task} episodes per step · {total} steps · eval tasks {len(self.eval_tasks)} · "
                 f"precision {self.accelerator.mixed_precision} · "
                 + (f"LoRA r={config.lora.rank}" if config.lora.enabled else "full weights")
                 + (" · off-policy rollouts" if config.off_policy.enabled else ""))
        self.clock.start_loop(float(state.get("elapsed_s", 0.0)), float(state.get("cpu_s", 0.0)))
        success_rates: list[float] = []
        try:
            if config.eval.enabled and self.eval_tasks and resumed_from == 0 and "0" not in state.get("evals", {}):
                self.evaluate(0, state)
            with progress_bar(self.console, self.progress) as bar:
                task = bar.add_task("grpo", total=total, completed=resumed_from, stats="")
                for step in range(resumed_from, total):
                    row = self.train_step(step, state)
                    elapsed, cpu = self.clock.loop_seconds()
                    row["elapsed_s"], row["cpu_s"] = round(elapsed, 3), round(cpu, 3)
                    self.metrics.write(row)
                    check_all_errored(row, state, config.monitor, self.say)
                    if row["success_rate"] is not None:
                        success_rates.append(row["success_rate"])
                    done = step + 1 == total
                    every = config.eval.every
                    if config.eval.enabled and self.eval_tasks and (done or (every and (step + 1) % every == 0)):
                        self.evaluate(step + 1, state)
                    if done or (step + 1) % config.checkpoint.save_every == 0:
                        self.save(step + 1, state, *self.clock.loop_seconds())
                    state["step"] = step + 1
                    bar.update(task, advance=1, stats=stats_text(row))
            final_dir = export_on_main(self.accelerator, self.model, self.tokenizer, self.config.model,
                                       self.out / FINAL_DIR)
        finally:
            if self.prefetch is not None:
                self.prefetch.close()
            self.pool.close()
            asyncio.run(self.policy.close())
        seconds, cpu = self.clock.call_seconds()
        result = GRPOResult(
            out_dir=str(self.out), steps=int(state["step"]), total_steps=total, resumed_from_step=resumed_from,
            final_dir=str(final_dir), base_model=str(Path(config.model).resolve()), lora=config.lora.enabled,
            best=dict(state.get("best", {})),
            evals={int(k): v for k, v in state.get("evals", {}).items()},
            first_success_rate=success_rates[0] if success_rates else None,
            last_success_rate=success_rates[-1] if success_rates else None,
            seconds=seconds, cpu_seconds=cpu)
        if self.accelerator.is_main_process:
            write_manifest(self.out, "grpo", status="complete", result=asdict(result), **self.manifest_fields())
        self.accelerator.end_training()
        return result


def run_grpo(config: GRPOConfig, *, console: Any | None = None, progress: bool = False,
             env_factory: Callable[[str], Environment] = make_env,
             reward_fn: Callable[[Episode], float] | None = None) -> GRPOResult:
    """Train (or resume training) per `config`.

    `reward_fn` replaces the shaped reward with a custom one (errored episodes never reach it);
    `env_factory` builds environments by name (tests add their own apps).
    """
    return _Run(config, console=console, progress=progress, env_factory=env_factory, reward_fn=reward_fn).run()
