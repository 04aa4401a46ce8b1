"""Supervised fine-tuning (full or LoRA) on SFT rows, built on transformers + peft + accelerate.

Loss is the mean negative log-likelihood of assistant-produced tokens over each optimizer step
(summed over its micro-batches, divided by the step's trained-token count, so gradient accumulation
does not re-weight short samples). Checkpoints every `save_every` steps and at the end; the best by
eval loss is exported to `best/`; `final/` holds the last weights (LoRA: the adapter; `--merge`
adds `merged/`). Re-running the same command in the same `out` resumes from the last checkpoint:
same batch plan, restored optimizer / scheduler / RNG, and metrics.jsonl continues the curve.
Under `accelerate launch --num_processes N` each step's micro-batches are shared among the ranks
(train/distributed.py): the same global batch and steps as one process, files written once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from toolgym.chat.render import Renderer, load_prompt_style
from toolgym.config.train import SFTConfig, migrate_flat_lora
from toolgym.dataset.manifest import read_manifest, sha256_file, write_manifest
from toolgym.model import context_length
from toolgym.schema import TrainingSample
from toolgym.schema.documents import read_json
from toolgym.train.batching import (
    StepPlan,
    collate,
    eval_batches,
    plan_fingerprint,
    plan_steps,
    prefix_keys,
    supervised_count,
)
from toolgym.train.checkpoint import (
    STATE_FILE,
    changed_since_checkpoint,
    export_merged,
    export_merged_from_adapter,
    install_adapter_hooks,
    latest_checkpoint,
    load_checkpoint,
    remove_partial_checkpoints,
    save_checkpoint,
)
from toolgym.train.distributed import (
    WORLD_SIZE_KEY,
    WorldSizeError,
    as_float,
    check_world_size,
    export_on_main,
    fsdp_fallback,
    is_fsdp,
    make_accelerator,
    shard_step,
)
from toolgym.train.loss import nll_sum
from toolgym.train.metrics import MetricsLog, check_trackers
from toolgym.train.optim import build_optimizer, build_scheduler, warmup_steps_for
from toolgym.train.runtime import (
    RunClock,
    load_model,
    load_tokenizer,
    resolve_device,
    resolve_precision,
)
from toolgym.train.sft_data import DataReport, SFTExample, load_examples

# Settings that change what is trained: a resumed run must match them (threads, logging, saving may differ).
_RESUME_IRRELEVANT = {"out", "threads", "report_to", "save_every", "save_total_limit", "eval_every", "merge"}


class SFTError(RuntimeError):
    """The run cannot start or resume (no data, changed settings on resume)."""


@dataclass
class SFTResult:
    out_dir: str
    steps: int
    total_steps: int
    final_dir: str | None
    best_dir: str | None
    merged_dir: str | None
    best_step: int | None
    best_eval_loss: float | None
    first_loss: float | None
    last_loss: float | None
    train_samples: int
    eval_samples: int
    resumed_from_step: int
    seconds: float
    cpu_seconds: float
    data: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        lines = [
            f"steps {self.steps}/{self.total_steps} (resumed from step {self.resumed_from_step})" if self.resumed_from_step
            else f"steps {self.steps}/{self.total_steps}",
            f"train samples {self.train_samples} · eval samples {self.eval_samples}",
            f"loss {self.first_loss:.4f} → {self.last_loss:.4f}" if self.first_loss is not None and self.last_loss is not None
            else "loss: no step run",
        ]
        if self.best_eval_loss is not None:
            lines.append(f"best eval loss {self.best_eval_loss:.4f} at step {self.best_step} → {self.best_dir}")
        lines.append(f"final: {self.final_dir}" + (f" · merged: {self.merged_dir}" if self.merged_dir else ""))
        lines.append(f"{self.seconds / 60:.1f} wall-min · {self.cpu_seconds / 60:.1f} CPU-min (this call)")
        return "\n".join(lines)


def split_eval(examples: list[SFTExample], fraction: float, seed: int) -> tuple[list[SFTExample], list[SFTExample]]:
    """(train, eval): whole task groups go to eval (no task on both sides), chosen by a seeded hash."""
    groups = sorted({e.group for e in examples}, key=lambda g: hashlib.sha256(f"{seed}/{g}".encode()).hexdigest())
    if fraction <= 0 or len(groups) < 2:
        return examples, []
    held = set(groups[: max(1, math.ceil(fraction * len(groups)))])
    return [e for e in examples if e.group not in held], [e for e in examples if e.group in held]


def _flatten(examples: list[SFTExample]) -> list[TrainingSample]:
    return [s for e in examples for s in e.samples]


def _config_for_resume(config: SFTConfig) -> dict[str, Any]:
    """What a resumed run must match: the settings that differ from their defaults (a setting added later
    leaves, at its default, earlier runs resumable), without where output goes or how it is logged."""
    return config.model_dump(mode="json", exclude_defaults=True, exclude=_RESUME_IRRELEVANT)


def recorded_resume_config(recorded: dict[str, Any]) -> dict[str, Any] | None:
    """`_config_for_resume` of a config a run's manifest recorded, in any earlier shape (None: unreadable)."""
    try:
        return _config_for_resume(SFTConfig.model_validate(migrate_flat_lora(recorded)))
    except ValueError:
        return None


class _Trainer:
    """One SFT run; `run` drives it to an SFTResult."""

    def __init__(self, config: SFTConfig, console: Any | None, progress: bool) -> None:
        self.config = config
        self.console = console
        self.progress = progress
        self.out = Path(config.out)
        self.clock = RunClock()

    def say(self, text: str) -> None:
        if self.console is not None and self.accelerator.is_main_process:
            self.console.print(text)

    # -- data ------------------------------------------------------------------------------------

    def load_data(self) -> None:
        config = self.config
        model_dir = Path(config.model)
        self.tokenizer = load_tokenizer(model_dir)
        self.renderer = Renderer(self.tokenizer, prompt_style=load_prompt_style(model_dir),
                                 enable_thinking=config.enable_thinking)
        self.max_length = config.max_length or context_length(model_dir) or self.tokenizer.model_max_length
        examples, self.data_report = load_examples(config.data, self.renderer, render_mode=config.render_mode,
                                                   token_samples=config.token_samples, max_length=self.max_length)
        self.eval_report: DataReport | None = None
        if config.eval_data:
            train_examples = examples
            eval_examples, self.eval_report = load_examples(
                config.eval_data, self.renderer, render_mode=config.render_mode,
                token_samples=config.token_samples, max_length=self.max_length)
        else:
            train_examples, eval_examples = split_eval(examples, config.eval_fraction, config.seed)
        self.train = _flatten(train_examples)
        self.eval = _flatten(eval_examples)
        if not self.train:
            raise SFTError(f"{config.data}: no training samples (rows {self.data_report.rows}, "
                           f"too long {self.data_report.too_long}, eval held out {len(self.eval)})")
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (self.tokenizer.eos_token_id or 0))

    # -- model and optimizer -----------------------------------------------------------------------

    def build(self) -> None:
        from transformers import set_seed

        config = self.config
        if config.threads:
            torch.set_num_threads(config.threads)
        device = resolve_device(config.device)
        trackers = check_trackers(config.report_to)
        self.accelerator = make_accelerator(device=device, mixed_precision=resolve_precision(config.precision, device),
                                            log_with=trackers, project_dir=self.out)
        if fsdp_fallback(self.accelerator):
            self.say("[yellow]note:[/yellow] accelerate shards with FSDP only on GPUs; this CPU run is plain data "
                     "parallel (same steps, every process holds all weights)")
        set_seed(config.seed)
        lengths = [len(s.input_ids) for s in self.train]
        # planned for one process: N processes share each step's micro-batches, so the global batch stays
        self.plan: StepPlan = plan_steps(
            lengths, token_budget=config.batch_tokens, grad_accum=config.grad_accum, seed=config.seed,
            epochs=config.epochs, max_steps=config.max_steps, processes=1,
            max_rows=config.max_rows, keys=prefix_keys(self.train))
        self.fingerprint = plan_fingerprint(self.plan, lengths)
        seen = 0
        self.samples_through = []
        for micro in self.plan:
            seen += sum(len(b) for b in micro)
            self.samples_through.append(seen)
        self.lora = config.lora if config.lora.enabled else None
        model = load_model(config.model, dtype=config.dtype, lora=self.lora,
                           gradient_checkpointing=config.gradient_checkpointing)
        optimizer = build_optimizer(model, config.lr, config.weight_decay)
        total = len(self.plan)
        self.scheduler = build_scheduler(optimizer, config.schedule,
                                         warmup_steps_for(total, config.warmup_ratio, config.warmup_steps), total)
        self.model, self.optimizer = self.accelerator.prepare(model, optimizer)
        self.accelerator.register_for_checkpointing(self.scheduler)
        if self.lora is not None and not is_fsdp(self.accelerator):
            install_adapter_hooks(self.accelerator)
        self.metrics = MetricsLog(self.out, self.accelerator)
        if trackers:
            self.accelerator.init_trackers("sft", config={k: v for k, v in config.model_dump().items()
                                                          if isinstance(v, int | float | str | bool)})

    # -- resume ----------------------------------------------------------------------------------

    def manifest_fields(self) -> dict[str, Any]:
        config = self.config
        return {
            "config": config.model_dump(mode="json"),
            "resume_config": _config_for_resume(config),
            "data_sha256": sha256_file(config.data),
            "eval_data_sha256": sha256_file(config.eval_data) if config.eval_data else None,
            "model": str(Path(config.model).resolve()),
            "prompt_style": self.renderer.prompt_style,
            "plan_fingerprint": self.fingerprint,
            "total_steps": len(self.plan),
            "train_samples": len(self.train),
            "eval_samples": len(self.eval),
            "data_report": self.data_report.to_dict(),
            "seed": config.seed,
            "mixed_precision": self.accelerator.mixed_precision,
            "device": str(self.accelerator.device),
            "processes": self.accelerator.num_processes,
            "distributed_type": str(self.accelerator.distributed_type.value),
        }

    def resume(self) -> dict[str, Any]:
        """Trainer state from the last checkpoint (fresh state when there is none)."""
        fields = self.manifest_fields()
        previous = read_manifest(self.out)
        if previous and isinstance(previous.get("config"), dict) and previous.get("resume_config") != fields["resume_config"]:
            # a run recorded in an earlier shape (or under an earlier rule) is judged by today's rule
            previous = {**previous, "resume_config": recorded_resume_config(previous["config"])}
        latest = latest_checkpoint(self.out)
        changed = changed_since_checkpoint(
            self.out, previous, fields, ("resume_config", "data_sha256", "eval_data_sha256", "model", "plan_fingerprint"))
        if changed:
            raise SFTError(f"{self.out} holds a run with different {', '.join(changed)}; resume with the same "
                           "data, model and settings, or choose another --out folder")
        self.accelerator.wait_for_everyone()  # every rank has read the manifest and found the same checkpoint
        if self.accelerator.is_main_process:
            remove_partial_checkpoints(self.out)
        state: dict[str, Any] = {"step": 0, "best_eval_loss": None, "best_step": None, "elapsed_s": 0.0,
                                 "cpu_s": 0.0, "last_eval_step": None}
        if latest is not None:
            recorded = read_json(latest / STATE_FILE)
            try:  # before load_state, which would look for another world size's per-rank files
                check_world_size(recorded, self.accelerator.num_processes, latest)
            except WorldSizeError as exc:
                raise SFTError(str(exc)) from exc
            state.update(load_checkpoint(self.accelerator, latest))
            if state.get("plan_fingerprint") != self.fingerprint:
                raise SFTError(f"{latest}: saved with another batch plan; the data or batching settings changed")
        self.metrics.reset(int(state["step"]))
        if self.accelerator.is_main_process:
            write_manifest(self.out, "sft", status="running", resumed_from_step=state["step"], **fields)
        return state

    # -- steps -----------------------------------------------------------------------------------

    def train_step(self, step: int) -> dict[str, Any]:
        accelerator = self.accelerator
        micro = self.plan[step]
        step_supervised = sum(supervised_count(self.train[i]) for batch in micro for i in batch)
        mine = shard_step(micro, accelerator.process_index, accelerator.num_processes)
        self.model.train()
        nll_total = 0.0
        tokens = 0
        for position, (indices, weight) in enumerate(mine):
            batch = collate([self.train[i] for i in indices], self.pad_id).to(accelerator.device)
            last = position == len(mine) - 1
            sync = contextlib.nullcontext() if last else accelerator.no_sync(self.model)
            with sync:
                with accelerator.autocast():
                    nll = nll_sum(self.model, batch)
                # DDP averages gradients over processes; scale so the step's loss is a per-token mean.
                accelerator.backward(nll * (weight * accelerator.num_processes / max(step_supervised, 1)))
            if weight:
                nll_total += float(nll.detach())
                tokens += batch.tokens
        grad_norm = None
        if self.config.max_grad_norm:
            grad_norm = as_float(accelerator.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm))
        lr = float(self.scheduler.get_last_lr()[0])
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        totals = torch.tensor([nll_total, float(tokens)], device=accelerator.device)
        totals = accelerator.reduce(totals, reduction="sum") if accelerator.num_processes > 1 else totals
        return {"kind": "train", "step": step + 1, "loss": float(totals[0]) / max(step_supervised, 1), "lr": lr,
                "grad_norm": grad_norm, "supervised_tokens": step_supervised, "tokens": int(totals[1]),
                "micro_batches": len(micro), "epoch": self.epoch_of(step)}

    def epoch_of(self, step: int) -> float:
        """Epochs of data seen once `step` is done (fractional)."""
        return round(self.samples_through[step] / len(self.train), 4)

    @torch.no_grad()
    def evaluate(self) -> float | None:
        if not self.eval:
            return None
        accelerator = self.accelerator
        self.model.eval()
        lengths = [len(s.input_ids) for s in self.eval]
        batches = shard_step(eval_batches(lengths, self.config.batch_tokens), accelerator.process_index,
                             accelerator.num_processes)
        totals = torch.zeros(2, device=accelerator.device)
        for indices, weight in batches:
            batch = collate([self.eval[i] for i in indices], self.pad_id).to(accelerator.device)
            with accelerator.autocast():
                totals[0] += weight * nll_sum(self.model, batch).float()
            totals[1] += weight * batch.supervised
        if accelerator.num_processes > 1:
            totals = accelerator.reduce(totals, reduction="sum")
        self.model.train()
        return float(totals[0] / totals[1]) if totals[1] > 0 else None

    def export(self, name: str) -> Path:
        return export_on_main(self.accelerator, self.model, self.tokenizer, self.config.model, self.out / name)

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> SFTResult:
        self.load_data_and_build()
        state = self.resume()
        config, accelerator = self.config, self.accelerator
        total = len(self.plan)
        resumed_from = int(state["step"])
        if resumed_from:
            self.say(f"resuming {self.out} from step {resumed_from}/{total}")
        self.say(self.data_report.render())
        self.say(f"train {len(self.train)} samples · eval {len(self.eval)} · {total} steps · "
                 f"precision {accelerator.mixed_precision} · device {accelerator.device}"
                 + (f" · LoRA r={config.lora.rank} α={config.lora.alpha} on {','.join(config.lora.target_modules)}"
                    if config.lora.enabled else ""))
        self.clock.start_loop(float(state["elapsed_s"]), float(state["cpu_s"]))
        first_loss = last_loss = None
        bar = _progress_bar(self.console, self.progress and accelerator.is_main_process)
        with bar:
            task = bar.add_task("sft", total=total, completed=resumed_from, loss="")
            for step in range(resumed_from, total):
                row = self.train_step(step)
                elapsed, cpu = self.clock.loop_seconds()
                row["elapsed_s"], row["cpu_s"] = round(elapsed, 3), round(cpu, 3)
                self.metrics.write(row)
                first_loss = row["loss"] if first_loss is None else first_loss
                last_loss = row["loss"]
                state["step"] = step + 1
                done = step + 1 == total
                saving = (step + 1) % config.save_every == 0 or done
                evaluating = saving if config.eval_every == 0 else ((step + 1) % config.eval_every == 0 or done)
                if evaluating:
                    self.eval_and_track_best(state, step + 1)
                if saving:
                    state["elapsed_s"], state["cpu_s"] = self.clock.loop_seconds()
                    state["plan_fingerprint"] = self.fingerprint
                    state["total_steps"] = total
                    state[WORLD_SIZE_KEY] = accelerator.num_processes
                    save_checkpoint(accelerator, self.out, step + 1, state, config.save_total_limit)
                bar.update(task, advance=1, loss=f"loss {row['loss']:.4f}")
        final_dir = self.export("final")
        merged_dir = None
        if config.lora.enabled and config.merge:
            merged_dir = self.out / "merged"
            if accelerator.is_main_process and is_fsdp(accelerator):  # the live weights are sharded: merge a fresh copy
                export_merged_from_adapter(final_dir, self.tokenizer, config.model, merged_dir,
                                           dtype=getattr(torch, config.dtype))
            elif accelerator.is_main_process:
                export_merged(accelerator.unwrap_model(self.model), self.tokenizer, config.model, merged_dir)
            accelerator.wait_for_everyone()
        if first_loss is None:  # nothing left to run: report the curve already on disk
            from toolgym.train.metrics import read_metrics

            losses = [r["loss"] for r in read_metrics(self.out) if r.get("kind") == "train"]
            first_loss, last_loss = (losses[0], losses[-1]) if losses else (None, None)
        seconds, cpu = self.clock.call_seconds()
        result = SFTResult(
            out_dir=str(self.out), steps=int(state["step"]), total_steps=total, final_dir=str(final_dir),
            best_dir=str(self.out / "best") if state.get("best_step") is not None else None,
            merged_dir=str(merged_dir) if merged_dir else None, best_step=state.get("best_step"),
            best_eval_loss=state.get("best_eval_loss"), first_loss=first_loss, last_loss=last_loss,
            train_samples=len(self.train), eval_samples=len(self.eval), resumed_from_step=resumed_from,
            seconds=seconds, cpu_seconds=cpu,
            data=self.data_report.to_dict(),
        )
        if accelerator.is_main_process:
            write_manifest(self.out, "sft", status="complete", result=asdict(result), **self.manifest_fields())
        accelerator.end_training()
        return result

    def load_data_and_build(self) -> None:
        self.load_data()  # the data decides the batch plan that build() makes
        self.build()

    def eval_and_track_best(self, state: dict[str, Any], step: int) -> None:
        eval_loss = self.evaluate()
        if eval_loss is None:
            return
        best = state.get("best_eval_loss")
        improved = best is None or eval_loss < best
        if improved:
            state["best_eval_loss"], state["best_step"] = eval_loss, step
            path = self.export("best")
            if self.accelerator.is_main_process:
                (path / "best.json").write_text(json.dumps({"step": step, "eval_loss": eval_loss}) + "\n")
        state["last_eval_step"] = step
        self.metrics.write({"kind": "eval", "step": step, "eval_loss": eval_loss, "best": improved})


def _progress_bar(console: Any | None, enabled: bool) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("[bold]sft"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[loss]}"),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=console, disable=not enabled)


def run_sft(config: SFTConfig, *, console: Any | None = None, progress: bool = False) -> SFTResult:
    """Train (or resume training) per `config`; returns where the weights went and how the loss moved."""
    return _Trainer(config, console, progress).run()
