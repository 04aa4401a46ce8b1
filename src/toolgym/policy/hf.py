"""HFPolicy: an in-process transformers model that batches the pending turns of many episodes.

Episodes await `generate` concurrently; requests wait in a queue for a short window and then go
to the model together as ONE batch (`generate_batch`), run in a worker thread so the event loop
(env steps, other episodes, an HTTP server) stays live. Each row keeps its own sampling settings,
stop strings and budget (see `toolgym.policy.sampling`), and comes back as the exact sampled ids
with their log-probs; a request with a grammar is held to it (`toolgym.policy.grammar`). Prompt
states are kept in a prefix cache, so a shared system prompt or an episode's previous turns are not
computed again, and while decoding, rows that share a prompt prefix read its states once per step
(see `toolgym.policy.shared_prefix`). Tokens are sampled where the logits are and fed back from
there: a decode step copies only the chosen ids and log-probs to the host, once, and its key/value
buffers are reused from batch to batch (`toolgym.policy.decode_buffers`). `static_decode` (and
`compile_decode`) switch a policy to transformers' StaticCache with fixed shapes, for a compiled step
on CUDA (`toolgym.policy.static_decode`).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from llguidance import LLMatcher
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    LogitsProcessorList,
    StoppingCriteriaList,
)

from toolgym.policy.attention import layout_attention, layout_masks, plain_full_attention
from toolgym.policy.base import Generation, GenerationRequest, Policy, PolicyError
from toolgym.policy.cache_arg import cache_keyword
from toolgym.policy.decode_buffers import DecodeBuffers
from toolgym.policy.grammar import GrammarError, GrammarTokenizer
from toolgym.policy.prefill import PrefillRow, prefill
from toolgym.policy.prefix_cache import PrefixCache, PrefixEntry
from toolgym.policy.sampling import RowSampler, RowState, RowStopper, row_generator
from toolgym.policy.shared_prefix import (
    DecodeBatch,
    GroupedDecodeBatch,
    RowPrompt,
    new_decode_batch,
    plan_groups,
    worth_sharing,
)
from toolgym.policy.static_decode import StaticDecoder
from toolgym.policy.weights import weights_fingerprint

# Reuse cached prefix states only if the part left to compute is under 1/RECOMPUTE_RATIO of the prompt.
RECOMPUTE_RATIO = 4
# Rebuild a decode batch without its finished rows only if at least this many steps may follow.
MIN_STEPS_AFTER_COMPACTION = 4
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

    _expected_batch = 0  # size of the last batch collected (0: none yet); see `_collect`
    # Settings, set on a policy after it is built. static_decode: decode on transformers' StaticCache with the
    # model's own attention (fixed shapes, no shared-prefix reads, no compaction; see static_decode.py).
    # compile_decode (with static_decode): the step through torch.compile's CUDA graphs, one compilation per
    # cache shape. Neither changes what is sampled: the same ids and log-probs up to float rounding.
    static_decode = False
    compile_decode = False

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
        self._adopt(model, self.tokenizer, name=f"hf:{model_path}",
                    checkpoint=str(model_path.resolve()) + (f"+lora:{Path(lora).resolve()}" if lora else ""),
                    max_batch_size=max_batch_size, batch_wait_ms=batch_wait_ms, max_batch_wait_ms=max_batch_wait_ms,
                    seed=seed, prefix_cache_tokens=prefix_cache_tokens)
        self._keep_decode_buffers = True  # this policy owns its model: nothing else wants the buffers' memory
        self.weights = weights_fingerprint(model_path, lora)

    def _adopt(self, model: Any, tokenizer: Any, *, name: str, checkpoint: str | None, max_batch_size: int,
               batch_wait_ms: float, max_batch_wait_ms: float, seed: int | None, prefix_cache_tokens: int,
               thread_name: str = "hf-generate") -> None:
        """Everything after loading: shared by the folder constructor and policies over a live model."""
        self.tokenizer = tokenizer
        self.eos_token_ids = _eos_token_ids(tokenizer, model)
        pad = tokenizer.pad_token_id
        self.pad_token_id = pad if pad is not None else min(self.eos_token_ids, default=0)
        # Our own sampler decides every token, so the checkpoint's sampling defaults must not apply.
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        base.generation_config = GenerationConfig(pad_token_id=self.pad_token_id)
        self.model = model
        # Our decode and prefill layouts and reused prompt states need plain full-attention layers.
        self._plain_attention = plain_full_attention(model.config)
        self.prefix_cache = (
            PrefixCache(prefix_cache_tokens) if prefix_cache_tokens > 0 and self._plain_attention else None
        )
        self.max_context = int(getattr(model.config, "max_position_embeddings", 0) or 0)
        self.vocab_size = int(model.get_input_embeddings().weight.shape[0])
        self.name = name
        self.checkpoint = checkpoint
        self.max_batch_size = max_batch_size
        self.batch_wait_s = batch_wait_ms / 1000.0
        self.max_batch_wait_s = max(max_batch_wait_ms, batch_wait_ms) / 1000.0
        self.generate_calls = 0  # batches decoded so far (`generate_batch` calls): batching is visible, not assumed
        self.shared_prefix_groups = 0  # groups whose prompt prefix the last batch read once per step
        self.compactions = 0  # decode batches rebuilt without their finished rows
        self.batch_sizes: list[int] = []
        self._rng = random.Random(seed)
        # Decode buffers, reused by every batch (two: a compacted batch is filled from the one it replaces).
        # A policy over a live (training) model frees them after each batch: its trainer's update takes turns
        # with sampling for that memory. One that loaded its own model keeps them (see `__init__`).
        self._decode_buffers = (DecodeBuffers(), DecodeBuffers())
        self._buffers_lock = threading.Lock()
        self._keep_decode_buffers = False
        self._static_decoder: StaticDecoder | None = None
        self._grammar_tokenizer: GrammarTokenizer | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)
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

    @property
    def grammar_tokenizer(self) -> GrammarTokenizer:
        """The tokenizer as grammars see it, built on first use (only constrained requests need it)."""
        if self._grammar_tokenizer is None:
            self._grammar_tokenizer = GrammarTokenizer(self.tokenizer, self.vocab_size)
        return self._grammar_tokenizer

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
        """The first request, then every one arriving within batch_wait of the previous (capped).

        Once a batch has run, its size is what the callers' concurrency gives: while fewer requests
        than that are here the gap allowed between arrivals grows to max_batch_wait (episodes that just
        finished a turn take a few ms each to come back), and as soon as that many are here the batch
        goes without waiting (one episode at a time never waits at all)."""
        loop = asyncio.get_running_loop()
        batch = [await queue.get()]
        expected = min(self._expected_batch, self.max_batch_size)
        hard_deadline = loop.time() + (self.max_batch_wait_s if not expected else 5 * self.max_batch_wait_s)
        while len(batch) < self.max_batch_size:
            while not queue.empty() and len(batch) < self.max_batch_size:
                batch.append(queue.get_nowait())
            if expected and len(batch) >= expected:
                break
            gap = self.max_batch_wait_s if expected else self.batch_wait_s
            remaining = min(gap, hard_deadline - loop.time())
            if len(batch) >= self.max_batch_size or remaining <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(queue.get(), remaining))
            except TimeoutError:
                break
        self._expected_batch = len(batch)
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

    # -- sync back: one decode loop for a whole batch --------------------------------------------

    def generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Decode all requests together and cut each row at its own stop.

        Prompts are encoded row by row first (`_prompt_states`: no padding, so attention runs the
        fused causal kernel), reusing cached prefix states. Plain full-attention models then decode
        in our own loop over a `DecodeBatch`, where rows that share a prompt prefix (an app's system
        prompt) read its states once per step; other models go through one padded `generate`.
        """
        prompts = [list(r.prompt_ids or []) for r in requests]
        for prompt in prompts:
            self._check_prompt(prompt)
        rows = [RowState(sampling=r.sampling, generator=row_generator(r.sampling, self._rng),
                         matcher=self._matcher(r.grammar)) for r in requests]
        for row, prompt in zip(rows, prompts, strict=True):
            if self.max_context:
                room = self.max_context - len(prompt)
                if row.sampling.max_new_tokens > room:
                    row.sampling = replace(row.sampling, max_new_tokens=max(room, 1))
        if self._plain_attention:
            generations = self._decode(prompts, rows)
        else:
            generations = self._generate_padded(prompts, rows)
        self.generate_calls += 1
        self.batch_sizes.append(len(requests))
        return generations

    def _matcher(self, grammar: str | None) -> LLMatcher | None:
        """A row's matcher for its request's grammar (None: the row samples freely)."""
        if grammar is None:
            return None
        try:
            return self.grammar_tokenizer.matcher(grammar)
        except GrammarError as exc:
            raise PolicyError(f"the request's grammar does not compile: {exc}") from exc

    def _decode(self, prompts: list[list[int]], rows: list[RowState]) -> list[Generation]:
        """Decode with the buffers (or static cache) this policy keeps; fresh ones while another thread holds them."""
        keep = self._buffers_lock.acquire(blocking=False)
        try:
            row_prompts = self._row_prompts(prompts)
            budget = max(max(r.sampling.max_new_tokens, 1) for r in rows)
            if self.static_decode:
                fresh = not keep or self._static_decoder is None or \
                    self._static_decoder.compile_step != self.compile_decode
                decoder = StaticDecoder(self.model, compile_step=self.compile_decode) if fresh else self._static_decoder
                if keep:
                    self._static_decoder = decoder
                return self._decode_static(prompts, rows, row_prompts, budget, decoder)
            buffers = self._decode_buffers if keep else (DecodeBuffers(), DecodeBuffers())
            return self._decode_layouts(prompts, rows, row_prompts, budget, buffers)
        finally:
            if keep:
                if not self._keep_decode_buffers:
                    for pool in self._decode_buffers:
                        pool.release()
                    if self._static_decoder is not None:
                        self._static_decoder.release()
                self._buffers_lock.release()

    def _decode_layouts(self, prompts: list[list[int]], rows: list[RowState], row_prompts: list[RowPrompt],
                        budget: int, buffers: tuple[DecodeBuffers, DecodeBuffers]) -> list[Generation]:
        """One forward per step for the running rows; each row feeds back the token its sampler chose.

        The chosen ids stay on the device and are fed back from there; the one host copy a step makes
        (ids and log-probs, in `RowSampler.step`) is all the stop checks and the loop's decisions read.
        Rows finish at different steps, and a finished row left in the batch costs as much as a running
        one. So once at most half of a batch's rows still run (and enough budget is left to pay for it),
        the batch is rebuilt from the running rows' states (`_compact`, into the other of the two
        `buffers`): their prompt is now the original prompt plus what they sampled, and the finished
        rows' states go to the prefix cache. A finished row left in the batch keeps decoding what its
        sampler draws; its output was already cut."""
        members = list(range(len(rows)))  # the rows (indexes into `rows`) of the current batch, in batch order
        batch = self._decode_batch(row_prompts, budget, buffers[0])
        self.shared_prefix_groups = len(batch.groups) if isinstance(batch, GroupedDecodeBatch) else 0
        input_ids = torch.tensor([[p[-1]] for p in prompts], dtype=torch.long, device=self.device)
        positions = torch.tensor([[len(p) - 1] for p in prompts], dtype=torch.long, device=self.device)
        sampler, stopper = RowSampler(rows), RowStopper(rows, self.tokenizer, self.eos_token_ids)
        masks = layout_masks(self.model, batch)
        keyword = cache_keyword(self.model)  # looked up once, not every decode step
        with torch.inference_mode(), layout_attention(self.model):
            for step in range(budget):
                logits = self.model(input_ids=input_ids, position_ids=positions, attention_mask=masks,
                                    use_cache=True, **{keyword: batch}).logits[:, -1]
                batch.advance()
                chosen = sampler.step(logits)  # appends each running row's token (and log-prob) to its RowState
                done = stopper.update()
                if all(done):
                    break
                input_ids, positions = chosen.unsqueeze(-1), positions + 1
                running = [slot for slot, finished in enumerate(done) if not finished]
                left = budget - step - 1
                if len(running) * 2 <= len(members) and left >= MIN_STEPS_AFTER_COMPACTION:
                    buffers = (buffers[1], buffers[0])  # the new batch is built while the old one is read
                    batch, members, positions = self._compact(batch, members, running, prompts, rows, left, buffers[0])
                    sampler = RowSampler([rows[i] for i in members])
                    stopper = RowStopper([rows[i] for i in members], self.tokenizer, self.eos_token_ids)
                    masks = layout_masks(self.model, batch)
                    input_ids = input_ids[torch.tensor(running, dtype=torch.long, device=input_ids.device)]
                    self.compactions += 1
        generations = [self._to_generation(row) for row in rows]
        for slot, index in enumerate(members):
            self._store_row(batch, slot, prompts[index], generations[index].completion_ids)
        return generations

    def _row_prompts(self, prompts: list[list[int]]) -> list[RowPrompt]:
        """Each prompt with the states of all its tokens but the last (from the prefix cache or a prefill)."""
        row_prompts = []
        for prompt, (_, entry) in zip(prompts, self._prompt_states(prompts), strict=True):
            if entry is None:  # a one-token prompt: nothing before the token that is decoded
                states = self._no_states()
            else:
                states = [(keys[:, : len(prompt) - 1], values[:, : len(prompt) - 1]) for keys, values in entry.states]
            row_prompts.append(RowPrompt(prompt, states))
        return row_prompts

    def _decode_static(self, prompts: list[list[int]], rows: list[RowState], row_prompts: list[RowPrompt],
                       budget: int, decoder: StaticDecoder) -> list[Generation]:
        """The decode loop on transformers' StaticCache (`toolgym.policy.static_decode`): fixed shapes, optionally
        a compiled step; rows past the batch pad it to the cache's row count and are never read."""
        sampler, stopper = RowSampler(rows), RowStopper(rows, self.tokenizer, self.eos_token_ids)
        self.shared_prefix_groups = 0
        # inputs made inside inference mode too: a compiled step sees the same kind of tensor every call
        with torch.inference_mode():
            padding = decoder.start_batch(row_prompts, budget) - len(rows)
            input_ids = torch.tensor([[p[-1]] for p in prompts] + [[self.pad_token_id]] * padding, dtype=torch.long,
                                     device=self.device)
            positions = torch.tensor([[len(p) - 1] for p in prompts] + [[0]] * padding, dtype=torch.long,
                                     device=self.device)
            for _ in range(budget):
                logits = decoder.step(input_ids, positions)
                chosen = sampler.step(logits[: len(rows)])
                if all(stopper.update()):
                    break
                input_ids = torch.cat([chosen.unsqueeze(-1), input_ids[len(rows) :]])
                positions = positions + 1
        generations = [self._to_generation(row) for row in rows]
        if self.prefix_cache is not None:
            for slot, (prompt, generation) in enumerate(zip(prompts, generations, strict=True)):
                sampled = generation.completion_ids[:-1]
                self.prefix_cache.store(prompt + sampled, decoder.row_states(slot, len(prompt) + len(sampled)))
        return generations

    def _decode_batch(self, row_prompts: list[RowPrompt], budget: int, buffers: DecodeBuffers) -> DecodeBatch:
        """Grouped by shared prompt prefix where that reads fewer states per step, else one padded row each."""
        groups = plan_groups([r.token_ids for r in row_prompts])
        shared = worth_sharing(groups, [len(r.token_ids) for r in row_prompts])
        return new_decode_batch(row_prompts, groups if shared else None, budget, buffers)

    def _store_row(self, batch: DecodeBatch, slot: int, prompt: list[int], completion_ids: list[int]) -> None:
        """Keep a finished row's states (its prompt and what it sampled, but the last token) for the next turn."""
        if self.prefix_cache is not None:
            sampled = completion_ids[:-1]
            self.prefix_cache.store(prompt + sampled, batch.row_states(slot, len(prompt) + len(sampled)))

    def _compact(self, batch: DecodeBatch, members: list[int], running: list[int], prompts: list[list[int]],
                 rows: list[RowState], budget: int,
                 buffers: DecodeBuffers) -> tuple[DecodeBatch, list[int], torch.Tensor]:
        """A new batch of the running rows only (`running`: their slots in `batch`), for `budget` more steps,
        in `buffers` (not the ones `batch` holds: its states are read while the new batch is filled)."""
        for slot, index in enumerate(members):
            row = rows[index]
            if row.length is not None:  # finished: its kept tokens are final
                self._store_row(batch, slot, prompts[index], row.token_ids[: row.length])
        row_prompts = []
        for slot in running:
            index = members[slot]
            fed = prompts[index] + rows[index].token_ids  # the last sampled token is fed at the next step
            row_prompts.append(RowPrompt(fed, batch.row_states(slot, len(fed) - 1, copy=False)))
        # the position of the token each row is fed next: its last sampled one
        positions = torch.tensor([[len(r.token_ids) - 1] for r in row_prompts], dtype=torch.long, device=self.device)
        return self._decode_batch(row_prompts, budget, buffers), [members[slot] for slot in running], positions

    def _no_states(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Zero-token states shaped like the model's (for a prompt that is one token long)."""
        config = self.model.config
        heads = int(getattr(config, "num_key_value_heads", None) or config.num_attention_heads)
        dim = int(getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)
        weight = self.model.get_input_embeddings().weight
        empty = torch.zeros((heads, 0, dim), dtype=weight.dtype, device=weight.device)
        return [(empty, empty) for _ in range(config.num_hidden_layers)]

    def _generate_padded(self, prompts: list[list[int]], rows: list[RowState]) -> list[Generation]:
        """Models whose layers our caches do not cover (sliding windows, hybrids): one left-padded `generate`."""
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for index, prompt in enumerate(prompts):
            input_ids[index, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            attention_mask[index, width - len(prompt) :] = 1
        budget = max(max(r.sampling.max_new_tokens, 1) for r in rows)
        config = GenerationConfig(
            do_sample=False, max_new_tokens=budget, pad_token_id=self.pad_token_id, eos_token_id=None
        )
        with torch.inference_mode():
            self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention_mask.to(self.device),
                generation_config=config,
                logits_processor=LogitsProcessorList([RowSampler(rows)]),
                stopping_criteria=StoppingCriteriaList([RowStopper(rows, self.tokenizer, self.eos_token_ids)]),
            )
        return [self._to_generation(row) for row in rows]

    def _prompt_states(self, prompts: list[list[int]]) -> list[tuple[int, PrefixEntry | None]]:
        """States of every prompt but its last token: the cached prefix plus the rest, in two forwards.

        Prompts with nothing usable cached are grouped by shared prefix (an app's system prompt) and
        one prompt of each group is computed first and stored; then every other prompt looks the cache
        up again, and all their rests, each after its own cached prefix, are computed in one packed
        forward (`toolgym.policy.prefill`)."""
        matches: list[tuple[int, PrefixEntry | None]] = [(0, None)] * len(prompts)
        rows: dict[int, PrefillRow] = {}  # prompts that still need states -> what to compute
        fresh: list[int] = []
        for index, prompt in enumerate(prompts):
            row = self._reuse(prompt)
            if not row.token_ids:  # a one-token prompt: no states before the token that is decoded
                continue
            if row.reused == len(row.token_ids):
                matches[index] = (row.reused, _entry(row))
            elif row.reused:
                rows[index] = row
            else:
                fresh.append(index)
        leaders = {fresh[group.rows[0]] for group in plan_groups([prompts[i] for i in fresh])}
        self._compute({i: PrefillRow(prompts[i][:-1]) for i in sorted(leaders)}, matches)
        for index in fresh:
            if index not in leaders:
                row = self._reuse(prompts[index])
                if row.reused == len(row.token_ids):  # the same prompt as its group's first
                    matches[index] = (row.reused, _entry(row))
                else:
                    rows[index] = row
        self._compute(rows, matches)
        return matches

    def _compute(self, rows: dict[int, PrefillRow], matches: list[tuple[int, PrefixEntry | None]]) -> None:
        """Prefill `rows` (prompt index -> what to compute), keep their states, and record them in `matches`."""
        for index, entry in zip(rows, prefill(self.model, list(rows.values())), strict=True):
            if self.prefix_cache is not None:
                self.prefix_cache.store(entry.token_ids, entry.states)
            matches[index] = (entry.length, entry)

    def _reuse(self, prompt: list[int]) -> PrefillRow:
        """What computing this prompt's states (all but its last token) needs, given the prefix cache."""
        target = prompt[:-1]
        reused, entry = self.prefix_cache.lookup(prompt, count=False) if self.prefix_cache else (0, None)
        if entry is None or (len(target) - reused) * RECOMPUTE_RATIO > len(target):
            # Reusing a short prefix saves little: one more row in the packed forward costs the same.
            return PrefillRow(target)
        if self.prefix_cache is not None:
            self.prefix_cache.reused_tokens += reused
        return PrefillRow(target, reused, entry.states)

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


def _entry(row: PrefillRow) -> PrefixEntry:
    """A row whose states are all cached already."""
    assert row.cached is not None
    return PrefixEntry(torch.tensor(row.token_ids, dtype=torch.long), row.cached)


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
