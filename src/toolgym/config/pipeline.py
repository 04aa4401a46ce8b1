"""The pipeline config: one YAML file for build tasks → validate → teacher → SFT → RFT → GRPO → eval → report.

Each section IS the settings model of the stage it configures (`sft:` SFTSettings, `rft.settings:`
RFTSettings, whose `sft:` applies on top of the pipeline's `sft:` for RFT's fine-tune, `grpo.settings:`
GRPOSettings, `eval.settings:` EvalConfig); a key a stage does not know is an error naming the file and field.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from toolgym.config.base import Section
from toolgym.config.evaluation import EvalStageSettings
from toolgym.config.grpo import GRPOConfig, GRPOSettings
from toolgym.config.train import RFTSettings, SFTSettings
from toolgym.dataset.build import BuildConfig
from toolgym.dataset.validate import TeacherEpisodes

EvalSplit = Literal["heldout_tasks", "heldout_env"]

STAGES = ("tasks", "validate", "teacher", "sft", "random_init", "rft", "grpo", "eval", "report")
EVAL_STAGES = ("untrained", "random_init", "sft", "rft", "grpo")  # the models the eval stage compares
SET_BY_PIPELINE = ("tasks", "model", "out")


class ModelSettings(Section):
    """The base model every stage starts from."""

    path: str = "default"
    """"default": the shipped tiny base (src/toolgym/model/default); or a model folder."""
    device: str = "cpu"
    """Torch device of every stage."""


class TasksSettings(Section):
    """How the dataset is built, then a family filter and per-split caps."""

    build: BuildConfig = Field(default_factory=BuildConfig)
    """The dataset's settings: those of `toolgym tasks build`, less out (the pipeline writes RUN/dataset/built)."""
    families: list[str] | None = None
    """Keep only these task families ("app/family" or "family")."""
    train_limit: int | None = Field(None, ge=1)
    """Train tasks at most."""
    eval_limit: int | dict[EvalSplit, int | None] | None = None
    """A cap for each held-out split, or one per split ({heldout_tasks: null, heldout_env: 72})."""
    rl_fraction: float = Field(0.0, ge=0.0, lt=1.0)
    """Train tasks kept for RFT and GRPO, never shown to SFT's teacher: RL on prompts SFT has memorised
    sees none of the mistakes the model makes on new ones."""

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


class ValidateSettings(Section):
    """Replay validation of the built tasks."""

    workers: int | None = Field(None, ge=1)
    """Replay processes (default: every core)."""


class TeacherSettings(TeacherEpisodes):
    """Teacher trajectories on the train split: the oracle (replayed reference solutions) or an API model."""

    policy: str = "oracle"
    """oracle | openai:BASE_URL#MODEL."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key."""
    samples_per_task: int = Field(1, ge=1)
    """Teacher episodes per task."""
    limit: int | None = Field(None, ge=1)
    """Train tasks the teacher plays at most."""
    min_reward: float = 1.0
    """Only teacher episodes with this reward become SFT rows."""
    temperature: float = Field(0.0, ge=0)
    """Teacher sampling temperature."""


class RandomInitSettings(Section):
    """The control for SFT: the same SFT (settings, steps, data) from a random-init model of the base's shape.
    It shows what the pre-trained base is worth; off by default because it costs a second SFT."""

    enabled: bool = False
    """Run the random-init control."""
    seed: int = 0
    """Weight-initialisation seed."""


class RFTStage(Section):
    """Rejection sampling after SFT."""

    enabled: bool = True
    """Run the RFT stage."""
    settings: RFTSettings = Field(default_factory=RFTSettings)
    """RFT settings (tasks, model and out come from the pipeline)."""


class GRPOStage(Section):
    """GRPO after RFT (or SFT)."""

    enabled: bool = True
    """Run the GRPO stage."""
    settings: GRPOSettings = Field(default_factory=GRPOSettings)
    """GRPO settings (tasks, model and out come from the pipeline)."""


class ReportSettings(Section):
    """The run's report."""

    enabled: bool = True
    """Write the report."""
    ks: list[int] = Field(default_factory=lambda: [1])
    """k values of the report's tables."""


class AcceptanceSettings(Section):
    """The quickstart's promise, checked and written into summary.json (never enforced by failing)."""

    split: str = "heldout_tasks"
    """The split the promise is about."""
    sft_min_pass_rate: float = 0.30
    """SFT's pass rate at least."""
    grpo_min_gain_points: float = 5.0
    """GRPO's gain over its start at least, percentage points."""


class PipelineConfig(Section):
    """`toolgym pipeline`: the whole job in one run folder, resumable stage by stage."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)

    out: str
    """Run folder."""
    seed: int = 0
    """Seed of every stage (a section's own seed wins)."""
    threads: int | None = Field(None, ge=1)
    """torch CPU threads of every stage."""
    model: ModelSettings = Field(default_factory=ModelSettings)
    tasks: TasksSettings = Field(default_factory=TasksSettings)
    validate_tasks: ValidateSettings = Field(default_factory=ValidateSettings, alias="validate")
    teacher: TeacherSettings = Field(default_factory=TeacherSettings)
    sft: SFTSettings = Field(default_factory=SFTSettings)
    """SFT settings (RFT's fine-tune starts from these too)."""
    random_init: RandomInitSettings = Field(default_factory=RandomInitSettings)
    rft: RFTStage = Field(default_factory=RFTStage)
    grpo: GRPOStage = Field(default_factory=GRPOStage)
    eval: EvalStageSettings = Field(default_factory=EvalStageSettings)
    report: ReportSettings = Field(default_factory=ReportSettings)
    acceptance: AcceptanceSettings = Field(default_factory=AcceptanceSettings)

    _written: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _pipeline_owned(cls, data: Any) -> Any:
        settings = data.get("grpo", {}).get("settings") if isinstance(data, dict) and isinstance(
            data.get("grpo"), dict) else None
        for key in SET_BY_PIPELINE if isinstance(settings, dict) else ():
            if key in settings:
                raise ValueError(f"grpo.settings.{key} is set by the pipeline (its dataset, the RFT/SFT model, "
                                 "RUN/grpo); remove it")
        return data

    @model_validator(mode="wrap")
    @classmethod
    def _keep_written(cls, data: Any, handler: Any) -> Any:
        model = handler(data)
        if isinstance(data, dict):
            model._written = copy.deepcopy(data)
        return model

    def written(self, *path: str) -> dict[str, Any]:
        """A section as the file wrote it (what decided earlier runs' fingerprints)."""
        node: Any = self._written
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else {}

    def grpo_config(self, tasks: str, model: str, out: str) -> GRPOConfig:
        """The GRPO stage's config: its settings, the pipeline's seed and threads, and the given paths."""
        data = {**self.grpo.settings.model_dump(exclude_unset=True), "tasks": tasks, "model": model, "out": out}
        data.setdefault("seed", self.seed)
        if self.threads is not None:
            data.setdefault("threads", self.threads)
        return GRPOConfig.model_validate(data)

    def section_fingerprint(self, stage: str) -> str:
        """sha256 of what decides a stage's output (its own settings and everything upstream), over the
        sections as written, so run folders made before a section became a model keep their fingerprints."""
        dumped = self.model_dump(mode="json", by_alias=True)
        dumped["tasks"]["build"] = self.written("tasks", "build")
        dumped["sft"] = self.written("sft")
        dumped["rft"]["settings"] = self.written("rft", "settings")
        dumped["grpo"]["settings"] = self.written("grpo", "settings")
        dumped["eval"]["settings"] = self.written("eval", "settings")
        dumped["eval"]["stage_settings"] = self.written("eval", "stage_settings")
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
