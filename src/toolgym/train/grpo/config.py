"""GRPO run configuration: one YAML file (or a pipeline's `grpo:` section) → validated settings.

Every hyperparameter of the seed's GPU run is a field here (samples per prompt, lr, KL coefficient,
temperature, top_p, the `</tool_call>` stop, max turns, YaRN rope scaling to a longer context,
the generation engine). Unknown keys and bad values are errors that name the file and the field.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolgym.train.grpo.losses import AGGREGATIONS
from toolgym.train.runtime import DEFAULT_TARGET_MODULES

# Settings added after runs existed, with the value that leaves those runs' fingerprint unchanged.
LATER_SETTINGS: dict[tuple[str, str], Any] = {("loss", "ratio_level"): "token", ("advantage", "baseline"): "group_mean"}


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and the field."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EngineSettings(_Section):
    """Where rollouts are generated. `hf`: in-process transformers sharing the trainer's weights."""

    name: Literal["hf", "vllm"] = "hf"
    device: str = "auto"  # auto | cpu | cuda
    dtype: Literal["float32", "bfloat16"] = "float32"  # weights in memory
    max_batch_size: int = Field(64, ge=1)
    batch_wait_ms: float = Field(10.0, ge=0)
    # YaRN (or another rope scaling) applied when the model is loaded, e.g. for Qwen3-8B to 65K:
    # {rope_type: yarn, factor: 2.0, original_max_position_embeddings: 32768}
    rope_scaling: dict[str, Any] | None = None
    max_position_embeddings: int | None = Field(None, ge=1)
    # vllm only (the GPU engine): memory share and tensor parallelism.
    gpu_memory_utilization: float = Field(0.85, gt=0, le=1)
    tensor_parallel_size: int = Field(1, ge=1)

    @model_validator(mode="after")
    def _rope(self) -> EngineSettings:
        if self.rope_scaling is not None and "rope_type" not in self.rope_scaling and "type" not in self.rope_scaling:
            raise ValueError("rope_scaling needs a rope_type (e.g. yarn)")
        return self


class SamplingSettings(_Section):
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    top_k: int = Field(0, ge=0)
    max_new_tokens: int = Field(256, ge=1)  # per turn
    stop: list[str] = Field(default_factory=list)  # besides the model's own turn end
    max_turns: int = Field(20, ge=1)
    max_context_tokens: int = Field(4096, ge=16)
    timeout_s: float = Field(120.0, gt=0)
    done_tool: bool = False
    # End an episode after this many malformed tool calls (None: answer each with feedback and go on).
    max_format_errors: int | None = Field(None, ge=1)


class RewardSettings(_Section):
    """shaped = task_reward + alpha · partial_score; alpha_by_env overrides alpha per environment."""

    alpha: float = 0.0
    alpha_by_env: dict[str, float] = Field(default_factory=dict)

    def alpha_for(self, env: str) -> float:
        return self.alpha_by_env.get(env, self.alpha)


class AdvantageSettings(_Section):
    std_normalize: bool = True  # false: Dr. GRPO's mean-centred advantages
    baseline: Literal["group_mean", "leave_one_out"] = "group_mean"  # leave_one_out: RLOO's baseline
    positive_only: bool = False  # true: below-mean episodes get 0 (only what beat its group is reinforced)
    # > 0: a group whose every episode succeeded trains its first anchor_episodes episodes with this advantage,
    # so the update keeps what the policy already gets right (advantages.py); 0: such groups give nothing
    solved_anchor: float = Field(0.0, ge=0)
    anchor_episodes: int = Field(2, ge=1)


class LossSettings(_Section):
    clip_low: float = Field(0.2, ge=0, lt=1)
    clip_high: float = Field(0.28, ge=0)
    kl_coef: float = Field(0.0, ge=0)  # k3 KL to the reference (LoRA: the adapter switched off)
    aggregation: str = "token_mean"  # token_mean (DAPO) | sequence_mean (GRPO) | dr_grpo
    dr_grpo_constant: int | None = Field(None, ge=1)  # tokens per episode; default max_new_tokens × max_turns
    match_sampler_truncation: bool = True  # apply the sampler's top-p/top-k to the trainer's log-probs
    # > 0: that many episodes of each group without reward variance enter the update for the KL term alone
    # (advantage 0). Without them the KL only sees groups with signal, so a shift that also moves the quiet
    # contexts (a bias rather than a per-prompt change) goes unpenalised where no reward pays for it.
    kl_quiet_episodes: int = Field(0, ge=0)
    # sequence: GSPO, one importance ratio per episode (the geometric mean of its token ratios), clipped as a
    # whole; its ratios stay near 1, so the GSPO paper clips at about 3e-4 / 4e-4 rather than 0.2 / 0.28
    ratio_level: Literal["token", "sequence"] = "token"

    @model_validator(mode="after")
    def _consistent(self) -> LossSettings:
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}; got {self.aggregation!r}")
        if self.kl_quiet_episodes and self.kl_coef <= 0:
            raise ValueError("kl_quiet_episodes trains quiet groups for the KL term alone: it needs kl_coef > 0")
        return self


class OptimSettings(_Section):
    optimizer: Literal["adamw", "sgd"] = "adamw"  # sgd: each weight moves with its gradient, not by ~lr each (optim.py)
    momentum: float = Field(0.0, ge=0, lt=1)  # sgd only
    lr: float = Field(1e-6, gt=0)
    schedule: Literal["constant", "cosine", "linear"] = "constant"
    warmup_steps: int = Field(0, ge=0)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, ge=0)  # 0: no clipping
    batch_tokens: int = Field(8192, ge=1)  # padded tokens per micro-batch (gradient accumulation over them)
    mini_batches: int = Field(1, ge=1)  # optimizer steps per rollout batch (> 1: later ones are off-policy)
    update_epochs: int = Field(1, ge=1)  # passes over each rollout batch (PPO epochs; TRL's num_iterations)
    precision: Literal["auto", "bf16", "fp32"] = "auto"
    gradient_checkpointing: bool = False


class LoraSettingsModel(_Section):
    enabled: bool = False
    rank: int = Field(32, ge=1)
    alpha: int = Field(64, ge=1)
    dropout: float = Field(0.05, ge=0, le=1)  # off while sampling and updating (dropout breaks the ratio)
    target_modules: list[str] = Field(default_factory=lambda: list(DEFAULT_TARGET_MODULES))


class CurriculumSettings(_Section):
    enabled: bool = True
    scope: Literal["task", "family"] = "task"  # family: counts pooled per task family (see curriculum.py)
    rule: Literal["success_rate", "mixed_groups"] = "success_rate"  # mixed_groups: by share of groups with signal
    stratify: bool = False  # scope family: a step's tasks come from distinct families, drawn ∝ weight
    min_attempts: int = Field(5, ge=1)
    easy_above: float = 0.75
    easy_weight: float = Field(0.1, ge=0)
    hard_below: float = 0.25
    hard_weight: float = Field(0.5, ge=0)
    default_weight: float = Field(1.0, ge=0)

    @model_validator(mode="after")
    def _stratify_needs_families(self) -> CurriculumSettings:
        if self.stratify and self.scope != "family":
            raise ValueError("curriculum.stratify draws one task per family: set curriculum.scope to 'family'")
        return self


class DynamicSamplingSettings(_Section):
    """DAPO's dynamic sampling: a group whose episodes all score alike trains nothing, so when fewer than
    tasks_per_step of a step's groups carry signal, fresh tasks are drawn and sampled again, up to
    max_rounds rounds. A step then costs more rollouts and its update gets more of the groups that train."""

    enabled: bool = False
    max_rounds: int = Field(3, ge=1)


class CheckpointSettings(_Section):
    save_every: int = Field(10, ge=1)
    keep: int = Field(2, ge=1)


class EvalSettings(_Section):
    """Eval on the held-out splits every `every` steps (0: only before training and at the end)."""

    enabled: bool = True
    every: int = Field(0, ge=0)
    splits: list[Literal["heldout_tasks", "heldout_env", "train"]] = Field(
        default_factory=lambda: ["heldout_tasks", "heldout_env"])  # type: ignore[arg-type]
    envs: list[str] | None = None
    limit: int | None = Field(None, ge=1)  # per split
    samples_per_task: int = Field(1, ge=1)
    trials: int = Field(1, ge=1)
    ks: list[int] = Field(default_factory=lambda: [1])
    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    greedy: bool = True
    best_k: int | None = Field(None, ge=1)  # pass@k that picks the best checkpoint (default: the first k)
    concurrency: int = Field(16, ge=1)


class MonitorSettings(_Section):
    """Warn when tool calls per episode fall below `collapse_fraction` × the first steps' rate; stop the run
    after `max_all_error_steps` steps in a row whose every episode errored (infra, not learning)."""

    collapse_fraction: float = Field(0.5, ge=0, le=1)
    baseline_steps: int = Field(3, ge=1)
    max_all_error_steps: int = Field(3, ge=1)


class GRPOConfig(_Section):
    tasks: str  # dataset folder or tasks.jsonl
    model: str  # model folder (the SFT/RFT checkpoint to improve)
    out: str
    split: Literal["train", "heldout_tasks", "heldout_env"] = "train"
    envs: list[str] | None = None
    limit: int | None = Field(None, ge=1)
    steps: int = Field(20, ge=1)
    tasks_per_step: int = Field(8, ge=1)
    samples_per_task: int = Field(4, ge=2)  # G: episodes per task per step (a group needs ≥ 2)
    concurrency: int | None = Field(None, ge=1)  # episodes in flight (default: all of a step's)
    seed: int = 0
    threads: int | None = Field(None, ge=1)
    save_rollouts: bool = False  # write each step's episodes to OUT/rollouts/step-<N>.jsonl
    engine: EngineSettings = Field(default_factory=EngineSettings)  # type: ignore[arg-type]
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)  # type: ignore[arg-type]
    reward: RewardSettings = Field(default_factory=RewardSettings)
    advantage: AdvantageSettings = Field(default_factory=AdvantageSettings)
    loss: LossSettings = Field(default_factory=LossSettings)  # type: ignore[arg-type]
    optim: OptimSettings = Field(default_factory=OptimSettings)  # type: ignore[arg-type]
    lora: LoraSettingsModel = Field(default_factory=LoraSettingsModel)  # type: ignore[arg-type]
    curriculum: CurriculumSettings = Field(default_factory=CurriculumSettings)  # type: ignore[arg-type]
    dynamic_sampling: DynamicSamplingSettings = Field(default_factory=DynamicSamplingSettings)
    checkpoint: CheckpointSettings = Field(default_factory=CheckpointSettings)  # type: ignore[arg-type]
    eval: EvalSettings = Field(default_factory=EvalSettings)  # type: ignore[arg-type]
    monitor: MonitorSettings = Field(default_factory=MonitorSettings)  # type: ignore[arg-type]

    def check_engine(self) -> None:
        """The vllm engine is a GPU option: say exactly why it cannot run here."""
        if self.engine.name != "vllm":
            return
        if importlib.util.find_spec("vllm") is None:
            raise ConfigError("engine.name: vllm needs the vllm package, which is not installed "
                              "(pip install 'toolgym[gpu]' on a CUDA machine), or set engine.name: hf")
        raise ConfigError("engine.name: vllm is installed, but GRPO rollouts through vLLM are not built yet "
                          "(the GPU engine is a later issue); use engine.name: hf")

    def fingerprint(self) -> str:
        """sha256 of what decides the trained weights (not where output goes or how often it is saved)."""
        data = self.model_dump(mode="json", exclude={"out", "threads", "checkpoint", "eval", "monitor",
                                                      "save_rollouts", "concurrency"})
        # settings added later leave, at their "off" value, the fingerprint of runs from before them unchanged
        if not self.dynamic_sampling.enabled:
            data.pop("dynamic_sampling")
        for (section, name), off in LATER_SETTINGS.items():
            if data[section][name] == off:
                data[section].pop(name)
        data["engine"] = {k: v for k, v in data["engine"].items() if k not in ("max_batch_size", "batch_wait_ms")}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def format_validation_error(source: str, error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        lines.append(f"{source}: field {where}: {item['msg']}")
    return "\n".join(lines)


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML mapping; a parse error names the file, line and column."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    raw = path.read_bytes()
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}: line {line}: invalid UTF-8: byte 0x{raw[exc.start]:02x}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        raise ConfigError(f"{path}:{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from exc
    except RecursionError:  # the YAML composer recurses once per nesting level
        raise ConfigError(f"{path}: invalid YAML: nested too deeply") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise ConfigError(f"{path}: invalid YAML: {str(exc).split(':')[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(data).__name__}")
    return data


def grpo_config_from_dict(data: dict[str, Any], source: str = "config") -> GRPOConfig:
    try:
        return GRPOConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc)) from exc


def load_grpo_config(path: str | Path, **overrides: Any) -> GRPOConfig:
    """A GRPO config file, or a pipeline config's `grpo.settings` section (its seed and threads too);
    `overrides` (non-None) replace top-level fields (e.g. out from the CLI)."""
    data = read_yaml(path)
    source = str(path)
    if isinstance(data.get("grpo"), dict):  # a pipeline config: tasks, model and out come from the command line
        section = data["grpo"].get("settings", {}) or {}
        data = {**{k: data[k] for k in ("seed", "threads") if data.get(k) is not None}, **section}
        source = f"{path} (grpo.settings)"
    data.update({k: v for k, v in overrides.items() if v is not None})
    return grpo_config_from_dict(data, source)
