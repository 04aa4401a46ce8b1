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

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from toolgym.config.base import Section, deep_merge
from toolgym.config.evaluation import EvalStageSettings
from toolgym.config.grpo import GRPOConfig, GRPOSettings
from toolgym.config.train import RFTSettings, SFTSettings
from toolgym.dataset.build import BuildConfig
from toolgym.dataset.validate import TeacherEpisodes
from toolgym.policy.spec import PolicyChoice

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
    eval_limit_seed: int | None = None
    """Seed of the draw that picks a capped held-out split's tasks (default: the pipeline's seed); a study over
    seeds sets it, so every seed's run is scored on the same tasks."""

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

    def limit_seed(self, split: str, seed: int) -> int:
        """The seed of a split's capped draw: eval_limit_seed for the held-out splits when set, else `seed`."""
        return seed if split == "train" or self.eval_limit_seed is None else self.eval_limit_seed


class ValidateSettings(Section):
    """Replay validation of the built tasks."""

    workers: int | None = Field(None, ge=1)
    """Replay processes (default: every core)."""


class TeacherSettings(TeacherEpisodes, PolicyChoice):
    """Teacher trajectories on the train split: the oracle (replayed reference solutions) or an API model."""

    policy: str = "oracle"
    """Policy spec of the teacher: oracle | imperfect:KIND=RATE,...[,seed=N] | openai:BASE_URL#MODEL | any other
    policy spec."""
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


class StudySettings(Section):
    """Several seeds of this pipeline, each a run of its own, and GRPO variants from each seed's SFT and RFT
    models; `toolgym pipeline` runs them in turn, then writes one report over the seeds."""

    seeds: list[int] = Field(default_factory=list)
    """Seeds to run, each in OUT/seed-<N> with seed N (empty: one run in OUT)."""
    teacher_follows_seed: bool = True
    """A seed=K in teacher.policy becomes seed=N in seed N's run: the imperfect teacher's mistakes are drawn
    anew with each seed, as the run's other draws are."""
    grpo_variants: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """name → grpo.settings written on top of grpo.settings: GRPO again from each seed's RFT (or SFT) model, in
    OUT/variants/<name>/seed-<N>, its held-out eval reported as stage grpo-<name> beside the seed's grpo."""

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds {seeds}: a seed twice")
        return seeds

    @field_validator("grpo_variants")
    @classmethod
    def _variant_names(cls, variants: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name in variants:
            if not name or not all(c.isalnum() or c in "_." for c in name):
                raise ValueError(f"grpo variant {name!r}: a name of letters, digits, '_' and '.' (a folder name)")
        return variants


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
    study: StudySettings = Field(default_factory=StudySettings)
    """Several seeds (and GRPO variants) of this pipeline in one command; empty: one run."""

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

    @model_validator(mode="after")
    def _study(self) -> PipelineConfig:
        if self.study.grpo_variants and not self.study.seeds:
            raise ValueError("study.grpo_variants: GRPO variants run per seed of study.seeds, and none are set")
        capped = any(self.tasks.limit_for(split) is not None for split in ("heldout_tasks", "heldout_env"))
        if len(self.study.seeds) > 1 and capped and self.tasks.eval_limit_seed is None:
            raise ValueError("tasks.eval_limit_seed: set it with study.seeds and a tasks.eval_limit, or each seed "
                             "is scored on other held-out tasks and the runs cannot be paired")
        for name, settings in self.study.grpo_variants.items():
            try:
                GRPOSettings.model_validate(deep_merge(self.grpo.settings.model_dump(exclude_unset=True), settings))
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
                raise ValueError(f"study.grpo_variants.{name}: {problems}") from None
        return self

    def as_written(self) -> dict[str, Any]:
        """The config as the file (and overrides) wrote it: what a run derived from it starts from."""
        return copy.deepcopy(self._written)

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
        dumped["teacher"] = self.written("teacher")
        dumped["sft"] = self.written("sft")
        dumped["rft"]["settings"] = self.written("rft", "settings")
        dumped["grpo"]["settings"] = self.written("grpo", "settings")
        dumped["eval"]["settings"] = self.written("eval", "settings")
        dumped["eval"]["stage_settings"] = self.written("eval", "stage_settings")
        if dumped["tasks"].get("eval_limit_seed") is None:  # runs made before the setting keep their fingerprints
            dumped["tasks"].pop("eval_limit_seed", None)
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
