"""Eval and rollout configs: what `toolgym eval` and `toolgym rollout` sample, and the pipeline's eval section."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from toolgym.chat.render import PromptStyle, load_prompt_style
from toolgym.config.base import REPEATABLE, Section
from toolgym.config.pieces import (
    EpisodeLimits,
    ModelEngine,
    PassAtK,
    PolicyTarget,
    RayWorkers,
    Sampling,
    TaskSelection,
)
from toolgym.model import DEFAULT_MODEL, model_folder
from toolgym.policy.base import SamplingParams


class EvalConfig(Sampling, EpisodeLimits):
    """What an eval run samples: T trials × N samples per task at temperature, plus a greedy pass."""

    samples_per_task: int = Field(1, ge=1)
    """Samples per task in each trial (n per trial)."""
    trials: int = Field(1, ge=0)
    """Independent sampled trials (each its own rollout sub-run and seed); 0: the greedy pass only."""
    ks: list[int] = Field(default_factory=lambda: [1])
    """k values for pass@k and pass^k (need n ≥ k)."""
    seed: int | None = 0
    """Trial t samples with seed + t - 1."""
    greedy: bool = True
    """Also run one temperature-0 sample per task."""
    concurrency: int = Field(8, ge=1)
    """Episodes in flight at once."""

    @model_validator(mode="after")
    def _something_to_evaluate(self) -> EvalConfig:
        if self.trials == 0 and not self.greedy:
            raise ValueError("trials 0 (greedy only) needs greedy: true, else nothing would be evaluated")
        if not self.ks or min(self.ks) < 1:
            raise ValueError(f"k values must be ≥ 1, got {self.ks}")
        return self

    @property
    def samples_in_total(self) -> int:
        """Samples per task behind pass@k: the greedy pass alone when there are no sampled trials."""
        return self.samples_per_task * self.trials if self.trials else 1

    def trial_sampling(self, trial: int) -> SamplingParams:
        """The SamplingParams of trial `trial` (1-based): its own seed."""
        return self.to_params(seed=None if self.seed is None else self.seed + trial - 1)

    def greedy_sampling(self) -> SamplingParams:
        """The SamplingParams of the greedy pass."""
        return self.to_params(seed=self.seed, greedy=True)

    def warnings(self) -> list[str]:
        """k values no task can reach: said up front rather than estimated."""
        return [
            f"pass@{k} needs n ≥ {k} samples per task but this eval draws {self.samples_in_total} "
            f"({self.samples_per_task} × {self.trials} trials): it will be reported as n/a"
            for k in self.ks if k > self.samples_in_total
        ]


class EvalRunConfig(EvalConfig, TaskSelection, PolicyTarget, RayWorkers):
    """`toolgym eval`: the eval settings plus which tasks, which policy and where the results go."""

    out: str | None = None
    """Eval folder: trial-<t>/, greedy/, eval.json, eval.md."""


class RolloutConfig(Sampling, EpisodeLimits, TaskSelection, PolicyTarget, RayWorkers):
    """`toolgym rollout`: run a policy on a task set into OUT/results.jsonl (resumable)."""

    out: str | None = None
    """Run folder: results.jsonl + manifest.json; re-run to resume."""
    samples_per_task: int = Field(1, ge=1)
    """Episodes per task (K)."""
    concurrency: int = Field(8, ge=1)
    """Episodes in flight at once."""
    seed: int | None = None
    """Run seed; each episode samples with a seed derived from it."""
    user_simulator: Literal["scripted", "none"] = "scripted"
    """Dual-control tasks: scripted (deterministic customer) | none."""
    env_mcp: list[str] | None = Field(None, json_schema_extra={REPEATABLE: True})
    """Run envs over MCP: [ENV=]TARGET with TARGET stdio | http(s)://…/mcp | stdio:COMMAND ARGS."""
    retry_errors: bool = False
    """Run error rows of a previous run again."""
    model: str | None = DEFAULT_MODEL
    """The model the rows are for (a folder, or default: the shipped default model): chat-mode policies with no
    model folder of their own (oracle, imperfect:, openai: with a remote MODEL) write the prompt style of its
    toolgym.json (full when it has none) unless prompt_style is set; null: full."""

    def model_prompt_style(self) -> PromptStyle | None:
        """The prompt style of `model` (None when no model is named); a `model` that is no folder raises ValueError."""
        return None if self.model is None else load_prompt_style(model_folder(self.model))


class SweepConfig(EvalConfig, TaskSelection, ModelEngine):
    """`toolgym eval sweep`: evaluate a training run's checkpoints that have no eval yet (with tasks), then
    compare Checkpoint 0 with the best step; pass@k of the first k value in the tables."""

    split: Literal["train", "heldout_tasks", "heldout_env", "eval"] | None = "eval"
    """Tasks to evaluate on (eval: every held-out split; null: every split)."""
    greedy: bool = False
    """Also run one temperature-0 sample per task (a sweep compares the sampled trials)."""
    base_model: str | None = None
    """Base model of LoRA checkpoints; evaluated as step 0."""
    device: str = "cpu"
    """Torch device of the checkpoints."""


class EvalStageSettings(ModelEngine):
    """The pipeline's eval section: which stages' models are evaluated, and how."""

    stages: list[Literal["untrained", "random_init", "sft", "rft", "grpo"]] = Field(
        default_factory=lambda: ["untrained", "random_init", "sft", "rft", "grpo"])
    """The models the eval stage compares."""
    settings: EvalConfig = Field(default_factory=EvalConfig)
    """Eval settings of every stage."""
    stage_settings: dict[Literal["untrained", "random_init", "sft", "rft", "grpo"], EvalConfig] = Field(
        default_factory=dict)
    """Per stage, eval settings on top of `settings` (e.g. a sampled trial beside the greedy pass for the
    stages whose sampled success tells something)."""

    def for_stage(self, stage: str) -> dict[str, Any]:
        """The eval fields one stage's eval runs with (only those written in the file)."""
        extra = self.stage_settings.get(stage)  # type: ignore[call-overload]
        return {**self.settings.model_dump(exclude_unset=True),
                **(extra.model_dump(exclude_unset=True) if extra is not None else {})}


class EvalShowConfig(PassAtK):
    """`toolgym eval show RUN_DIR`: the per-env / per-split tables of a run already on disk."""


class LeakageConfig(Section):
    """`toolgym eval leakage`: fail when an eval task's id or normalized prompt appears in the training data."""

    train: list[Path] = Field(default_factory=list, json_schema_extra={REPEATABLE: True})
    """Training data: tasks.jsonl (train split), SFT rows, results (one or more)."""
    tasks: Path | None = None
    """Eval tasks: a dataset (held-out splits) or a results file."""

    @model_validator(mode="after")
    def _both_sides(self) -> LeakageConfig:
        if not self.train or self.tasks is None:
            raise ValueError("a leakage check needs training data (train, --train) and eval tasks (tasks, --tasks)")
        return self
