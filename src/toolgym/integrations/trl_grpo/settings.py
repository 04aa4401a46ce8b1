"""toolgym's GRPO config → TRL's `GRPOConfig` keyword arguments, and the settings TRL cannot honour.

Every setting of `toolgym.config.grpo.GRPOConfig` has one row in MAPPING: the TRL field it becomes, the part of
toolgym that keeps it (the episode loop runs inside `rollout_func`), or why it is refused. docs/launch.md shows
the same table (`mapping_table()`; a test keeps them equal), so no setting is dropped without a word.
"""

from __future__ import annotations

from typing import Any

from toolgym.config.base import ConfigError
from toolgym.config.grpo import GRPOConfig
from toolgym.train.runtime import resolve_precision

# (toolgym setting, what it becomes under backend trl). `section.*`: every field of that section.
MAPPING: tuple[tuple[str, str], ...] = (
    ("backend", "`trl`: this table"),
    ("tasks, split, envs, limit", "the train dataset (one row per task; rollout_func finds the task by its row)"),
    ("model", "loaded by toolgym (rope scaling, LoRA, fp32 trained weights) and passed to `GRPOTrainer(model=...)`"),
    ("out", "the run folder; TRL's checkpoints in `OUT/trl/checkpoint-N` (`output_dir`)"),
    ("steps", "`max_steps` = steps × optim.update_epochs"),
    ("tasks_per_step", "`per_device_train_batch_size` × `gradient_accumulation_steps` × processes"
                       " = tasks_per_step × samples_per_task"),
    ("samples_per_task", "`num_generations`"),
    ("concurrency", "toolgym's episode slots in rollout_func"),
    ("seed", "`seed`, and toolgym's sampling seeds"),
    ("threads", "`torch.set_num_threads`"),
    ("save_rollouts", "toolgym's `OUT/rollouts/step-N.jsonl`"),
    ("engine.name", "`use_vllm` (hf: false, toolgym's in-process sampler over the trained model; vllm: true,"
                    " toolgym's episodes sampled by TRL's colocated engine or `trl vllm-serve`)"),
    ("engine.command", "read only by engine.name harness, which is refused (harness episodes train under backend"
                       " toolgym)"),
    ("engine.device", "`use_cpu` (cpu: true)"),
    ("engine.dtype", "dtype of the frozen LoRA base (trained weights stay fp32); TRL builds vLLM at its auto"
                     " dtype"),
    ("engine.max_batch_size, engine.batch_wait_ms", "toolgym's in-process sampler (engine hf)"),
    ("engine.rope_scaling, engine.max_position_embeddings", "the loaded model's config"),
    ("engine.gpu_memory_utilization", "`vllm_gpu_memory_utilization`"),
    ("engine.tensor_parallel_size", "`vllm_tensor_parallel_size`"),
    ("sampling.temperature", "`temperature` (the loss's log-probs) and toolgym's sampler"),
    ("sampling.top_p", "`top_p` and toolgym's sampler; < 1 needs loss.match_sampler_truncation: false"),
    ("sampling.top_k", "`top_k` and toolgym's sampler; > 0 needs loss.match_sampler_truncation: false"),
    ("sampling.max_context_tokens", "toolgym's episode loop; `max_completion_length` (a nominal bound)"),
    ("sampling.max_new_tokens, sampling.stop, sampling.max_turns, sampling.timeout_s, sampling.done_tool, "
     "sampling.max_format_errors", "toolgym's episode loop in rollout_func"),
    ("sampling.turn_progress", "toolgym's episode loop; refused when true (only advantage.credit turn reads it)"),
    ("reward.alpha, reward.alpha_by_env", "the reward function: toolgym's verdict, shaped"
                                          " (errored episodes: None, never scored)"),
    ("advantage.std_normalize", "`scale_rewards` (true: group; false: none)"),
    ("advantage.baseline", "group_mean (TRL's); any other refused"),
    ("advantage.credit", "episode (TRL's); turn refused"),
    ("advantage.turn_weight, advantage.turn_discount", "refused unless at their defaults (credit turn only)"),
    ("loss.objective", "`importance_sampling_level` (token or sequence)"),
    ("loss.clip_low", "`epsilon`"),
    ("loss.clip_high", "`epsilon_high`"),
    ("loss.kl_coef", "`beta`"),
    ("loss.reference_device", "same; cpu refused"),
    ("loss.aggregation", "`loss_type` (token_mean: dapo; sequence_mean: grpo; dr_grpo: dr_grpo)"),
    ("loss.dr_grpo_constant", "`max_completion_length` under dr_grpo (default max_new_tokens × max_turns)"),
    ("loss.match_sampler_truncation", "TRL's log-probs apply temperature only: refused with top_p < 1 or top_k > 0"),
    ("loss.mismatch.kind", "`vllm_importance_sampling_correction` (none: false; tis, mis: true; needs engine vllm)"),
    ("loss.mismatch.level", "`vllm_importance_sampling_mode` (tis: token_truncate / sequence_truncate; mis:"
                            " token_mask / sequence_mask); geometric refused"),
    ("loss.mismatch.cap", "tis: `vllm_importance_sampling_clip_max`"),
    ("loss.mismatch.low, loss.mismatch.high", "mis: `vllm_importance_sampling_clip_min`, `_clip_max`"),
    ("optim.lr", "`learning_rate`"),
    ("optim.schedule", "`lr_scheduler_type` (constant: constant_with_warmup)"),
    ("optim.warmup_steps", "`warmup_steps`"),
    ("optim.weight_decay", "`weight_decay`"),
    ("optim.max_grad_norm", "`max_grad_norm` (0: none)"),
    ("optim.batch_tokens", "`per_device_train_batch_size` = batch_tokens ÷ sampling.max_context_tokens episodes"
                           " (at least 1), the rest by `gradient_accumulation_steps`"),
    ("optim.precision", "`bf16`"),
    ("optim.gradient_checkpointing", "`gradient_checkpointing`"),
    ("optim.mini_batches", "1; more refused"),
    ("optim.update_epochs", "`num_iterations`"),
    ("lora.*", "toolgym's peft adapter on the model GRPOTrainer gets (the KL reference: the adapter off)"),
    ("curriculum.enabled", "true: rollout_func plays each group's task as toolgym's curriculum draws it (TRL's"
                           " sampler fixes the group layout only; its state after each step in OUT/trl/curriculum/); false:"
                           " TRL's uniform draw"),
    ("curriculum.*", "toolgym's curriculum, read only with curriculum.enabled"),
    ("dynamic_sampling.enabled", "false; true refused"),
    ("dynamic_sampling.max_rounds", "read only with dynamic_sampling.enabled"),
    ("off_policy.enabled", "false; true refused"),
    ("off_policy.max_staleness", "read only with off_policy.enabled"),
    ("rollout_workers.ray", "null; a cluster refused"),
    ("rollout_workers.*", "read only with rollout_workers.ray"),
    ("checkpoint.save_every", "`save_steps` = save_every × optim.update_epochs"),
    ("checkpoint.keep", "`save_total_limit`"),
    ("eval.enabled", "false; true refused (evaluate final/ with `toolgym eval`)"),
    ("eval.*", "read only with eval.enabled"),
    ("monitor.*", "toolgym's tool-call collapse warning and all-errored stop, on each step's episodes"),
    ("preflight.*", "the memory plan of `--dry-run`"),
    ("experimental.*", "refused unless at their defaults"),
    ("trl.vllm_mode", "`vllm_mode`"),
    ("trl.vllm_server_host", "`vllm_server_host`"),
    ("trl.vllm_server_port", "`vllm_server_port`"),
    ("trl.vllm_server_timeout_s", "`vllm_server_timeout`"),
)

LOSS_TYPES = {"token_mean": "dapo", "sequence_mean": "grpo", "dr_grpo": "dr_grpo"}
SCHEDULES = {"constant": "constant_with_warmup", "cosine": "cosine", "linear": "linear"}
CHECKPOINTS_DIR = "trl"


def mapping_table() -> str:
    """MAPPING as the markdown table docs/launch.md shows."""
    lines = ["| toolgym setting | under `backend: trl` |", "| --- | --- |"]
    lines += [f"| `{setting}` | {becomes} |" for setting, becomes in MAPPING]
    return "\n".join(lines)


def _changed(section: Any, name: str) -> bool:
    """Whether a setting differs from its default (written at its default, it asks nothing of TRL)."""
    return bool(getattr(section, name) != type(section).model_fields[name].default)


def refusals(config: GRPOConfig) -> list[str]:
    """One line per setting TRL cannot honour, each naming it (empty: the config maps)."""
    found: list[str] = []

    def refuse(setting: str, why: str) -> None:
        found.append(f"{setting}: {why}")

    if config.engine.name not in ("hf", "vllm"):
        refuse("engine.name", f"TRL samples with its own model or vLLM, not engine {config.engine.name}; harness "
                              "episodes train under backend toolgym")
    if config.dynamic_sampling.enabled:
        refuse("dynamic_sampling.enabled", "TRL samples one generation batch per step; set it false")
    if config.off_policy.enabled:
        refuse("off_policy.enabled", "TRL samples each step with the current weights; set it false")
    if config.rollout_workers.ray is not None:
        refuse("rollout_workers.ray", "episodes run in each training process; set it null")
    if config.eval.enabled:
        refuse("eval.enabled", "no periodic eval under TRL; set it false and run `toolgym eval` on final/")
    if config.advantage.baseline != "group_mean":
        refuse("advantage.baseline", f"TRL's baseline is the group mean, not {config.advantage.baseline}")
    if config.advantage.credit != "episode":
        refuse("advantage.credit", f"TRL gives every token its episode's advantage, not credit {config.advantage.credit}")
    for name in ("turn_weight", "turn_discount"):
        if _changed(config.advantage, name) and config.advantage.credit == "episode":
            refuse(f"advantage.{name}", "read only by advantage.credit turn, which TRL does not have")
    if config.sampling.turn_progress:
        refuse("sampling.turn_progress", "scores each turn for advantage.credit turn, which TRL does not have")
    for name in type(config.experimental).model_fields:
        if _changed(config.experimental, name):
            refuse(f"experimental.{name}", "no TRL counterpart")
    loss = config.loss
    if loss.reference_device != "same":
        refuse("loss.reference_device", "TRL keeps its reference model where the trained one is")
    if loss.match_sampler_truncation and (config.sampling.top_p < 1 or config.sampling.top_k > 0):
        refuse("loss.match_sampler_truncation", "TRL's log-probs apply the temperature only, not top_p/top_k; set "
                                                "it false (or sample with top_p 1, top_k 0)")
    if loss.mismatch.kind != "none":
        if config.engine.name != "vllm":
            refuse("loss.mismatch.kind", "TRL corrects sampler log-probs only when vLLM samples (engine.name vllm)")
        if loss.mismatch.level == "geometric":
            refuse("loss.mismatch.level", "TRL's importance weights are per token or per sequence, not geometric")
    if config.optim.mini_batches != 1:
        refuse("optim.mini_batches", "one optimizer step per generation batch and update epoch under TRL")
    return found


def check_trl_config(config: GRPOConfig) -> None:
    """Raise ConfigError naming every setting TRL cannot honour."""
    found = refusals(config)
    if found:
        raise ConfigError("backend: trl cannot honour " + "; ".join(found))


def micro_batch(episodes_per_process: int, batch_tokens: int, max_context_tokens: int) -> int:
    """Episodes per forward: as many of the longest episode as batch_tokens holds, a divisor of the process's
    share so every accumulation step is full."""
    wanted = max(1, min(episodes_per_process, batch_tokens // max_context_tokens))
    return max(d for d in range(1, wanted + 1) if episodes_per_process % d == 0)


def trl_arguments(config: GRPOConfig, *, processes: int, device: str) -> dict[str, Any]:
    """The GRPOConfig keyword arguments of `config` run by `processes` processes on `device` (refusals first)."""
    check_trl_config(config)
    episodes = config.tasks_per_step * config.samples_per_task
    if episodes % processes:
        raise ConfigError(f"tasks_per_step × samples_per_task ({episodes}) must divide by the {processes} "
                          "training processes")
    per_process = episodes // processes
    micro = micro_batch(per_process, config.optim.batch_tokens, config.sampling.max_context_tokens)
    loss, sampling, optim, engine = config.loss, config.sampling, config.optim, config.engine
    epochs = optim.update_epochs
    arguments: dict[str, Any] = {
        "output_dir": f"{config.out}/{CHECKPOINTS_DIR}",
        "max_steps": config.steps * epochs,
        "per_device_train_batch_size": micro,
        "gradient_accumulation_steps": per_process // micro,
        "num_generations": config.samples_per_task,
        "num_iterations": epochs,
        "seed": config.seed,
        "learning_rate": optim.lr,
        "lr_scheduler_type": SCHEDULES[optim.schedule],
        "warmup_steps": optim.warmup_steps,
        "weight_decay": optim.weight_decay,
        "max_grad_norm": optim.max_grad_norm,
        "bf16": resolve_precision(optim.precision, device) == "bf16",
        "gradient_checkpointing": optim.gradient_checkpointing,
        "beta": loss.kl_coef,
        "epsilon": loss.clip_low,
        "epsilon_high": loss.clip_high,
        "importance_sampling_level": "sequence" if loss.objective == "sequence" else "token",
        "loss_type": LOSS_TYPES[loss.aggregation],
        "scale_rewards": "group" if config.advantage.std_normalize else "none",
        "max_completion_length": (config.dr_grpo_constant if loss.aggregation == "dr_grpo"
                                  else sampling.max_context_tokens),
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": sampling.top_k,
        "use_vllm": engine.name == "vllm",
        "use_cpu": device == "cpu",
        "save_strategy": "steps",
        "save_steps": config.checkpoint.save_every * epochs,
        "save_total_limit": config.checkpoint.keep,
        "logging_steps": 1,
        "report_to": "none",
        "disable_dropout": True,
        "mask_truncated_completions": False,  # toolgym's episodes may end on a tool result: not a cut-off turn
    }
    if engine.name == "vllm":
        mismatch = loss.mismatch
        arguments.update({
            "vllm_mode": config.trl.vllm_mode,
            "vllm_gpu_memory_utilization": engine.gpu_memory_utilization,
            "vllm_tensor_parallel_size": engine.tensor_parallel_size,
            "vllm_max_model_length": sampling.max_context_tokens,
            "vllm_server_host": config.trl.vllm_server_host,
            "vllm_server_port": config.trl.vllm_server_port,
            "vllm_server_timeout": config.trl.vllm_server_timeout_s,
            "vllm_importance_sampling_correction": mismatch.kind != "none",
        })
        if mismatch.kind != "none":
            level = "sequence" if mismatch.level == "sequence" else "token"
            arguments["vllm_importance_sampling_mode"] = f"{level}_{'truncate' if mismatch.kind == 'tis' else 'mask'}"
            arguments["vllm_importance_sampling_clip_max"] = mismatch.cap if mismatch.kind == "tis" else mismatch.high
            if mismatch.kind == "mis":
                arguments["vllm_importance_sampling_clip_min"] = mismatch.low
    return arguments
