"""`run_trl_grpo`: a toolgym GRPO config trained by TRL's GRPOTrainer, written in toolgym's run layout.

toolgym loads the tasks and the model (its own loader: rope scaling, LoRA, fp32 trained weights), maps the
config (settings.py), and hands TRL a rollout_func that plays toolgym episodes (rollout.py). The run folder is
the one `toolgym eval`, `report`, `traces diff` and the pipeline read: metrics.jsonl rows (step_log.py),
final/ (transformers or peft load it), manifest.json. Resume: TRL's Trainer checkpoints in OUT/trl/checkpoint-N
(weights, optimizer, scheduler, RNG, data position); re-running the same command resumes from the latest one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from toolgym.config.grpo import GRPOConfig
from toolgym.dataset.manifest import write_manifest
from toolgym.envs import Environment, make_env
from toolgym.integrations.trl_grpo import vllm_sync
from toolgym.integrations.trl_grpo.rollout import ToolgymRollout, task_rows, toolgym_reward
from toolgym.integrations.trl_grpo.settings import CHECKPOINTS_DIR, trl_arguments
from toolgym.integrations.trl_grpo.step_log import StepLog
from toolgym.integrations.trl_grpo.task_draw import TaskDraw
from toolgym.rollout.tasks import load_tasks
from toolgym.train.distributed import export_on_main
from toolgym.train.grpo.model_setup import load_model_for_grpo
from toolgym.train.grpo.result import GRPOError, GRPOResult
from toolgym.train.grpo.run_state import manifest_fields
from toolgym.train.metrics import MetricsLog
from toolgym.train.runtime import RunClock, resolve_device

FINAL_DIR = "final"
RESUME_NOTE = ("TRL Trainer checkpoints in OUT/trl/checkpoint-N every checkpoint.save_every steps (weights, "
               "optimizer, scheduler, RNG, dataloader position); re-running the same command resumes from the "
               "latest, re-sampling the generation batch a kill interrupted; metrics rows past it are dropped")


def _latest_checkpoint(folder: Path) -> Path | None:
    found = [p for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return max(found, key=lambda p: int(p.name.split("-")[-1])) if found else None


def run_trl_grpo(config: GRPOConfig, *, console: Any | None = None,
                 env_factory: Callable[[str], Environment] = make_env) -> GRPOResult:
    """Train (or resume) `config` with TRL's GRPOTrainer; settings TRL cannot honour are refused first."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is TRL-experimental: pinned, tested
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer

    from toolgym.train.distributed import is_main_process

    def say(text: str) -> None:
        if console is not None and is_main_process():
            console.print(text)

    clock = RunClock()
    out = Path(config.out)
    tasks_path, train_tasks = load_tasks(config.tasks, split=config.split, envs=config.envs, limit=config.limit)
    if not train_tasks:
        raise GRPOError(f"no tasks in {tasks_path} match split={config.split} envs={config.envs}")
    tasks_by_id = {t.id: t for t in train_tasks}
    if config.threads:
        torch.set_num_threads(config.threads)
    device = resolve_device(config.engine.device)
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    arguments = trl_arguments(config, processes=processes, device=device)
    if config.engine.name == "vllm" and config.trl.vllm_mode == "colocate":  # TRL builds the engine in this rank
        from toolgym.policy.vllm_policy import prepare_vllm_env

        prepare_vllm_env(device, in_process=True, threads=config.threads)
    args = TRLConfig(**arguments)
    tokenizer = AutoTokenizer.from_pretrained(config.model, local_files_only=True)
    tokenizer.padding_side = "left"
    model = load_model_for_grpo(config)
    rows = task_rows(train_tasks, at_least=config.tasks_per_step)
    state: dict[str, Any] = {}
    metrics = MetricsLog(out)
    draw = TaskDraw(config, tasks_by_id, out / CHECKPOINTS_DIR) if config.curriculum.enabled else None
    step_log = StepLog(config, tasks_by_id, metrics, say=say, state=state, draw=draw)
    rollout = ToolgymRollout(config, tasks_by_id, env_factory=env_factory, on_batch=step_log.on_batch, draw=draw)
    trainer = GRPOTrainer(model=model, reward_funcs=[toolgym_reward], args=args, processing_class=tokenizer,
                          train_dataset=Dataset.from_list(rows), rollout_func=rollout, callbacks=[step_log])
    vllm_sync.install(trainer)
    metrics.accelerator = trainer.accelerator
    latest = _latest_checkpoint(Path(args.output_dir))
    resumed_from = int(latest.name.split("-")[-1]) // config.optim.update_epochs if latest else 0
    if draw is not None:
        draw.resume(resumed_from)
    fields = {**manifest_fields(config, trainer.accelerator, tasks_path, len(train_tasks), 0),
              "backend": "trl", "resume": RESUME_NOTE, "trl_arguments": arguments}
    if trainer.accelerator.is_main_process:
        metrics.reset(resumed_from)
        write_manifest(out, "grpo", status="running", resumed_from_step=resumed_from, **fields)
    if resumed_from:
        say(f"resuming {out} from step {resumed_from}/{config.steps} ({latest})")
    clock.start_loop(0.0, 0.0)
    try:
        trainer.train(resume_from_checkpoint=str(latest) if latest else None)
        final_dir = export_on_main(trainer.accelerator, trainer.model, tokenizer, config.model, out / FINAL_DIR)
    finally:
        rollout.close()
    seconds, cpu = clock.call_seconds()
    rates = step_log.success_rates
    result = GRPOResult(out_dir=str(out), steps=trainer.state.global_step // config.optim.update_epochs,
                        total_steps=config.steps, resumed_from_step=resumed_from, final_dir=str(final_dir),
                        base_model=str(Path(config.model).resolve()), lora=config.lora.enabled,
                        first_success_rate=rates[0] if rates else None, last_success_rate=rates[-1] if rates else None,
                        seconds=seconds, cpu_seconds=cpu)
    if trainer.accelerator.is_main_process:
        write_manifest(out, "grpo", status="complete", resumed_from_step=resumed_from, result=asdict(result),
                       **fields)
    return result
