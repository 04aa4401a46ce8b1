"""The pipeline config: one YAML file for build tasks → validate → teacher → SFT → RFT → GRPO → eval → report.

Sections pass through to the stage they configure (`sft:` holds SFTConfig fields, `rft.settings:`
RFTConfig fields, whose `sft:` is applied on top of the pipeline's `sft:` for RFT's fine-tune,
`grpo.settings:` a GRPO config without tasks/model/out, `eval.settings:` EvalConfig fields); a key the
stage does not know is an error naming the file and the field, never silently ignored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from toolgym.train.grpo.config import ConfigError, GRPOConfig, format_validation_error, read_yaml

EvalSplit = Literal["heldout_tasks", "heldout_env"]

STAGES = ("tasks", "validate", "teacher", "sft", "random_init", "rft", "grpo", "eval", "report")
EVAL_STAGES = ("untrained", "random_init", "sft", "rft", "grpo")  # the models the eval stage compares


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSettings(_Section):
    path: str = "default"  # "default": the shipped tiny base (src/toolgym/model/default); or a model folder
    device: str = "cpu"


class TasksSettings(_Section):
    """How the dataset is built: BuildConfig fields, then a family filter and per-split caps."""

    build: dict[str, Any] = Field(default_factory=dict)  # toolgym.dataset.build.BuildConfig fields
    families: list[str] | None = None  # keep only these task families ("app/family" or "family")
    train_limit: int | None = Field(None, ge=1)
    # A cap for each held-out split, or one per split ({heldout_tasks: null, heldout_env: 72}; a split left out
    # of the mapping is not capped).
    eval_limit: int | dict[EvalSplit, int | None] | None = None
    # Train tasks kept for RFT and GRPO, never shown to SFT's teacher: RL on prompts SFT has memorised
    # sees none of the mistakes the model makes on new ones.
    rl_fraction: float = Field(0.0, ge=0.0, lt=1.0)

    @field_validator("eval_limit")
    @classmethod
    def _eval_limits(cls, value: int | dict[str, int | None] | None) -> int | dict[str, int | None] | None:
        limits = value.values() if isinstance(value, dict) else [value]
        if any(limit is not None and limit < 1 for limit in limits):
            raise ValueError("each eval limit must be at least 1 (or null: no cap)")
        return value

    def limit_for(self, split: str) -> int | None:
        """The cap on one split's tasks (None: all of them)."""
        if split == "train":
            return self.train_limit
        if isinstance(self.eval_limit, dict):
            return self.eval_limit.get(split)  # type: ignore[call-overload]
        return self.eval_limit

    @field_validator("build")
    @classmethod
    def _build_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        from toolgym.dataset.build import BuildConfig

        _check_fields(value, BuildConfig, "BuildConfig")
        return value


class ValidateSettings(_Section):
    workers: int | None = Field(None, ge=1)


class TeacherSettings(_Section):
    """Teacher trajectories on the train split: the oracle (replayed reference solutions) or an API model."""

    policy: str = "oracle"  # oracle | openai:BASE_URL#MODEL
    api_key_env: str = "OPENAI_API_KEY"
    samples_per_task: int = Field(1, ge=1)
    limit: int | None = Field(None, ge=1)
    min_reward: float = 1.0  # only successful teacher episodes become SFT rows
    temperature: float = Field(0.0, ge=0)
    max_new_tokens: int = Field(1024, ge=1)
    max_turns: int = Field(20, ge=1)
    concurrency: int = Field(8, ge=1)
    timeout_s: float = Field(300.0, gt=0)


class RandomInitSettings(_Section):
    """The control for SFT: the same SFT (settings, steps, data) from a random-init model of the base's shape.

    It shows what the pre-trained base is worth; off by default because it costs a second SFT.
    """

    enabled: bool = False
    seed: int = 0  # weight-initialisation seed


class RFTSettings(_Section):
    enabled: bool = True
    settings: dict[str, Any] = Field(default_factory=dict)  # RFTConfig fields (not tasks/model/out)

    @field_validator("settings")
    @classmethod
    def _rft_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        from toolgym.train.rft import RFTConfig
        from toolgym.train.sft import SFTConfig

        _check_fields(value, RFTConfig, "RFTConfig", exclude=("tasks", "model", "out"))
        _check_fields(value.get("sft", {}), SFTConfig, "SFTConfig (rft.settings.sft)", exclude=("data", "model", "out"))
        return value


class GRPOSettings(_Section):
    enabled: bool = True
    settings: dict[str, Any] = Field(default_factory=dict)  # a GRPO config without tasks/model/out


class EvalSettings(_Section):
    stages: list[Literal["untrained", "random_init", "sft", "rft", "grpo"]] = Field(  # type: ignore[assignment]
        default_factory=lambda: list(EVAL_STAGES))
    settings: dict[str, Any] = Field(default_factory=dict)  # EvalConfig fields
    # Per stage, EvalConfig fields on top of `settings`: e.g. a sampled trial beside the greedy pass for the
    # stages whose sampled success tells something (GRPO optimises it), without paying for it everywhere.
    stage_settings: dict[Literal["untrained", "random_init", "sft", "rft", "grpo"], dict[str, Any]] = Field(
        default_factory=dict)

    @field_validator("settings")
    @classmethod
    def _eval_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        from toolgym.eval.evaluate import EvalConfig

        _check_fields(value, EvalConfig, "EvalConfig")
        return value

    @field_validator("stage_settings")
    @classmethod
    def _stage_fields(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        from toolgym.eval.evaluate import EvalConfig

        for stage, fields in value.items():
            _check_fields(fields, EvalConfig, f"EvalConfig (eval.stage_settings.{stage})")
        return value

    def for_stage(self, stage: str) -> dict[str, Any]:
        """The EvalConfig fields one stage's eval runs with."""
        return {**self.settings, **self.stage_settings.get(stage, {})}  # type: ignore[call-overload]


class ReportSettings(_Section):
    enabled: bool = True
    ks: list[int] = Field(default_factory=lambda: [1])


class AcceptanceSettings(_Section):
    """The quickstart's promise, checked and written into summary.json (never enforced by failing)."""

    split: str = "heldout_tasks"
    sft_min_pass_rate: float = 0.30
    grpo_min_gain_points: float = 5.0


class PipelineConfig(_Section):
    out: str
    seed: int = 0
    threads: int | None = Field(None, ge=1)
    model: ModelSettings = Field(default_factory=ModelSettings)  # type: ignore[arg-type]
    tasks: TasksSettings = Field(default_factory=TasksSettings)  # type: ignore[arg-type]
    validate_tasks: ValidateSettings = Field(default_factory=ValidateSettings, alias="validate")  # type: ignore[arg-type]
    teacher: TeacherSettings = Field(default_factory=TeacherSettings)  # type: ignore[arg-type]
    sft: dict[str, Any] = Field(default_factory=dict)  # SFTConfig fields (not data/model/out)
    random_init: RandomInitSettings = Field(default_factory=RandomInitSettings)
    rft: RFTSettings = Field(default_factory=RFTSettings)
    grpo: GRPOSettings = Field(default_factory=GRPOSettings)
    eval: EvalSettings = Field(default_factory=EvalSettings)  # type: ignore[arg-type]
    report: ReportSettings = Field(default_factory=ReportSettings)  # type: ignore[arg-type]
    acceptance: AcceptanceSettings = Field(default_factory=AcceptanceSettings)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("sft")
    @classmethod
    def _sft_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        from toolgym.train.sft import SFTConfig

        _check_fields(value, SFTConfig, "SFTConfig", exclude=("data", "model", "out"))
        return value

    @model_validator(mode="after")
    def _grpo_settings(self) -> PipelineConfig:
        for key in ("tasks", "model", "out"):
            if key in self.grpo.settings:
                raise ValueError(f"grpo.settings.{key} is set by the pipeline (its dataset, the RFT/SFT model, "
                                 "RUN/grpo); remove it")
        try:  # every GRPO field is checked now, not after SFT has run
            self.grpo_config("t", "m", "o")
        except ValidationError as exc:
            raise ValueError(format_validation_error("grpo.settings", exc).replace("\n", "; ")) from exc
        return self

    def grpo_config(self, tasks: str, model: str, out: str) -> GRPOConfig:
        data = {**self.grpo.settings, "tasks": tasks, "model": model, "out": out}
        data.setdefault("seed", self.seed)
        if self.threads is not None:
            data.setdefault("threads", self.threads)
        return GRPOConfig.model_validate(data)

    def section_fingerprint(self, stage: str) -> str:
        """sha256 of what decides a stage's output (its own settings and everything upstream)."""
        dumped = self.model_dump(mode="json", by_alias=True)
        upstream = {"seed": dumped["seed"], "model": dumped["model"]["path"], "tasks": dumped["tasks"]}
        order = {"tasks": [], "validate": ["validate"], "teacher": ["validate", "teacher"],
                 "sft": ["validate", "teacher", "sft"], "random_init": ["validate", "teacher", "sft", "random_init"],
                 "rft": ["validate", "teacher", "sft", "rft"],
                 "grpo": ["validate", "teacher", "sft", "rft", "grpo"]}
        parts = {**upstream, **{name: dumped[name] for name in order.get(stage, [])}}
        if stage == "eval":  # evaluates every earlier stage's model: all of them decide its output
            evaluation = {k: v for k, v in dumped["eval"].items() if k != "stage_settings" or v}  # runs made before
            parts = {**upstream, **{name: dumped[name] for name in ("validate", "teacher", "sft", "random_init", "rft",
                                                                     "grpo")},
                     "eval": evaluation}
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _check_fields(values: dict[str, Any], cls: type, what: str, exclude: tuple[str, ...] = ()) -> None:
    known = {f.name for f in dataclasses.fields(cls)} - set(exclude)
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown {what} setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")


def pipeline_config_from_dict(data: dict[str, Any], source: str = "config") -> PipelineConfig:
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc)) from exc


def load_pipeline_config(path: str | Path, out: str | None = None) -> PipelineConfig:
    """A pipeline YAML file; `out` replaces its run folder. Relative paths stay relative to the cwd."""
    data = read_yaml(path)
    if out is not None:
        data["out"] = out
    return pipeline_config_from_dict(data, str(path))
