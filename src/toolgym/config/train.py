"""SFT and RFT configs: the pipeline's `sft:` and `rft.settings:` sections, and what `train sft|rft` run."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from toolgym.config.pieces import EpisodeLimits, Lora, OptimizerBasics, Sampling
from toolgym.policy.spec import PolicyChoice

LEGACY_LORA_KEYS = {"lora_rank": "rank", "lora_alpha": "alpha", "lora_dropout": "dropout",
                    "target_modules": "target_modules"}


def migrate_flat_lora(data: Any) -> Any:
    """SFT settings written before LoRA had one shape (`lora: true, lora_rank: 8`) → `lora: {enabled, rank}`."""
    if not isinstance(data, dict) or not any(key in data for key in LEGACY_LORA_KEYS):
        return data
    data = dict(data)
    lora = data.get("lora", {})
    lora = {"enabled": lora} if isinstance(lora, bool) else dict(lora or {})
    for old, new in LEGACY_LORA_KEYS.items():
        if old in data:
            lora[new] = data.pop(old)
    data["lora"] = lora
    return data


class SFTSettings(OptimizerBasics):
    """How SFT trains (every SFT field but its data, model and out)."""

    eval_data: str | None = None
    """SFT rows for eval loss (default: held-out task groups of the data)."""
    eval_fraction: float = Field(0.05, ge=0, lt=1)
    """Share of the task groups held out for eval loss when no eval_data is given."""
    epochs: int = Field(1, ge=1)
    """Passes over the data (ignored with max_steps)."""
    max_steps: int | None = Field(None, ge=1)
    """Optimizer steps (cycles epochs as needed)."""
    lr: float = Field(1e-4, gt=0)
    """Peak learning rate."""
    schedule: Literal["cosine", "linear", "constant"] = "cosine"
    """Learning-rate schedule after warmup."""
    warmup_ratio: float = Field(0.03, ge=0, le=1)
    """Warmup steps as a fraction of all steps."""
    warmup_steps: int | None = Field(None, ge=0)
    """Warmup steps (overrides warmup_ratio)."""
    max_rows: int | None = Field(None, ge=1)
    """Samples per micro-batch at most."""
    grad_accum: int = Field(1, ge=1)
    """Micro-batches per optimizer step."""
    max_length: int | None = Field(None, ge=2)
    """Longest sample kept (default: the model's context length)."""
    eval_every: int = Field(0, ge=0)
    """Evaluate every N steps (0: at each checkpoint and at the end)."""
    save_every: int = Field(100, ge=1)
    """Checkpoint (and evaluate) every N steps."""
    save_total_limit: int = Field(2, ge=1)
    """Checkpoints kept."""
    lora: Lora = Field(default_factory=Lora)
    """LoRA adapters instead of full fine-tuning."""
    merge: bool = False
    """LoRA: also write the merged model to OUT/merged."""
    device: str = "auto"
    """auto | cpu | cuda."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Weights dtype in memory."""
    threads: int | None = Field(None, ge=1)
    """torch CPU threads."""
    seed: int = 0
    """Seed of the batch plan, the eval split and the weights' randomness."""
    render_mode: Literal["rollout", "template"] = "rollout"
    """Rows without token samples: rollout (as toolgym's loop renders) | template."""
    token_samples: Literal["auto", "always", "never"] = "auto"
    """Use rows' recorded token samples: auto | always | never."""
    enable_thinking: bool = False
    """Render rows with the template's thinking on (rollouts use off)."""
    report_to: list[str] = Field(default_factory=list)
    """Trackers: tensorboard, wandb (must be installed)."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_lora(cls, data: Any) -> Any:
        return migrate_flat_lora(data)


class SFTConfig(SFTSettings):
    """`toolgym train sft`: SFT rows → a fine-tuned model in `out` (resumable)."""

    data: str
    """SFT rows (from `toolgym data convert`)."""
    model: str
    """Model folder (config.json, weights, tokenizer[, toolgym.json])."""
    out: str
    """Run folder: checkpoints, best/, final/, metrics.jsonl; re-run to resume."""


class RFTSettings(Sampling, EpisodeLimits, PolicyChoice):
    """How RFT samples and selects (every RFT field but its tasks, model and out)."""

    temperature: float = Field(0.8, ge=0)
    """Sampling temperature of the K episodes per task."""
    split: Literal["train", "heldout_tasks", "heldout_env", "eval"] | None = "train"
    """Tasks to sample (train; never the held-out splits you report)."""
    envs: list[str] | None = None
    """Environments to keep (null: all)."""
    limit: int | None = Field(None, ge=1)
    """N of the selected tasks, drawn with the seed."""
    samples_per_task: int = Field(8, ge=1)
    """K episodes per task."""
    concurrency: int = Field(8, ge=1)
    """Episodes in flight at once."""
    max_batch_size: int = Field(32, ge=1)
    """hf policies: rows per generate call."""
    policy: str | None = None
    """Policy spec to sample with (default hf:MODEL), e.g. openai:URL#MODEL#token or vllm:MODEL."""
    harness: str | None = None
    """An agent harness (a shell command, as `toolgym harness run --command`) that plays each episode against the
    task's tools and a recording endpoint over the policy, timeout_s each; null: toolgym's episode loop."""
    device: str = "cpu"
    """cpu | cuda (sampling and training)."""
    seed: int = 0
    """Run seed (task draw, sampling, SFT)."""
    min_reward: float = 1.0
    """Keep every episode with reward ≥ this."""
    min_partial: float = 0.6
    """Else keep the task's best episode if its partial_score ≥ this."""
    dedupe: bool = False
    """Drop identical kept episodes."""
    train_malformed_turns: bool = False
    """Train on turns whose tool call did not parse too."""
    replay: str | None = None
    """SFT rows (e.g. the teacher's) mixed into the fine-tune: a few dozen kept episodes alone pull the model
    off what SFT taught it."""
    replay_ratio: float = Field(0.0, ge=0)
    """With replay: replayed rows per kept episode."""
    sft: SFTSettings = Field(default_factory=SFTSettings)
    """SFT settings of the fine-tune (in the pipeline: applied on top of its `sft:` section)."""


class RFTConfig(RFTSettings):
    """`toolgym train rft`: sample K episodes per task, keep the good ones, SFT on them."""

    tasks: str
    """Dataset folder (tasks.jsonl) or a tasks.jsonl file."""
    model: str
    """Model folder to sample from and fine-tune."""
    out: str
    """Run folder: rollout/, rft_rows.jsonl, sft/; re-run to resume."""
