"""The pipeline's stages, each a call into the library that owns the work, writing under one run folder.

    RUN/dataset/built/tasks.jsonl     tasks        build + family filter + caps + leakage check
    RUN/dataset/tasks.jsonl           validate     replay every reference solution, keep reward-1 tasks
    RUN/dataset/rl_tasks.jsonl                     the train tasks kept for RFT and GRPO (tasks.rl_fraction)
    RUN/teacher/sft_rows.jsonl        teacher      oracle (or API) episodes on the other train tasks → SFT rows
    RUN/sft/                          sft          SFT from the base model
    RUN/random_init/                  random_init  the same SFT from random weights of the base's shape (control; opt-in)
    RUN/rft/                          rft          K samples per train task from the SFT model, keep, SFT again
    RUN/grpo/                         grpo         GRPO from the RFT model (the SFT model if RFT kept nothing)
    RUN/eval/<stage>/                 eval         the same eval of the untrained, random_init, sft, rft and grpo models
    RUN/report.md, report.html        report

Each stage says whether its output already exists (`done`); the runner then skips it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgym.dataset.manifest import read_manifest, sha256_file, write_manifest
from toolgym.pipeline.config import PipelineConfig
from toolgym.schema import Task
from toolgym.schema.jsonl import read_models, write_jsonl


class StageError(RuntimeError):
    """A stage cannot run: its input is missing or unusable (the message says which and why)."""


@dataclass(frozen=True)
class ModelRef:
    """A model to load: a full model folder, optionally with a LoRA adapter on top."""

    model_dir: Path
    adapter: Path | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"model": str(self.model_dir), "adapter": str(self.adapter) if self.adapter else None}


@dataclass
class Context:
    config: PipelineConfig
    run: Path
    console: Any | None = None
    progress: bool = False
    notes: dict[str, Any] = field(default_factory=dict)

    def say(self, text: str) -> None:
        if self.console is not None:
            self.console.print(text)

    # -- paths ----------------------------------------------------------------------------------

    @property
    def built_tasks(self) -> Path:
        return self.run / "dataset" / "built" / "tasks.jsonl"

    @property
    def dataset(self) -> Path:
        return self.run / "dataset" / "tasks.jsonl"

    @property
    def teacher_rows(self) -> Path:
        return self.run / "teacher" / "sft_rows.jsonl"

    def stage_dir(self, name: str) -> Path:
        return self.run / name

    # -- models ---------------------------------------------------------------------------------

    def base_model(self) -> ModelRef:
        path = self.config.model.path
        if path == "default":
            from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR

            if not (DEFAULT_MODEL_DIR / "config.json").is_file():
                raise StageError(
                    f"model.path: default: the shipped tiny base is not in this tree ({DEFAULT_MODEL_DIR} has no "
                    "config.json; it is built by `toolgym model pretrain-tiny`). Build it there, or set "
                    "model.path to a model folder")
            return ModelRef(DEFAULT_MODEL_DIR)
        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise StageError(f"model.path: {folder} is not a model folder (no config.json)")
        return ModelRef(folder)

    def trained_model(self, sft_dir: Path, base: ModelRef, stage: str) -> ModelRef:
        """An SFT run's result: merged/ if written, else final/ (a model, or a LoRA adapter on `base`)."""
        for name in ("merged", "final"):
            folder = sft_dir / name
            if (folder / "config.json").is_file():
                return ModelRef(folder)
        adapter = sft_dir / "final"
        if (adapter / "adapter_config.json").is_file():
            return ModelRef(base.model_dir, adapter)
        raise StageError(f"{stage}: {sft_dir} holds no trained model (no final/ or merged/)")

    def sft_model(self) -> ModelRef:
        return self.trained_model(self.stage_dir("sft"), self.base_model(), "sft")

    def random_init_model(self) -> ModelRef | None:
        """The control's SFT model; None when the control is off or has not run."""
        if not self.config.random_init.enabled or not _complete(self.stage_dir("random_init") / "sft"):
            return None
        return self.trained_model(self.stage_dir("random_init") / "sft", self.base_model(), "random_init")

    def rft_model(self) -> ModelRef | None:
        """None when RFT is disabled or kept nothing (GRPO then starts from the SFT model)."""
        if not self.config.rft.enabled or read_manifest(self.stage_dir("rft")).get("status") != "complete":
            return None
        return self.trained_model(self.stage_dir("rft") / "sft", self.sft_model(), "rft")

    def grpo_input(self) -> ModelRef:
        return self.rft_model() or self.sft_model()

    def grpo_model(self) -> ModelRef:
        start = self.grpo_input()
        final = self.stage_dir("grpo") / "final"
        if (final / "config.json").is_file():
            return ModelRef(final)
        if (final / "adapter_config.json").is_file():
            return ModelRef(start.model_dir, final)
        raise StageError(f"grpo: {final} holds no model")


def full_model(ref: ModelRef, stage: str, setting: str) -> Path:
    """Stages that load a model folder by path (RFT's sampler, GRPO) need merged weights, not an adapter."""
    if ref.adapter is not None:
        raise StageError(f"{stage} needs a full model folder but the previous stage left a LoRA adapter "
                         f"({ref.adapter}); set {setting}: true so the merged model is written")
    return ref.model_dir


# -- tasks -----------------------------------------------------------------------------------------


def tasks_done(ctx: Context) -> bool:
    return ctx.built_tasks.is_file() and bool(read_manifest(ctx.built_tasks.parent))


def _family_kept(task: Task, families: list[str] | None) -> bool:
    return families is None or task.family in families or f"{task.env}/{task.family}" in families


def _capped(tasks: list[Task], limit: int | None, seed: int, label: str) -> list[Task]:
    if limit is None or len(tasks) <= limit:
        return tasks
    chosen = list(tasks)
    random.Random(f"toolgym-pipeline/{seed}/{label}").shuffle(chosen)
    keep = {t.id for t in chosen[:limit]}
    return [t for t in tasks if t.id in keep]


def run_tasks(ctx: Context) -> dict[str, Any]:
    from toolgym.dataset.build import build_tasks, leakage

    settings = ctx.config.tasks
    build = settings.build
    tasks = [t for t in build_tasks(build) if _family_kept(t, settings.families)]
    if settings.families:
        present = {t.family for t in tasks} | {f"{t.env}/{t.family}" for t in tasks}
        missing = [f for f in settings.families if f not in present]
        if missing:
            raise StageError(f"tasks.families: no task of family {', '.join(missing)} in apps {build.apps}")
    by_split: dict[str, list[Task]] = {}
    for task in tasks:
        by_split.setdefault(task.split, []).append(task)
    kept: list[Task] = []
    for split, members in by_split.items():
        kept.extend(_capped(members, settings.limit_for(split), settings.limit_seed(split, ctx.config.seed), split))
    position = {t.id: i for i, t in enumerate(tasks)}
    kept.sort(key=lambda t: position[t.id])
    problems = leakage(kept)
    if problems:
        raise StageError("tasks: leakage between train and eval splits: " + "; ".join(problems[:5]))
    if not any(t.split == "train" for t in kept):
        raise StageError("tasks: no train task left after the family filter and caps")
    write_jsonl(ctx.built_tasks, kept)
    counts = {split: sum(t.split == split for t in kept) for split in sorted(by_split)}
    write_manifest(ctx.built_tasks.parent, "tasks", version=build.version, generator_seed=build.seed,
                   build_config=build.model_dump(), families=settings.families, train_limit=settings.train_limit,
                   eval_limit=settings.eval_limit, tasks_sha256=sha256_file(ctx.built_tasks), counts=counts,
                   leakage_check="passed: no task id or prompt appears in both train and eval splits")
    return {"tasks": len(kept), "by_split": counts}


# -- validate --------------------------------------------------------------------------------------


def validate_done(ctx: Context) -> bool:
    return ctx.dataset.is_file() and read_manifest(ctx.dataset.parent).get("kind") == "validated_tasks"


def run_validate(ctx: Context) -> dict[str, Any]:
    from toolgym.dataset.validate import validate_dataset, write_validation

    validation = validate_dataset(ctx.built_tasks, workers=ctx.config.validate_tasks.workers)
    write_validation(validation, ctx.dataset.parent)
    kept = sum(r.kept for r in validation.reports)
    if kept == 0:
        raise StageError(f"validate: no task replayed to reward 1 ({validation.by_reason()})")
    return {"input": len(validation.reports), "kept": kept, "by_reason": validation.by_reason()}


def dataset_tasks(ctx: Context, split: str | None = None) -> list[Task]:
    from toolgym.rollout.tasks import select_tasks

    tasks = read_models(ctx.dataset, Task)
    return select_tasks(tasks, split=split) if split else tasks


def kept_for_rl(task: Task, seed: int, fraction: float) -> bool:
    """Whether a train task is one of the `fraction` kept for RFT and GRPO (a stable draw by id and seed)."""
    digest = hashlib.sha256(f"rl/{seed}/{task.id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def sft_tasks(ctx: Context) -> list[Task]:
    """The train tasks SFT's teacher runs on: all of them, less the RL ones."""
    fraction = ctx.config.tasks.rl_fraction
    return [t for t in dataset_tasks(ctx, "train") if not kept_for_rl(t, ctx.config.seed, fraction)]


def rl_tasks_file(ctx: Context) -> Path:
    """The task file RFT and GRPO read: the dataset, or, when RL tasks are kept, those as its train split
    with the held-out splits as they are (GRPO's own eval uses them)."""
    fraction = ctx.config.tasks.rl_fraction
    if fraction <= 0:
        return ctx.dataset
    tasks = [t for t in dataset_tasks(ctx) if t.split != "train" or kept_for_rl(t, ctx.config.seed, fraction)]
    if not any(t.split == "train" for t in tasks):
        raise StageError(f"tasks.rl_fraction: {fraction:g} keeps none of the train tasks for RFT and GRPO")
    path = ctx.dataset.with_name("rl_tasks.jsonl")
    write_jsonl(path, tasks)
    return path


# -- teacher ---------------------------------------------------------------------------------------


def teacher_done(ctx: Context) -> bool:
    return ctx.teacher_rows.is_file() and ctx.teacher_rows.with_name(ctx.teacher_rows.name + ".manifest.json").is_file()


def run_teacher(ctx: Context) -> dict[str, Any]:
    from toolgym.agent.limits import EpisodeLimits
    from toolgym.chat.render import Renderer, load_prompt_style
    from toolgym.data.convert import ConvertOptions, convert_run
    from toolgym.data.validate import validate_file
    from toolgym.policy.engines import build_policy
    from toolgym.rollout.runner import run_rollout

    settings = ctx.config.teacher
    base = ctx.base_model()
    style = load_prompt_style(base.model_dir)  # the student's prompt: teacher rows must look like its rollouts
    tasks = sft_tasks(ctx)[: settings.limit] if settings.limit else sft_tasks(ctx)
    spec = settings.policy_spec
    if spec is None:
        raise StageError("teacher: teacher.policy names no policy")
    policy = build_policy(spec, api_key=os.environ.get(settings.api_key_env), prompt_style=style)
    out = ctx.stage_dir("teacher") / "rollout"
    summary = asyncio.run(run_rollout(
        tasks, policy, out_dir=out, samples_per_task=settings.samples_per_task, concurrency=settings.concurrency,
        sampling=settings.to_params(seed=ctx.config.seed), limits=settings.part(EpisodeLimits),
        renderer=Renderer(None, prompt_style=style),
        tasks_sha256=sha256_file(ctx.dataset), tasks_path=ctx.dataset, config={"stage": "teacher"},
        progress=ctx.progress, console=ctx.console))
    asyncio.run(policy.close())
    report = convert_run(out, ctx.teacher_rows, ConvertOptions(min_reward=settings.min_reward))
    checked = validate_file(ctx.teacher_rows)
    if checked.invalid:
        raise StageError(f"teacher: {checked.invalid} of {checked.rows} SFT rows are invalid:\n{checked.render()}")
    if report.rows_out == 0:
        raise StageError(f"teacher: no teacher episode reached reward {settings.min_reward}; nothing to train on "
                         f"({summary.render()})")
    return {"episodes": summary.episodes, "passed": summary.passed, "errored": summary.error,
            "rows": report.rows_out, "rows_checked_valid": checked.valid}


# -- sft / rft / grpo ------------------------------------------------------------------------------


def _complete(folder: Path, *statuses: str) -> bool:
    return read_manifest(folder).get("status") in (statuses or ("complete",))


def sft_done(ctx: Context) -> bool:
    return _complete(ctx.stage_dir("sft"))


def run_sft_stage(ctx: Context) -> dict[str, Any]:
    from toolgym.train.sft import SFTConfig, run_sft

    base = ctx.base_model()
    config = SFTConfig.model_validate({
        "seed": ctx.config.seed, "threads": ctx.config.threads, "device": ctx.config.model.device,
        **ctx.config.sft.model_dump(exclude_unset=True),
        "data": str(ctx.teacher_rows), "model": str(full_model(base, "sft", "model.path")),
        "out": str(ctx.stage_dir("sft"))})
    result = run_sft(config, console=ctx.console, progress=ctx.progress)
    return {"steps": result.steps, "first_loss": result.first_loss, "last_loss": result.last_loss,
            "train_samples": result.train_samples, "final": result.final_dir}


def random_init_done(ctx: Context) -> bool:
    return _complete(ctx.stage_dir("random_init") / "sft")


def run_random_init_stage(ctx: Context) -> dict[str, Any]:
    """SFT exactly as the sft stage (data, settings, seed, steps), from random weights of the base's shape."""
    from toolgym.model.tiny import random_init_like
    from toolgym.train.sft import SFTConfig, run_sft

    base = full_model(ctx.base_model(), "random_init", "model.path")
    folder = ctx.stage_dir("random_init")
    weights = random_init_like(base, folder / "model", seed=ctx.config.random_init.seed)
    config = SFTConfig.model_validate({
        "seed": ctx.config.seed, "threads": ctx.config.threads, "device": ctx.config.model.device,
        **ctx.config.sft.model_dump(exclude_unset=True),
        "data": str(ctx.teacher_rows), "model": str(weights), "out": str(folder / "sft")})
    result = run_sft(config, console=ctx.console, progress=ctx.progress)
    return {"steps": result.steps, "first_loss": result.first_loss, "last_loss": result.last_loss,
            "init_seed": ctx.config.random_init.seed, "final": result.final_dir}


def rft_done(ctx: Context) -> bool:
    return _complete(ctx.stage_dir("rft"), "complete", "nothing_kept")


def run_rft_stage(ctx: Context) -> dict[str, Any]:
    from toolgym.config.base import deep_merge
    from toolgym.train.rft import RFTConfig, RFTError, run_rft

    settings = ctx.config.rft.settings.model_dump(exclude_unset=True)
    threads = {"threads": ctx.config.threads} if ctx.config.threads is not None else {}
    sft_settings = deep_merge(threads, ctx.config.sft.model_dump(exclude_unset=True), settings.pop("sft", {}))
    model = full_model(ctx.sft_model(), "rft", "sft.merge")
    config = RFTConfig.model_validate({
        "seed": ctx.config.seed, "device": ctx.config.model.device,
        "replay": str(ctx.teacher_rows),  # used when rft.settings.replay_ratio > 0
        **settings, "sft": sft_settings,
        "tasks": str(rl_tasks_file(ctx)), "model": str(model), "out": str(ctx.stage_dir("rft"))})
    try:
        result = run_rft(config, console=ctx.console, progress=ctx.progress)
    except RFTError as exc:
        if read_manifest(ctx.stage_dir("rft")).get("status") == "nothing_kept":
            ctx.say(f"[yellow]rft kept nothing[/yellow]: {exc}; GRPO starts from the SFT model")
            return {"status": "nothing_kept", "reason": str(exc)}
        raise
    return {"kept": dict(result.selection.kept), "rows": result.conversion.rows_out,
            "sampled_episodes": result.selection.episodes, "errored": result.selection.errors,
            "steps": result.sft.steps if result.sft else 0}


def grpo_done(ctx: Context) -> bool:
    return _complete(ctx.stage_dir("grpo"))


def run_grpo_stage(ctx: Context) -> dict[str, Any]:
    from toolgym.train.grpo.trainer import run_grpo

    start = ctx.grpo_input()
    model = full_model(start, "grpo", "sft.merge (or rft.settings.sft.merge)")
    config = ctx.config.grpo_config(str(rl_tasks_file(ctx)), str(model), str(ctx.stage_dir("grpo")))
    if config.backend == "trl":
        from toolgym.integrations.trl_grpo.run import run_trl_grpo

        result = run_trl_grpo(config, console=ctx.console)
    else:
        result = run_grpo(config, console=ctx.console, progress=ctx.progress)
    return {"steps": result.steps, "started_from": str(model), "first_success_rate": result.first_success_rate,
            "last_success_rate": result.last_success_rate, "best": result.best, "final": result.final_dir}


# -- eval ------------------------------------------------------------------------------------------


def eval_dir(ctx: Context, stage: str) -> Path:
    return ctx.run / "eval" / stage


def eval_model(ctx: Context, stage: str) -> ModelRef | None:
    if stage == "untrained":
        return ctx.base_model()
    if stage == "sft":
        return ctx.sft_model() if sft_done(ctx) else None
    if stage == "random_init":
        return ctx.random_init_model()
    if stage == "rft":
        return ctx.rft_model()
    if stage == "grpo":
        return ctx.grpo_model() if grpo_done(ctx) else None
    raise StageError(f"eval: unknown stage {stage!r}")


def eval_done(ctx: Context) -> bool:
    return all((eval_dir(ctx, s) / "eval.json").is_file() or eval_model(ctx, s) is None
               for s in ctx.config.eval.stages)


def run_eval_stage(ctx: Context) -> dict[str, Any]:
    from toolgym.eval.evaluate import EvalConfig, run_eval
    from toolgym.policy.base import Policy
    from toolgym.policy.engines import build_policy, model_spec

    tasks = [t for t in dataset_tasks(ctx) if t.split != "train"]
    if not tasks:
        raise StageError("eval: the dataset has no held-out tasks (heldout_tasks / heldout_env)")
    evaluated: dict[str, Any] = {}
    for stage in ctx.config.eval.stages:
        ref = eval_model(ctx, stage)
        if ref is None:
            evaluated[stage] = "no model (stage disabled or kept nothing)"
            continue
        out = eval_dir(ctx, stage)
        if (out / "eval.json").is_file():
            evaluated[stage] = "exists"
            continue
        ctx.say(f"eval {stage}: {ref.model_dir}" + (f" + LoRA {ref.adapter}" if ref.adapter else ""))
        eval_config = EvalConfig.model_validate({"seed": ctx.config.seed, **ctx.config.eval.for_stage(stage)})

        def policy(ref: ModelRef = ref) -> Policy:
            return build_policy(model_spec(ctx.config.eval.engine, ref.model_dir, ref.adapter),
                                device=ctx.config.model.device, seed=ctx.config.seed, threads=ctx.config.threads)

        asyncio.run(run_eval(tasks, policy, out_dir=out, config=eval_config, tasks_path=ctx.dataset,
                             console=ctx.console, progress=ctx.progress, name=stage))
        evaluated[stage] = str(out)
    return {"tasks": len(tasks), "stages": evaluated}


# -- report ----------------------------------------------------------------------------------------


def report_done(ctx: Context) -> bool:
    report, summary = ctx.run / "report.html", ctx.run / "summary.json"
    return report.is_file() and summary.is_file() and report.stat().st_mtime >= summary.stat().st_mtime


def run_report_stage(ctx: Context) -> dict[str, Any]:
    from toolgym.eval.report import ReportOptions, write_report

    markdown, html = write_report(ctx.run, None, ReportOptions(ks=list(ctx.config.report.ks),
                                                                title=f"Pipeline {ctx.run.name}"))
    return {"markdown": str(markdown), "html": str(html)}
