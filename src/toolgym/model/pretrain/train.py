"""The CPU pre-training loop: packed rows, loss on assistant tokens, logits only where supervised.

Two exact speed-ups: the LM head runs only at supervised positions (most positions are prompt or
tool output), and matmuls run under bf16 autocast (AMX/AVX-512 CPUs do bf16 at several times the
fp32 rate; master weights stay fp32). Determinism: one seed fixes the init, the corpus order and
so every loss value on one machine type.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from toolgym.chat.render import Renderer
from toolgym.cpu_time import cpu_seconds, cpu_since
from toolgym.model.pretrain.corpus import generate_episode
from toolgym.model.pretrain.data import episode_stream, pack_batch, padded_batch
from toolgym.model.pretrain.render import TokenizedEpisode, tokenize_episode
from toolgym.model.pretrain.settings import TrainConfig as TrainConfig  # re-exported: defined torch-free
from toolgym.model.tiny import SPECIAL_TOKENS, TAG_TOKENS

EVAL_SEED_OFFSET = 1_000_003  # held-out corpus samples come from a different seed stream


# Measured with the shipped recipe, 1 thread, steps 0-2.
EMULATED_BF16_COST = "a step of the shipped recipe took 80 s in bf16 against 5.7 s in fp32 (2-core AVX2 EPYC)"


def fast_bf16() -> bool:
    """Whether oneDNN runs bf16 natively here (AVX-512/AMX); without it the recipe's bf16 is emulated."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without the op: assume the common case
        return True


@dataclass
class StepRecord:
    step: int
    loss: float
    lr: float
    tokens: int
    supervised: int
    cpu_s: float
    wall_s: float


def random_copy_batch(step: int, seed: int, rows: int, length: int, vocab_low: int, vocab_high: int
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of random tokens whose second half repeats the first; targets on the repeat (after its first token)."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + step)
    half = length // 2
    first = torch.randint(vocab_low, vocab_high, (rows, half), generator=generator)
    ids = torch.cat([first, first], dim=1)
    targets = torch.full((rows, 2 * half), -100, dtype=torch.long)
    targets[:, half : 2 * half - 1] = ids[:, half + 1 :]
    return ids, targets


def chunk_copy_batch(step: int, seed: int, rows: int, length: int, vocab_low: int, vocab_high: int,
                     chunk: tuple[int, int] = (4, 24), copy_share: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of random chunks, about `copy_share` of them copies of an earlier stretch at a random distance.

    Targets are the copied tokens after a copy's first one: only finding the earlier occurrence of the
    current token (content, not position) predicts them, which is the induction circuit tool use needs.
    """
    generator = torch.Generator().manual_seed(seed * 1_000_003 + step)

    def draw(low: int, high: int) -> int:
        return int(torch.randint(low, high + 1, (1,), generator=generator))

    ids = torch.empty((rows, length), dtype=torch.long)
    targets = torch.full((rows, length), -100, dtype=torch.long)
    for row in range(rows):
        tokens: list[int] = []
        copied: list[bool] = []
        while len(tokens) < length:
            size = draw(*chunk)
            if len(tokens) >= 2 * chunk[1] and float(torch.rand((1,), generator=generator)) < copy_share:
                start = draw(0, len(tokens) - size)
                tokens.extend(tokens[start : start + size])
                copied.extend([False] + [True] * (size - 1))
            else:
                tokens.extend(torch.randint(vocab_low, vocab_high, (size,), generator=generator).tolist())
                copied.extend([False] * size)
        ids[row] = torch.tensor(tokens[:length])
        mask = torch.tensor(copied[:length])
        # position p - 1 predicts token p
        targets[row, :-1] = torch.where(mask[1:], ids[row, 1:], torch.tensor(-100))
    return ids, targets


def supervised_loss(model: Any, input_ids: torch.Tensor, targets: torch.Tensor,
                    weights: torch.Tensor | None = None) -> torch.Tensor:
    """(Weighted) mean cross-entropy over supervised positions; the LM head runs only there."""
    hidden = model.model(input_ids=input_ids).last_hidden_state
    positions = targets != -100
    logits = model.lm_head(hidden[positions])
    if weights is None:
        return F.cross_entropy(logits.float(), targets[positions])
    w = weights[positions]
    return (F.cross_entropy(logits.float(), targets[positions], reduction="none") * w).sum() / w.sum()


@torch.no_grad()
def evaluate_skills(model: Any, episodes: list[TokenizedEpisode], pad_id: int, bf16: bool, batch: int = 16
                    ) -> dict[str, Any]:
    """Teacher-forced accuracy on held-out episodes: per skill, the first token and the whole value.

    `first`: the value's first token is the argmax (the step that stalled before pre-training);
    `exact`: every token of the value is the argmax (what greedy decoding needs);
    `rest`: token accuracy on the value's later tokens (each follows its predecessor, as in the source).
    """
    model.eval()
    first: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    exact: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    rest: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    loss_sum, loss_count, token_correct = 0.0, 0, 0
    order = sorted(range(len(episodes)), key=lambda i: len(episodes[i].input_ids))
    for at in range(0, len(order), batch):
        group = [episodes[i] for i in order[at : at + batch]]
        ids, _ = padded_batch(group, pad_id)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(input_ids=ids).logits.float()
        predicted = logits.argmax(-1)
        for row, episode in enumerate(group):
            n = len(episode.input_ids)
            target = torch.tensor(episode.input_ids[1:n])
            mask = torch.tensor(episode.loss_mask[1:n], dtype=torch.bool)
            row_logits = logits[row, : n - 1]
            loss_sum += float(F.cross_entropy(row_logits[mask], target[mask], reduction="sum"))
            loss_count += int(mask.sum())
            hits = predicted[row, : n - 1] == target
            token_correct += int(hits[mask].sum())
            for span in episode.spans:
                # the token at position p is predicted at position p - 1
                ok_first = bool(hits[span.start - 1])
                ok_all = bool(hits[span.start - 1 : span.end - 1].all())
                first[span.skill][0] += ok_first
                first[span.skill][1] += 1
                exact[span.skill][0] += ok_all
                exact[span.skill][1] += 1
                if span.end - span.start > 1:  # tokens after the first: a plain induction copy
                    rest[span.skill][0] += int(hits[span.start : span.end - 1].sum())
                    rest[span.skill][1] += span.end - span.start - 1
    model.train()
    return {
        "loss": loss_sum / max(1, loss_count),
        "token_accuracy": token_correct / max(1, loss_count),
        "first": {k: v[0] / v[1] for k, v in sorted(first.items())},
        "exact": {k: v[0] / v[1] for k, v in sorted(exact.items())},
        "rest": {k: v[0] / v[1] for k, v in sorted(rest.items())},
        "counts": {k: v[1] for k, v in sorted(first.items())},
    }


def eval_episodes(seed: int, renderer: Renderer, count: int, max_len: int) -> list[TokenizedEpisode]:
    episodes: list[TokenizedEpisode] = []
    index = 0
    while len(episodes) < count:
        episode = tokenize_episode(generate_episode(seed + EVAL_SEED_OFFSET, index), renderer)
        index += 1
        if len(episode.input_ids) <= max_len:
            episodes.append(episode)
    return episodes


@contextmanager
def pinned_threads(threads: int) -> Iterator[None]:
    """torch's intra-op threads for a block: the planted init's matrix products round differently on another
    thread count, so a recipe's `threads` must hold from the first weight on, not only in the training loop."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train(model: Any, renderer: Renderer, config: TrainConfig,
          on_step: Callable[[StepRecord], None] | None = None,
          on_eval: Callable[[int, float, dict[str, Any]], None] | None = None,
          eval_set: list[TokenizedEpisode] | None = None, max_steps: int | None = None,
          snapshot: Callable[[int, Any], None] | None = None, snapshot_every: int = 0) -> list[StepRecord]:
    """Train in place for `config.steps` steps (or only the first `max_steps`); one record per step.

    `max_steps` stops early without changing the schedule: `verify-default` replays a prefix.
    """
    torch.set_num_threads(config.threads)
    tokenizer = renderer.tokenizer
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    separator_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    first_plain_id = len(SPECIAL_TOKENS) + len(TAG_TOKENS)  # tiny.py puts these first; copy ordinary tokens only
    stream = episode_stream(config.seed, renderer, 0, config.seq_len - 1, config.skill_weights or None,
                            config.curriculum_episodes)
    carry: list[tuple[int, TokenizedEpisode]] = []
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        (no_decay if parameter.ndim < 2 or "norm" in name else decay).append(parameter)
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr, betas=(config.beta1, config.beta2), eps=1e-8,
    )
    model.train()
    records: list[StepRecord] = []
    cpu_start, wall_start = cpu_seconds(), time.perf_counter()
    eval_cpu = 0.0
    last_eval = 0.0
    for step in range(config.steps if max_steps is None else min(max_steps, config.steps)):
        lr = config.lr_at(step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        if step < config.copy_steps:
            ids, targets = random_copy_batch(step, config.seed, config.copy_rows, config.copy_len,
                                             first_plain_id, len(tokenizer))
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
                loss = supervised_loss(model, ids, targets)
            tokens, supervised = ids.numel(), int((targets != -100).sum())
        else:
            batch = pack_batch(stream, config.rows, config.seq_len, pad_id, separator_id, carry, config.context_weight)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
                loss = supervised_loss(model, batch.input_ids, batch.targets,
                                       batch.weights if config.context_weight else None)
            tokens, supervised = batch.input_ids.numel(), batch.supervised_tokens
            if config.copy_mix_rows:
                ids, targets = random_copy_batch(step, config.seed, config.copy_mix_rows, config.copy_mix_len,
                                                 first_plain_id, len(tokenizer))
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
                    loss = loss + supervised_loss(model, ids, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        record = StepRecord(step, float(loss.detach()), lr, tokens, supervised,
                            cpu_since(cpu_start) - eval_cpu, time.perf_counter() - wall_start)
        records.append(record)
        if on_step:
            on_step(record)
        if snapshot is not None and snapshot_every and (step + 1) % snapshot_every == 0:
            snapshot(step + 1, model)
        if eval_set is not None and on_eval is not None and (
            record.cpu_s - last_eval >= config.eval_every_s or step == config.steps - 1 or step == 0
        ):
            before = cpu_seconds()
            result = evaluate_skills(model, eval_set, pad_id, config.bf16)
            eval_cpu += cpu_since(before)
            last_eval = record.cpu_s
            on_eval(step, record.cpu_s, result)
    return records

