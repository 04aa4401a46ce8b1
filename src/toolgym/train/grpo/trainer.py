"""`run_grpo`: GRPO on multi-turn tool use — sample, score, group, update, evaluate, checkpoint, resume.

Each step: the curriculum picks `tasks_per_step` train tasks; the current policy (the trainer's own
weights, in-process) plays `samples_per_task` episodes of each (with `dynamic_sampling`, fresh tasks are
drawn and played until enough groups carry signal); errored episodes leave their group;
shaped rewards give group advantages; the clipped surrogate (+ optional k3 KL) updates the weights.
Checkpoints hold weights or adapter, optimizer, scheduler, RNG, curriculum and step, so re-running
the same command resumes as if the run had never stopped. Evals land in `OUT/evals/step-<N>/`
(the layout `toolgym eval sweep` and `toolgym report` read), the best step per split in
`OUT/best/<split>/`, one metrics row per step in `OUT/metrics.jsonl`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from toolgym.dataset.manifest import read_manifest, sha256_file, write_manifest
from toolgym.envs import Environment, make_env
from toolgym.policy.base import SamplingParams
from toolgym.rollout.results import episode_to_row
from toolgym.rollout.tasks import load_tasks, select_tasks, tasks_file
from toolgym.schema import Episode, Task
from toolgym.schema.jsonl import read_models, write_jsonl
from toolgym.train.batching import Batch
from toolgym.train.checkpoint import (
    changed_since_checkpoint,
    export_model,
    install_adapter_hooks,
    latest_checkpoint,
    load_checkpoint,
    remove_partial_checkpoints,
    save_checkpoint,
)
from toolgym.train.grpo.advantages import Group, GroupStats, build_groups
from toolgym.train.grpo.config import GRPOConfig, fingerprint_of_recorded
from toolgym.train.grpo.curriculum import Curriculum, CurriculumRule
from toolgym.train.grpo.losses import cross_entropy_logprobs
from toolgym.train.grpo.policy import SharedModelPolicy
from toolgym.train.grpo.rollouts import RolloutPool, step_sampling
from toolgym.train.grpo.update import policy_update
from toolgym.train.loss import supervised_logits
from toolgym.train.metrics import MetricsLog
from toolgym.train.optim import build_optimizer, build_scheduler
from toolgym.train.runtime import apply_lora, cpu_seconds, resolve_device, resolve_precision

EVALS_DIR = "evals"
BEST_DIR = "best"
FINAL_DIR = "final"
ROLLOUTS_DIR = "rollouts"


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


def load_model_for_grpo(config: GRPOConfig) -> Any:
    """The CausalLM to train, from a local folder, with rope scaling and LoRA as configured."""
    from transformers import AutoConfig, AutoModelForCausalLM

    path = Path(config.model)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path}: not a model folder (no config.json)")
    model_config = AutoConfig.from_pretrained(str(path), local_files_only=True)
    engine = config.engine
    if engine.rope_scaling is not None:  # transformers 5 calls it rope_parameters (rope_theta kept from the folder)
        field_name = "rope_parameters" if hasattr(model_config, "rope_parameters") else "rope_scaling"
        setattr(model_config, field_name, {**(getattr(model_config, field_name, None) or {}), **engine.rope_scaling})
    if engine.max_position_embeddings is not None:
        model_config.max_position_embeddings = engine.max_position_embeddings
    dtype = torch.bfloat16 if engine.dtype == "bfloat16" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(str(path), config=model_config, dtype=dtype, local_files_only=True)
    if config.optim.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if config.lora.enabled:
            model.enable_input_require_grads()
    if config.lora.enabled:
        model = apply_lora(model, config.lora)
    return model


def _forget_earlier_accelerator() -> None:
    """accelerate keeps one process-wide state: an SFT stage run earlier in this process (the pipeline) with
    another precision would make `Accelerator(...)` refuse. Single-process runs start from a clean state."""
    from accelerate.state import AcceleratorState, PartialState

    if AcceleratorState._shared_state and PartialState().num_processes == 1:
        AcceleratorState._reset_state()


def _disable_dropout(model: torch.nn.Module) -> None:
    """Dropout off everywhere (LoRA's too): sampled and trained log-probs must come from one policy."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rollout_metrics(episodes: list[Episode], groups_stats: GroupStats, rewards: list[float]) -> dict[str, Any]:
    """The step's episode statistics (errored episodes counted, never averaged in)."""
    scored = [e for e in episodes if e.status != "error"]
    passes = sum(e.succeeded for e in scored)
    tool_calls = [sum(e.tool_calls_by_tool.values()) for e in scored]
    return {
        "episodes": len(episodes),
        "episodes_errored": groups_stats.episodes_errored,
        "episodes_truncated": sum(e.status == "truncated" for e in scored),
        "scored_episodes": len(scored),
        "successes": passes,
        "success_rate": passes / len(scored) if scored else None,
        "reward_mean": _mean(rewards),
        "reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else (0.0 if rewards else None),
        "task_reward_mean": _mean([e.reward for e in scored]),
        "partial_score_mean": _mean([e.partial_score for e in scored]),
        "groups": groups_stats.groups,
        "groups_with_signal": groups_stats.groups_with_signal,
        "groups_too_small": groups_stats.groups_too_small,
        "groups_zero_variance": groups_stats.groups_zero_variance,
        "groups_anchored": groups_stats.groups_anchored,
        "tool_calls_per_episode": _mean([float(n) for n in tool_calls]),
        "format_errors_per_episode": _mean([float(e.format_errors) for e in scored]),
        "tool_errors_per_episode": _mean([float(e.tool_errors) for e in scored]),
        "turns_mean": _mean([float(e.turns) for e in scored]),
        "response_tokens_mean": _mean([float(sum(len(t.completion_ids) for t in e.token_turns)) for e in scored]),
        # mean -log p of the sampled tokens: a Monte Carlo estimate of the sampling entropy, every step
        "sampled_token_nll": _mean([-lp for e in scored for t in e.token_turns for lp in t.logprobs]),
        "errors_by_cause": groups_stats.errors_by_cause,
        "error_examples": groups_stats.error_examples,
    }


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
        self.started = time.perf_counter()
        self.cpu_started = cpu_seconds()

    def say(self, text: str) -> None:
        if self.console is not None:
            self.console.print(text)

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
        from accelerate import Accelerator
        from transformers import AutoTokenizer, set_seed

        config = self.config
        if config.threads:
            torch.set_num_threads(config.threads)
        device = resolve_device(config.engine.device)
        _forget_earlier_accelerator()
        self.accelerator = Accelerator(cpu=device == "cpu", mixed_precision=resolve_precision(config.optim.precision, device))
        if self.accelerator.num_processes > 1:
            raise GRPOError("GRPO runs in one process for now (rollouts share the trainer's model in-process)")
        set_seed(config.seed)
        self.tokenizer = AutoTokenizer.from_pretrained(config.model, local_files_only=True)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (self.tokenizer.eos_token_id or 0))
        model = load_model_for_grpo(config)
        _disable_dropout(model)
        self.reference_model = None
        if config.loss.kl_coef > 0 and not config.lora.enabled:
            # Full fine-tuning has no switch-off for its update: the reference is a frozen copy of the start.
            self.reference_model = copy.deepcopy(model).eval().requires_grad_(False)
        optimizer = build_optimizer(model, config.optim.lr, config.optim.weight_decay,
                                    name=config.experimental.optimizer, momentum=config.experimental.momentum)
        total_updates = config.steps * config.optim.mini_batches * config.optim.update_epochs
        self.scheduler = build_scheduler(optimizer, config.optim.schedule, config.optim.warmup_steps, total_updates)
        self.model, self.optimizer = self.accelerator.prepare(model, optimizer)
        self.accelerator.register_for_checkpointing(self.scheduler)
        if config.lora.enabled:
            install_adapter_hooks(self.accelerator)
        if self.reference_model is not None:
            self.reference_model.to(self.accelerator.device)
        autocast_dtype = torch.bfloat16 if self.accelerator.mixed_precision == "bf16" else None
        unwrapped = self.accelerator.unwrap_model(self.model)
        if config.engine.name == "vllm":  # rollouts in vLLM, the trainer's weights pushed and verified each step
            from toolgym.train.grpo.weight_sync import build_vllm_engine

            self.policy = build_vllm_engine(config, unwrapped, self.tokenizer)
        else:
            self.policy = SharedModelPolicy(
                unwrapped, self.tokenizer, name=f"grpo:{self.out.resolve()}", device=str(self.accelerator.device),
                max_batch_size=config.engine.max_batch_size, batch_wait_ms=config.engine.batch_wait_ms,
                autocast_dtype=autocast_dtype)
        sampling = config.sampling
        self.sampling = SamplingParams(temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k,
                                       max_new_tokens=sampling.max_new_tokens, stop=list(sampling.stop))
        slots = config.concurrency or config.tasks_per_step * config.samples_per_task
        self.episode_kwargs: dict[str, Any] = {
            "max_turns": sampling.max_turns, "max_context_tokens": sampling.max_context_tokens,
            "timeout_s": sampling.timeout_s, "done_tool": sampling.done_tool,
            "max_format_errors": sampling.max_format_errors,
        }
        self.pool = RolloutPool(self.policy, slots=slots, env_factory=self.env_factory,
                                episode_kwargs=self.episode_kwargs)
        self.metrics = MetricsLog(self.out, self.accelerator)

    # -- resume -----------------------------------------------------------------------------------

    def manifest_fields(self) -> dict[str, Any]:
        config = self.config
        return {
            "config": config.model_dump(mode="json"),
            "config_fingerprint": config.fingerprint(),
            "base_model": str(Path(config.model).resolve()),
            "tasks_path": str(self.tasks_path),
            "tasks_sha256": sha256_file(self.tasks_path),
            "train_tasks": len(self.train_tasks),
            "eval_tasks": len(self.eval_tasks),
            "lora": config.lora.enabled,
            "seed": config.seed,
            "mixed_precision": self.accelerator.mixed_precision,
            "device": str(self.accelerator.device),
        }

    def resume(self) -> dict[str, Any]:
        fields = self.manifest_fields()
        previous = read_manifest(self.out)
        if previous and isinstance(previous.get("config"), dict) \
                and previous.get("config_fingerprint") != fields["config_fingerprint"]:
            # a run recorded under an earlier fingerprint rule (or shape) is judged by today's rule
            previous = {**previous, "config_fingerprint": fingerprint_of_recorded(previous["config"])}
        latest = latest_checkpoint(self.out)
        changed = changed_since_checkpoint(self.out, previous, fields, ("config_fingerprint", "tasks_sha256", "base_model"))
        if changed:
            raise GRPOError(f"{self.out} holds a GRPO run with a different {', '.join(changed)}; resume with the "
                            "same config, tasks and model, or choose another out folder")
        remove_partial_checkpoints(self.out)
        curriculum = self.config.curriculum
        rule = CurriculumRule(curriculum.min_attempts, curriculum.easy_above, curriculum.easy_weight,
                              curriculum.hard_below, curriculum.hard_weight, curriculum.default_weight,
                              kind=curriculum.rule)
        state: dict[str, Any] = {"step": 0, "curriculum": Curriculum(rule, curriculum.enabled, curriculum.scope,
                                                                   curriculum.stratify).to_dict(),
                                 "best": {}, "tool_call_baseline": [], "elapsed_s": 0.0, "cpu_s": 0.0}
        if latest is not None:
            state.update(load_checkpoint(self.accelerator, latest))
        self.curriculum = Curriculum.from_dict(state["curriculum"])
        self.curriculum.scope_of = {task.id: f"{task.env}/{task.family}" for task in self.tasks_by_id.values()}
        self.metrics.reset(int(state["step"]))
        write_manifest(self.out, "grpo", status="running", resumed_from_step=state["step"], **fields)
        return state

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
            sampled = asyncio.run(self.pool.run(chosen, config.samples_per_task, sampling))
            tasks += chosen
            episodes += sampled
            used += 1
            if used == rounds:  # no round follows: train_step builds the groups once, over every round
                break
            with_signal += self.build_groups(sampled)[1].groups_with_signal
            if with_signal >= config.tasks_per_step:
                break
        return tasks, episodes, used

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
        self.policy.weights_changed(f"{self.out.resolve()}@step-{step}")
        tasks, episodes, rounds = self.sample_step(step)
        rollout_s = time.perf_counter() - began
        if config.save_rollouts:
            task_of = {t.id: t for t in tasks}
            write_jsonl(self.out / ROLLOUTS_DIR / f"step-{step + 1}.jsonl",
                        [episode_to_row(e, task_of.get(e.task_id)) for e in episodes])
        groups, group_stats = self.build_groups(episodes)
        for group in groups:
            self.curriculum.record(group.task_id, len(group.episodes), sum(e.succeeded for e in group.episodes))
        rewards = [r for g in groups for r in g.rewards]
        update_began = time.perf_counter()
        lr = float(self.scheduler.get_last_lr()[0])
        self.model.train()
        stats = policy_update(  # no optimizer step when no episode is trained (train_items decides which)
            self.model, self.optimizer, groups, config, pad_id=self.pad_id,
            device=self.accelerator.device, rng=random.Random(f"toolgym-grpo-mini/{config.seed}/{step}"),
            backward=self.accelerator.backward,
            clip_grad=self._clip_grad, autocast=self.accelerator.autocast, reference=self.reference())
        for _ in range(stats.optimizer_steps):  # the schedule counts optimizer steps (none without signal)
            self.scheduler.step()
        update_s = time.perf_counter() - update_began
        row: dict[str, Any] = {"kind": "train", "step": step + 1, "lr": lr,
                               **rollout_metrics(episodes, group_stats, rewards), **stats.row(),
                               "updated": stats.optimizer_steps > 0, "sampling_rounds": rounds,
                               "seconds_rollout": round(rollout_s, 3), "seconds_update": round(update_s, 3),
                               "curriculum_weights": self.curriculum.weight_counts(),
                               "families": self.family_counts(groups),
                               **getattr(self.policy, "sync_metrics", dict)()}  # vllm: the step's weight sync
        row["tool_call_collapse"] = self._check_collapse(row, state)
        return row

    def family_counts(self, groups: list[Group]) -> dict[str, dict[str, int]]:
        """Per task family (env/family): scored episodes, successes and groups with signal this step.

        A choice two families share can swing as a whole (one family's successes rise as the other's
        fall); the step totals hide that, these counts show it.
        """
        counts: dict[str, dict[str, int]] = {}
        for group in groups:
            task = self.tasks_by_id.get(group.task_id)
            name = f"{group.env}/{task.family}" if task is not None and task.family else group.env
            row = counts.setdefault(name, {"episodes": 0, "successes": 0, "groups_with_signal": 0})
            row["episodes"] += len(group.episodes)
            row["successes"] += sum(e.succeeded for e in group.episodes)
            row["groups_with_signal"] += int(group.has_signal)
        return dict(sorted(counts.items()))

    def _check_all_errored(self, row: dict[str, Any], state: dict[str, Any]) -> None:
        """A step whose every episode errored trains nothing: say why at once, and stop when it keeps happening."""
        if not row["episodes"] or row["episodes_errored"] < row["episodes"]:
            state["all_error_steps"] = 0
            return
        state["all_error_steps"] = int(state.get("all_error_steps", 0)) + 1
        causes = "; ".join(row["error_examples"].values())
        self.say(f"[red]step {row['step']}: all {row['episodes']} episodes errored[/red]: {causes}")
        if state["all_error_steps"] >= self.config.monitor.max_all_error_steps:
            raise GRPOError(f"{state['all_error_steps']} steps in a row where every episode errored "
                            f"(through step {row['step']}): {causes}")

    def _clip_grad(self, max_norm: float) -> float:
        parameters = [p for p in self.model.parameters() if p.requires_grad]
        if max_norm and max_norm > 0:
            return float(self.accelerator.clip_grad_norm_(parameters, max_norm))
        grads = [p.grad.detach().norm() for p in parameters if p.grad is not None]
        return float(torch.stack(grads).norm()) if grads else 0.0

    def _check_collapse(self, row: dict[str, Any], state: dict[str, Any]) -> bool:
        """Agents can learn to stop calling tools (turn collapse): warn when the rate falls well below its start."""
        rate = row.get("tool_calls_per_episode")
        if rate is None:
            return False
        baseline: list[float] = state.setdefault("tool_call_baseline", [])
        monitor = self.config.monitor
        if len(baseline) < monitor.baseline_steps:
            baseline.append(float(rate))
            return False
        reference = sum(baseline) / len(baseline)
        collapsed = reference > 0 and rate < monitor.collapse_fraction * reference
        if collapsed:
            self.say(f"[yellow]warning:[/yellow] step {row['step']}: tool calls per episode {rate:.2f} fell below "
                     f"{monitor.collapse_fraction:.0%} of the first steps' {reference:.2f} (tool-call collapse?)")
        return collapsed

    # -- eval, best, checkpoints -----------------------------------------------------------------

    def evaluate(self, step: int, state: dict[str, Any]) -> dict[str, Any]:
        """Eval the current weights into OUT/evals/step-<step>/ (resumable) and track the best step per split."""
        from toolgym.eval.evaluate import run_eval

        settings = self.config.eval
        eval_config = self.config.eval_config()
        self.policy.weights_changed(f"{self.out.resolve()}@step-{step}")
        result = asyncio.run(run_eval(
            self.eval_tasks, self.policy, out_dir=self.out / EVALS_DIR / f"step-{step}", config=eval_config,
            tasks_path=self.tasks_path, env_factory=self.env_factory, name=f"step {step}"))
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
                path = self.export(Path(BEST_DIR) / group.split)
                (path / "best.json").write_text(json.dumps({"step": step, "split": group.split, "k": k,
                                                            "value": value, "passes": total.passes,
                                                            "scored": total.scored}) + "\n")
                state["best"][group.split] = {"step": step, "value": value, "k": k, "dir": str(path)}
        self.metrics.write({"kind": "eval", "step": step,
                            **{f"eval_{split}_pass@{k}": v[f"pass@{k}"] for split, v in numbers.items()}})
        state.setdefault("evals", {})[str(step)] = numbers
        return numbers

    def export(self, relative: Path) -> Path:
        return export_model(self.accelerator.unwrap_model(self.model), self.tokenizer, self.config.model,
                            self.out / relative)

    def save(self, step: int, state: dict[str, Any], elapsed: float, cpu: float) -> None:
        state.update({"step": step, "curriculum": self.curriculum.to_dict(), "elapsed_s": elapsed, "cpu_s": cpu,
                      "config_fingerprint": self.config.fingerprint()})
        save_checkpoint(self.accelerator, self.out, step, state, self.config.checkpoint.keep)

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
                 + (f"LoRA r={config.lora.rank}" if config.lora.enabled else "full weights"))
        elapsed_before, cpu_before = float(state.get("elapsed_s", 0.0)), float(state.get("cpu_s", 0.0))
        call_started, call_cpu = time.perf_counter(), cpu_seconds()
        success_rates: list[float] = []
        try:
            if config.eval.enabled and self.eval_tasks and resumed_from == 0 and "0" not in state.get("evals", {}):
                self.evaluate(0, state)
            with _progress_bar(self.console, self.progress) as bar:
                task = bar.add_task("grpo", total=total, completed=resumed_from, stats="")
                for step in range(resumed_from, total):
                    row = self.train_step(step, state)
                    row["elapsed_s"] = round(elapsed_before + time.perf_counter() - call_started, 3)
                    row["cpu_s"] = round(cpu_before + cpu_seconds() - call_cpu, 3)
                    self.metrics.write(row)
                    self._check_all_errored(row, state)
                    if row["success_rate"] is not None:
                        success_rates.append(row["success_rate"])
                    done = step + 1 == total
                    every = config.eval.every
                    if config.eval.enabled and self.eval_tasks and (done or (every and (step + 1) % every == 0)):
                        self.evaluate(step + 1, state)
                    if done or (step + 1) % config.checkpoint.save_every == 0:
                        self.save(step + 1, state, elapsed_before + time.perf_counter() - call_started,
                                  cpu_before + cpu_seconds() - call_cpu)
                    state["step"] = step + 1
                    bar.update(task, advance=1, stats=_stats_text(row))
            final_dir = self.export(Path(FINAL_DIR))
        finally:
            self.pool.close()
            asyncio.run(self.policy.close())
        result = GRPOResult(
            out_dir=str(self.out), steps=int(state["step"]), total_steps=total, resumed_from_step=resumed_from,
            final_dir=str(final_dir), base_model=str(Path(config.model).resolve()), lora=config.lora.enabled,
            best=dict(state.get("best", {})),
            evals={int(k): v for k, v in state.get("evals", {}).items()},
            first_success_rate=success_rates[0] if success_rates else None,
            last_success_rate=success_rates[-1] if success_rates else None,
            seconds=time.perf_counter() - self.started, cpu_seconds=cpu_seconds() - self.cpu_started)
        write_manifest(self.out, "grpo", status="complete", result=asdict(result), **self.manifest_fields())
        self.accelerator.end_training()
        return result


def _stats_text(row: dict[str, Any]) -> str:
    rate = row.get("success_rate")
    reward = row.get("reward_mean")
    return (f"success {row['successes']}/{row['scored_episodes']}"
            + (f" ({rate:.0%})" if rate is not None else "")
            + (f" · reward {reward:.3f}" if reward is not None else "")
            + f" · signal {row['groups_with_signal']}/{row['groups']} groups · errors {row['episodes_errored']}")


def _progress_bar(console: Any | None, enabled: bool) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]grpo"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[stats]}"),
                    TimeElapsedColumn(), console=console, disable=not enabled or console is None)


def run_grpo(config: GRPOConfig, *, console: Any | None = None, progress: bool = False,
             env_factory: Callable[[str], Environment] = make_env,
             reward_fn: Callable[[Episode], float] | None = None) -> GRPOResult:
    """Train (or resume training) per `config`.

    `reward_fn` replaces the shaped reward with a custom one (errored episodes never reach it);
    `env_factory` builds environments by name (tests add their own apps).
    """
    return _Run(config, console=console, progress=progress, env_factory=env_factory, reward_fn=reward_fn).run()
