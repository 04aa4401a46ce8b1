"""The rollout policy of a GRPO run: HFPolicy batching over the trainer's own model object.

Rollouts must sample the weights being trained, without a copy or a reload per step, and must
record the exact ids and log-probs (token mode). `HFPolicy` does all of that but loads its model
from a folder; `SharedModelPolicy` adopts a live model instead and drops its prefix cache whenever
the weights change (stale key/value states would silently sample from the old policy).
"""

from __future__ import annotations

import contextlib
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
from transformers import GenerationConfig

from toolgym.policy.base import Generation, GenerationRequest
from toolgym.policy.hf import HFPolicy, _eos_token_ids
from toolgym.policy.kv_cache import supports_reserved_layers
from toolgym.policy.prefix_cache import PrefixCache


class SharedModelPolicy(HFPolicy):
    """HFPolicy over an already-loaded (possibly peft-wrapped) model; call `weights_changed` after updates."""

    def __init__(self, model: Any, tokenizer: Any, *, name: str, device: str = "cpu", max_batch_size: int = 64,
                 batch_wait_ms: float = 10.0, max_batch_wait_ms: float = 200.0, prefix_cache_tokens: int = 65536,
                 autocast_dtype: torch.dtype | None = None) -> None:
        # Mirrors HFPolicy.__init__ from the point where the model is loaded (keep the two in step).
        self.model_dir = Path(str(getattr(tokenizer, "name_or_path", "") or "."))
        self.device = device
        self.tokenizer = tokenizer
        self.eos_token_ids = _eos_token_ids(tokenizer, model)
        pad = tokenizer.pad_token_id
        self.pad_token_id = pad if pad is not None else min(self.eos_token_ids, default=0)
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        base.generation_config = GenerationConfig(pad_token_id=self.pad_token_id)
        self.model = model
        self._reserved_layers = supports_reserved_layers(model.config)
        self.prefix_cache = (
            PrefixCache(prefix_cache_tokens) if prefix_cache_tokens > 0 and self._reserved_layers else None
        )
        self.max_context = int(getattr(model.config, "max_position_embeddings", 0) or 0)
        self.vocab_size = int(model.get_input_embeddings().weight.shape[0])
        self.name = name
        self.checkpoint: str | None = None
        self.max_batch_size = max_batch_size
        self.batch_wait_s = batch_wait_ms / 1000.0
        self.max_batch_wait_s = max(max_batch_wait_ms, batch_wait_ms) / 1000.0
        self.generate_calls = 0
        self.batch_sizes: list[int] = []
        self._rng = random.Random(0)  # unused: every GRPO request carries its own seed
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grpo-generate")
        self._loop = None
        self._queue = None
        self._batcher = None
        self.autocast_dtype = autocast_dtype

    def weights_changed(self, checkpoint: str | None = None) -> None:
        """Forget prompt states computed with the old weights; name the weights now sampled."""
        if self.prefix_cache is not None:
            self.prefix_cache.clear()
        if checkpoint is not None:
            self.checkpoint = checkpoint

    def generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Sample in eval mode (no dropout) and, when training in bf16, under the same autocast."""
        was_training = self.model.training
        self.model.eval()
        device_type = "cuda" if str(self.device).startswith("cuda") else "cpu"
        autocast = (torch.autocast(device_type=device_type, dtype=self.autocast_dtype)
                    if self.autocast_dtype is not None else contextlib.nullcontext())
        try:
            with autocast:
                return super().generate_batch(requests)
        finally:
            self.model.train(was_training)
