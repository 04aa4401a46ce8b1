"""Weight sync from the GRPO trainer to a vLLM rollout engine, verified after every push.

The sampler is not the trainer: after each update the trainer's weights are pushed into vLLM in place
(full weights, or with LoRA the adapter merged into the base: one code path, no LoRA kernels while
sampling, and the served matrices are exactly the trainer's W + BA·scale), the prefix cache is
dropped, and a fingerprint is checked: the log-probs of a fixed probe sequence from vLLM vs the
trainer's model. A mismatch beyond tolerance, or vLLM answering like the previous weights, means
stale weights and fails the run (`StaleWeightsError`): silently training against samples of another
policy is the failure this guards against.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from toolgym.policy.base import Generation, GenerationRequest, Policy

# Fixed text for the fingerprint: ordinary words, JSON and a tool-call tag, so most layers' paths run.
PROBE_TEXT = ('The user asked to list open tickets for the billing team. <tool_call>{"name": "list_tickets", '
              '"arguments": {"team": "billing", "status": "open"}}</tool_call> Three tickets are open.')
# Max |Δ log-prob| on the probe that still counts as the same weights: fp32 kernels agree to ~2e-5;
# bf16 kernels round differently (up to ~0.3 per token measured), so there only a gross mismatch shows.
TOLERANCE = {"float32": 1e-3, "bfloat16": 0.5, "float16": 0.5}


class StaleWeightsError(RuntimeError):
    """vLLM's log-probs do not match the trainer's weights after a sync: rollouts would sample another policy."""


@dataclass
class SyncReport:
    seconds_push: float
    seconds_verify: float
    max_abs: float  # max over probe tokens of |logp_vllm - logp_trainer|
    mean_abs: float
    version: int  # weight loads the engine has had

    def row(self) -> dict[str, Any]:
        return {"sync_seconds": round(self.seconds_push, 4), "sync_verify_seconds": round(self.seconds_verify, 4),
                "sync_probe_max_abs": self.max_abs, "sync_probe_mean_abs": self.mean_abs,
                "sync_version": self.version}


def probe_ids(tokenizer: Any, length: int = 48) -> list[int]:
    ids = tokenizer(PROBE_TEXT, add_special_tokens=False)["input_ids"]
    return list(ids[:length])


def _base_of(model: Any) -> Any:
    """The CausalLM inside a peft wrapper (or the model itself)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def served_weights(model: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """The trainer's weights as a checkpoint would name them, LoRA merged in, lm_head included when tied.

    A peft model's LoRA layers keep `base_layer.weight` plus `lora_A` / `lora_B`; each served weight is
    base + delta, computed without touching the trainer's tensors (merge + unmerge would add float
    error to the base every step). Yielded one at a time: a merged matrix exists only while the engine
    copies it, so a push never holds a second copy of the model.
    """
    base = _base_of(model)
    lora_layers: dict[str, Any] = {}
    if base is not model:
        from peft.tuners.lora import LoraLayer

        lora_layers = {f"{name}.base_layer.weight": module for name, module in base.named_modules()
                       if isinstance(module, LoraLayer) and not getattr(module, "merged", False)}
    names: set[str] = set()
    for name, tensor in base.state_dict().items():
        if "lora_" in name:
            continue
        served = name.replace(".base_layer.", ".")
        names.add(served)
        module = lora_layers.get(name)
        if module is None:
            yield served, tensor.detach()
            continue
        weight = module.get_base_layer().weight
        delta = torch.zeros_like(weight)
        for adapter in module.active_adapters:
            if adapter in module.lora_A:
                delta = delta + module.get_delta_weight(adapter).to(delta.dtype)
        yield served, (weight + delta).detach()
    if getattr(base.config, "tie_word_embeddings", False) and "lm_head.weight" not in names:
        # vLLM keeps an untouched lm_head (only a warning) when a tied model's push lacks it.
        yield "lm_head.weight", base.get_input_embeddings().weight.detach()


def trainer_logprobs(model: Any, ids: list[int]) -> list[float]:
    """log p(token_i | earlier tokens), i ≥ 1, under the trainer's model in fp32 at temperature 1."""
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters()).device
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids], device=device)).logits[0, :-1].float()
        targets = torch.tensor(ids[1:], device=device).unsqueeze(-1)
        return torch.log_softmax(logits, dim=-1).gather(-1, targets).squeeze(-1).cpu().tolist()
    finally:
        model.train(was_training)


def compare(served: list[float], trainer: list[float]) -> tuple[float, float]:
    diff = (torch.tensor(served, dtype=torch.float64) - torch.tensor(trainer, dtype=torch.float64)).abs()
    return float(diff.max()), float(diff.mean())


def verify_weights(policy: Any, model: Any, ids: list[int], tolerance: float,
                   previous: list[float] | None = None) -> tuple[float, float, list[float]]:
    """(max, mean |Δ|, the trainer's probe log-probs); raises StaleWeightsError on a mismatch.

    `previous` (the trainer's probe log-probs at the last sync) catches a stale engine even where the
    tolerance must be loose (bf16): if the trainer moved and vLLM still answers closer to the old weights.
    """
    served = policy.prompt_logprobs(ids)
    expected = trainer_logprobs(model, ids)
    max_abs, mean_abs = compare(served, expected)
    if max_abs > tolerance:
        raise StaleWeightsError(f"vLLM's log-probs of the probe differ from the trainer's by up to {max_abs:.3g} "
                                f"(mean {mean_abs:.3g}, tolerance {tolerance:g}): the served weights are not the "
                                "trainer's (stale or failed sync)")
    if previous is not None:
        # Fresh: vLLM is within kernel noise of the current weights. Stale: within noise of the previous ones,
        # and as far from the current ones as the update moved them. Unchanged weights give equal distances.
        old_mean = compare(served, previous)[1]
        if old_mean < 0.5 * mean_abs:
            raise StaleWeightsError(f"vLLM's log-probs of the probe match the previous weights (mean |Δ| "
                                    f"{old_mean:.3g}) better than the trainer's current ones ({mean_abs:.3g})")
    return max_abs, mean_abs, expected


def sync_weights(policy: Any, model: Any, *, ids: list[int], tolerance: float, checkpoint: str | None = None,
                 previous: list[float] | None = None) -> tuple[SyncReport, list[float]]:
    """Push the trainer's weights into the vLLM policy and verify them; returns the report and the
    trainer's probe log-probs (the `previous` of the next sync)."""
    seconds_push = policy.load_weights(served_weights(model), checkpoint=checkpoint)
    began = time.perf_counter()
    max_abs, mean_abs, expected = verify_weights(policy, model, ids, tolerance, previous)
    report = SyncReport(seconds_push=seconds_push, seconds_verify=time.perf_counter() - began,
                        max_abs=max_abs, mean_abs=mean_abs, version=policy.weight_version)
    return report, expected


class SyncedVLLM(Policy):
    """The GRPO run's rollout engine: a VLLMPolicy kept in sync with the trainer's model.

    The trainer calls `weights_changed(label)` before each step's rollouts and before each eval; a new
    label means the weights moved (an update, or a resumed checkpoint), so they are pushed and verified.
    """

    def __init__(self, policy: Any, model: Any, tokenizer: Any, *, tolerance: float | None = None) -> None:
        self.policy = policy
        self.tokenizer = policy.tokenizer
        self.name = policy.name
        self.weights = policy.weights
        self.model = model
        self.ids = probe_ids(tokenizer)
        self.tolerance = tolerance if tolerance is not None else TOLERANCE.get(policy.dtype, 0.5)
        self.synced_label: str | None = None
        self.previous: list[float] | None = None
        self.reports: list[SyncReport] = []

    def weights_changed(self, checkpoint: str | None = None) -> None:
        if checkpoint is not None and checkpoint == self.synced_label:
            return
        report, self.previous = sync_weights(self.policy, self.model, ids=self.ids, tolerance=self.tolerance,
                                             checkpoint=checkpoint, previous=self.previous)
        self.reports.append(report)
        self.synced_label = checkpoint
        self.checkpoint = checkpoint

    async def generate(self, request: GenerationRequest) -> Generation:
        return await self.policy.generate(request)

    async def close(self) -> None:
        await self.policy.close()

    def sync_metrics(self) -> dict[str, Any]:
        """The latest sync's numbers for the step's metrics row."""
        return self.reports[-1].row() if self.reports else {}


def build_vllm_engine(config: Any, model: Any, tokenizer: Any, *, name: str = "", device: str = "",
                      autocast_dtype: Any = None) -> SyncedVLLM:
    """The vLLM rollout engine for a GRPO config (its `engine` section), synced with `model` on first use;
    registered as `vllm` in toolgym.policy.engines. vLLM names itself, samples on the device of the trainer's
    model and computes in engine.dtype, so `name`, `device` and `autocast_dtype` go unused."""
    from toolgym.policy.vllm_policy import VLLMPolicy

    engine = config.engine
    overrides: dict[str, Any] = {}
    if engine.rope_scaling is not None:
        overrides["rope_parameters"] = dict(engine.rope_scaling)
    if engine.max_position_embeddings is not None:
        overrides["max_position_embeddings"] = engine.max_position_embeddings
    policy = VLLMPolicy(config.model, device=str(next(model.parameters()).device), dtype=engine.dtype,
                        seed=config.seed, gpu_memory_utilization=engine.gpu_memory_utilization,
                        tensor_parallel_size=engine.tensor_parallel_size, threads=config.threads,
                        max_model_len=engine.max_position_embeddings, hf_overrides=overrides or None)
    return SyncedVLLM(policy, model, tokenizer)  # the first sync comes before the first rollout or eval
