"""HFPolicy: an in-process transformers model that batches the pending turns of many episodes.

Episodes await `generate` concurrently; requests wait in a queue for a short window and then go
to the model together in ONE `generate` call, run in a worker thread so the event loop (env
steps, other episodes, an HTTP server) stays live. Each row keeps its own sampling settings,
stop strings and budget (see `toolgym.policy.sampling`), and comes back as the exact sampled ids
with their log-probs. Prompt states are kept in a prefix cache, so a shared system prompt or an
episode's previous turns are not computed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    DynamicCache,
    GenerationConfig,
    LogitsProcessorList,
    StoppingCriteriaList,
)

from toolgym.policy.base import Generation, GenerationRequest, Policy, PolicyError
from toolgym.policy.kv_cache import reserved_cache, supports_reserved_layers
from toolgym.policy.prefix_cache import PrefixCache, PrefixEntry
from toolgym.policy.sampling import RowSampler, RowState, RowStopper, row_generator

# Reuse cached prefix states only if the part left to compute is under 1/RECOMPUTE_RATIO of the prompt.
RECOMPUTE_RATIO = 4
DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_dtype(dtype: str | torch.dtype | None, device: str) -> torch.dtype:
    """float32 on CPU unless asked otherwise; bfloat16 on accelerators."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype in (None, "auto"):
        return torch.float32 if device == "cpu" else torch.bfloat16
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)} or 'auto'")
    return DTYPES[dtype]


@dataclass
class _Pending:
    request: GenerationRequest
    future: asyncio.Future[Generation]


class HFPolicy(Policy):
    """Token-mode policy over a local checkpoint (optionally with a peft LoRA adapter)."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        device: str = "cpu",
        dtype: str | torch.dtype | None = "auto",
        max_batch_size: int = 32,
        batch_wait_ms: float = 10.0,
        max_batch_wait_ms: float = 200.0,
        lora: str | Path | None = None,
        seed: int | None = None,
        prefix_cache_tokens: int = 65536,
    ) -> None:
        model_path = Path(model_dir)
        if not (model_path / "config.json").exists():
            raise FileNotFoundError(f"{model_path}: not a model folder (no config.json)")
        self.model_dir = model_path
        self.device = device
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            str(model_path), dtype=resolve_dtype(dtype, device), local_files_only=True
        )
        if lora is not None:
            model = _with_lora(model, Path(lora))
        model.to(device)
        model.eval()
        self.eos_token_ids = _eos_token_ids(self.tokenizer, model)
        pad = self.tokenizer.pad_token_id
        self.pad_token_id = pad if pad is not None else min(self.eos_token_ids, default=0)
        # Our own sampler decides every token, so the checkpoint's sampling defaults must not apply.
        model.generation_config = GenerationConfig(pad_token_id=self.pad_token_id)
        self.model = model
        # Preallocated decode buffers and reused prompt states need plain full-attention layers.
        self._reserved_layers = supports_reserved_layers(model.config)
        self.prefix_cache = (
            PrefixCache(prefix_cache_tokens) if prefix_cache_tokens > 0 and self._reserved_layers else None
        )
        self.max_context = int(getattr(model.config, "max_position_embeddings", 0) or 0)
        self.vocab_size = int(model.get_input_embeddings().weight.shape[0])
        self.name = f"hf:{model_path}"
        self.checkpoint = str(model_path.resolve()) + (f"+lora:{Path(lora).resolve()}" if lora else "")
        self.max_batch_size = max_batch_size
        self.batch_wait_s = batch_wait_ms / 1000.0
        self.max_batch_wait_s = max(max_batch_wait_ms, batch_wait_ms) / 1000.0
        self.generate_calls = 0  # batched `generate` calls so far: batching is visible, not assumed
        self.batch_sizes: list[int] = []
        self._rng = random.Random(seed)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf-generate")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[_Pending] | None = None
        self._batcher: asyncio.Task[None] | None = None

    # -- async front: many episodes await this at once --------------------------------------------

    async def generate(self, request: GenerationRequest) -> Generation:
        if request.prompt_ids is None:
            raise PolicyError("HFPolicy is a token-mode policy: the request has no prompt_ids")
        self._check_prompt(request.prompt_ids)
        queue = self._ensure_batcher()
        future: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        queue.put_nowait(_Pending(request, future))
        return await future

    def _check_prompt(self, prompt_ids: list[int]) -> None:
        if not prompt_ids:
            raise PolicyError("empty prompt: nothing to continue from")
        bad = [i for i in prompt_ids if not 0 <= i < self.vocab_size]
        if bad:
            raise PolicyError(f"prompt token id {bad[0]} is outside the vocabulary (size {self.vocab_size})")
        if self.max_context and len(prompt_ids) >= self.max_context:
            raise PolicyError(f"prompt of {len(prompt_ids)} tokens does not fit the model context ({self.max_context})")

    def _ensure_batcher(self) -> asyncio.Queue[_Pending]:
        """One batching task per event loop (tests and CLIs may run several loops in turn)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._batcher is None or self._batcher.done() or self._queue is None:
            self._loop = loop
            self._queue = asyncio.Queue()
            self._batcher = loop.create_task(self._batch_loop(self._queue), name="hf-policy-batcher")
        return self._queue

    async def _collect(self, queue: asyncio.Queue[_Pending]) -> list[_Pending]:
        """The first request, then every one arriving within batch_wait of the previous (capped)."""
        loop = asyncio.get_running_loop()
        batch = [await queue.get()]
        hard_deadline = loop.time() + self.max_batch_wait_s
        while len(batch) < self.max_batch_size:
            while not queue.empty() and len(batch) < self.max_batch_size:
                batch.append(queue.get_nowait())
            remaining = min(self.batch_wait_s, hard_deadline - loop.time())
            if len(batch) >= self.max_batch_size or remaining <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(queue.get(), remaining))
            except TimeoutError:
                break
        return [p for p in batch if not p.future.done()]

    async def _batch_loop(self, queue: asyncio.Queue[_Pending]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._collect(queue)
            if not batch:
                continue
            try:
                results = await loop.run_in_executor(self._executor, self.generate_batch, [p.request for p in batch])
            except Exception as exc:
                error = PolicyError(f"generation failed for a batch of {len(batch)}: {type(exc).__name__}: {exc}")
                for pending in batch:
                    if not pending.future.done():
                        pending.future.set_exception(error)
                continue
            for pending, result in zip(batch, results, strict=True):
                if not pending.future.done():
                    pending.future.set_result(result)

    # -- sync back: one generate call for a whole batch --------------------------------------------

    def generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Run ONE `generate` for all requests and cut each row at its own stop.

        Prompts are encoded row by row first (`_prompt_states`: no padding, so attention runs the
        fused causal kernel instead of a padded mask over the whole batch), reusing cached prefix
        states. Each row is then laid out as [pad | prompt but its last token | last token] with
        the states in the cache, so `generate` itself only decodes. Position ids follow the
        attention mask, so every token keeps its true position.
        """
        prompts = [list(r.prompt_ids or []) for r in requests]
        for prompt in prompts:
            self._check_prompt(prompt)
        rows = [RowState(sampling=r.sampling, generator=row_generator(r.sampling, self._rng)) for r in requests]
        for row, prompt in zip(rows, prompts, strict=True):
            if self.max_context:
                room = self.max_context - len(prompt)
                if row.sampling.max_new_tokens > room:
                    row.sampling = replace(row.sampling, max_new_tokens=max(room, 1))
        matches = self._prompt_states(prompts) if self._reserved_layers else [(0, None)] * len(prompts)
        reused = [length for length, _ in matches]
        prefix_width = max(reused)
        rest_width = max(len(p) - n for p, n in zip(prompts, reused, strict=True))
        width = prefix_width + rest_width
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for index, (prompt, n) in enumerate(zip(prompts, reused, strict=True)):
            ids = torch.tensor(prompt, dtype=torch.long)
            input_ids[index, prefix_width - n : prefix_width] = ids[:n]
            attention_mask[index, prefix_width - n : prefix_width] = 1
            input_ids[index, width - (len(prompt) - n) :] = ids[n:]
            attention_mask[index, width - (len(prompt) - n) :] = 1
        budget = max(max(r.sampling.max_new_tokens, 1) for r in rows)
        cache = reserved_cache(self.model.config, width + budget + 1) if self._reserved_layers else None
        if cache is not None and prefix_width:
            self._fill_prefix_states(cache, matches, prefix_width)
        sampler = RowSampler(rows)
        stopper = RowStopper(rows, self.tokenizer, self.eos_token_ids)
        config = GenerationConfig(
            do_sample=False, max_new_tokens=budget, pad_token_id=self.pad_token_id, eos_token_id=None
        )
        with torch.inference_mode():
            self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention_mask.to(self.device),
                past_key_values=cache,
                generation_config=config,
                logits_processor=LogitsProcessorList([sampler]),
                stopping_criteria=StoppingCriteriaList([stopper]),
            )
        generations = [self._to_generation(row) for row in rows]
        if self.prefix_cache is not None and cache is not None:
            self._store_turn_states(cache, prompts, reused, generations, prefix_width, width)
        self.generate_calls += 1
        self.batch_sizes.append(len(requests))
        return generations

    def _prompt_states(self, prompts: list[list[int]]) -> list[tuple[int, PrefixEntry | None]]:
        """States of every prompt but its last token: the cached prefix plus the rest, computed one
        row at a time. Each row is stored before the next is looked up, so prompts of one batch that
        share a system prompt compute it once."""
        matches: list[tuple[int, PrefixEntry | None]] = []
        for prompt in prompts:
            reused, entry = self.prefix_cache.lookup(prompt, count=False) if self.prefix_cache else (0, None)
            target = len(prompt) - 1
            if (target - reused) * RECOMPUTE_RATIO > target:
                # A short reused prefix is not worth it: queries after a cached prefix need an explicit
                # mask (the slow attention path), a fresh prompt runs the fused causal kernel.
                reused, entry = 0, None
            elif self.prefix_cache is not None:
                self.prefix_cache.reused_tokens += reused
            if target > reused:
                entry = self._extend_states(prompt[:target], reused, entry)
                if self.prefix_cache is not None:
                    self.prefix_cache.store(prompt[:target], entry.states)
                reused = target
            matches.append((reused, entry))
        return matches

    def _extend_states(self, token_ids: list[int], reused: int, entry: PrefixEntry | None) -> PrefixEntry:
        """States of `token_ids`: the first `reused` from `entry`, the rest from one unpadded forward."""
        cache = reserved_cache(self.model.config, len(token_ids))
        if reused and entry is not None:
            for layer, (keys, values) in zip(cache.layers, entry.states, strict=True):
                layer.update(keys[None, :, :reused], values[None, :, :reused])
        rest = torch.tensor([token_ids[reused:]], dtype=torch.long, device=self.device)
        positions = torch.arange(reused, len(token_ids), device=self.device)[None]
        with torch.inference_mode():
            self.model(input_ids=rest, position_ids=positions, past_key_values=cache, use_cache=True, logits_to_keep=1)
        states = [(layer.keys[0].clone(), layer.values[0].clone()) for layer in cache.layers]
        return PrefixEntry(torch.tensor(token_ids, dtype=torch.long), states)

    def _fill_prefix_states(
        self, cache: DynamicCache, matches: list[tuple[int, PrefixEntry | None]], prefix_width: int
    ) -> None:
        """Write each row's reused prefix states, right-aligned, into the batch cache's first positions."""
        donor = next(entry for n, entry in matches if entry is not None and n)
        for layer_index, layer in enumerate(cache.layers):
            like_keys, like_values = donor.states[layer_index]
            shape = (len(matches), like_keys.shape[0], prefix_width, like_keys.shape[-1])
            keys = torch.zeros(shape, dtype=like_keys.dtype, device=like_keys.device)
            values = torch.zeros((*shape[:-1], like_values.shape[-1]), dtype=like_values.dtype,
                                 device=like_values.device)
            for row, (n, entry) in enumerate(matches):
                if entry is not None and n:
                    entry_keys, entry_values = entry.states[layer_index]
                    keys[row, :, prefix_width - n :] = entry_keys[:, :n]
                    values[row, :, prefix_width - n :] = entry_values[:, :n]
            layer.update(keys, values)

    def _store_turn_states(
        self, cache: DynamicCache, prompts: list[list[int]], reused: list[int], generations: list[Generation],
        prefix_width: int, width: int,
    ) -> None:
        """Keep each row's prompt + sampled ids (all but the last, whose states were never computed):
        the next turn of the episode starts with exactly these tokens."""
        assert self.prefix_cache is not None
        layers = [(layer.keys, layer.values) for layer in cache.layers]
        for row, (prompt, n, generation) in enumerate(zip(prompts, reused, generations, strict=True)):
            sampled = generation.completion_ids[:-1]
            spans = ((prefix_width - n, prefix_width), (width - (len(prompt) - n), width + len(sampled)))
            states = [
                (torch.cat([keys[row, :, a:b] for a, b in spans], dim=1).clone(),
                 torch.cat([values[row, :, a:b] for a, b in spans], dim=1).clone())
                for keys, values in layers
            ]
            self.prefix_cache.store(prompt + sampled, states)

    def _to_generation(self, row: RowState) -> Generation:
        """Ids up to and including the stop token; `text` keeps stop strings but not a final eos."""
        length = row.length if row.length is not None else len(row.token_ids)
        ids = row.token_ids[:length]
        finish = row.finish_reason or "length"
        text_ids = ids[:-1] if ids and ids[-1] in self.eos_token_ids else ids
        return Generation(
            text=self.tokenizer.decode(text_ids, skip_special_tokens=False),
            completion_ids=ids,
            logprobs=row.logprobs[:length],
            finish_reason="stop" if finish == "stop" else "length",
        )

    async def close(self) -> None:
        if self._batcher is not None and not self._batcher.done():
            self._batcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await self._batcher
        self._batcher = None
        self._executor.shutdown(wait=True)


def _eos_token_ids(tokenizer: Any, model: Any) -> set[int]:
    """Every id that ends a turn: the tokenizer's eos plus the checkpoint's generation eos ids."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif isinstance(configured, list | tuple):
        ids.update(int(i) for i in configured)
    return ids


def _with_lora(model: Any, adapter: Path) -> Any:
    """Load a peft adapter on the base and merge it, so serving costs no more than the base."""
    if not (adapter / "adapter_config.json").exists():
        raise FileNotFoundError(f"{adapter}: not a LoRA adapter folder (no adapter_config.json)")
    from peft import PeftModel

    return PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
