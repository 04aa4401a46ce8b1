"""Benchmark: SFT forward+backward throughput with the shared system-prompt prefix computed once per
micro-batch, against the plain forward, on the same oracle trajectories, micro-batches and model.

    python bench/sft_step.py [--apps code_host forum mail] [--steps 6] [--batch-tokens 8192] [--threads 1]

Oracle episodes of a few apps, rendered with the tiny model's compact prompt (most of an episode's
tokens are its app's system prompt). Three configurations, in one process, each timed over the same
number of micro-batches after one warm-up, in process CPU seconds (the machine may be shared): (a) batches bucketed by length only, plain forward (the
old path); (b) bucketed by system prompt then length, plain forward; (c) as (b) with the prefix run
once. Prints tokens/s of each and the ratios c/a and c/b; the losses must agree (c and b see the same rows).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import torch

from toolgym.chat.render import Renderer, load_prompt_style
from toolgym.data.convert import convert_run
from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs import get_app
from toolgym.model.tiny import init_tiny
from toolgym.policy.spec import make_policy
from toolgym.rollout.runner import run_rollout
from toolgym.schema import TrainingSample
from toolgym.train import loss as loss_module
from toolgym.train.batching import collate, micro_batches, prefix_keys
from toolgym.train.sft_data import load_examples


def oracle_samples(apps: list[str], per_family: int, model_dir: Path, work: Path) -> list[TrainingSample]:
    """Training samples of oracle episodes over `apps`, rendered for the model in `model_dir`."""
    from transformers import AutoTokenizer

    config = BuildConfig(apps=apps, tasks_per_family=per_family, heldout_envs=[], compositions=[])
    tasks = [task for app in apps for task in generate_app_tasks(get_app(app), config)]
    renderer = Renderer(AutoTokenizer.from_pretrained(model_dir), prompt_style=load_prompt_style(model_dir))
    policy = make_policy("oracle", prompt_style=renderer.prompt_style)
    asyncio.run(run_rollout(tasks, policy, out_dir=work / "oracle", concurrency=16, renderer=renderer))
    convert_run(work / "oracle", work / "sft.jsonl")
    examples, _ = load_examples(work / "sft.jsonl", renderer)
    return [sample for example in examples for sample in example.samples]


def time_batches(model: torch.nn.Module, samples: list[TrainingSample], batches: list[list[int]],
                 shared_prefix: bool) -> tuple[float, float, int]:
    """(seconds, summed loss, tokens) of forward+backward over `batches` (the first is warm-up)."""
    original = loss_module.MIN_SHARED_PREFIX
    loss_module.MIN_SHARED_PREFIX = original if shared_prefix else 10**9
    seconds, total_loss, tokens = 0.0, 0.0, 0
    try:
        for position, indices in enumerate(batches):
            batch = collate([samples[i] for i in indices], pad_id=0)
            started = time.process_time()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                nll = loss_module.nll_sum(model, batch)
            nll.backward()
            model.zero_grad(set_to_none=True)
            if position:  # the first batch warms up allocators and kernels
                seconds += time.process_time() - started
                total_loss += float(nll.detach())
                tokens += batch.tokens
    finally:
        loss_module.MIN_SHARED_PREFIX = original
    return seconds, total_loss, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", nargs="+", default=["code_host", "forum", "mail"])
    parser.add_argument("--per-family", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6, help="micro-batches timed per configuration")
    parser.add_argument("--batch-tokens", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model-dir", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from transformers import AutoModelForCausalLM

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir = args.model_dir or init_tiny(work / "model", hidden_size=256, layers=4)
        samples = oracle_samples(args.apps, args.per_family, model_dir, work)
        model = AutoModelForCausalLM.from_pretrained(model_dir)
        model.train()
    lengths = [len(s.input_ids) for s in samples]
    keys = prefix_keys(samples)
    order = list(range(len(samples)))
    by_length = micro_batches(lengths, order, args.batch_tokens)
    by_prefix = micro_batches(lengths, order, args.batch_tokens, keys=keys)
    count = args.steps + 1
    print(f"{len(samples)} samples from {len(set(keys))} system prompts, median {statistics.median(lengths):.0f} "
          f"tokens; shared prefix of the first keyed batches: "
          f"{[loss_module.shared_prefix_length(*_ids_mask(samples, b)) for b in by_prefix[:4]]}")
    configurations = {
        "length buckets, plain forward": (by_length, False),
        "prefix buckets, plain forward": (by_prefix, False),
        "prefix buckets, prefix once": (by_prefix, True),
    }
    rows = {name: (0.0, 0.0, 0) for name in configurations}
    for round_start in range(0, count, 2):  # interleaved rounds: a change in machine load hits all three
        for name, (batches, shared) in configurations.items():
            part = batches[:1] + batches[1 + round_start : 1 + min(round_start + 2, args.steps)]
            seconds, total, tokens = time_batches(model, samples, part, shared_prefix=shared)
            before = rows[name]
            rows[name] = (before[0] + seconds, before[1] + total, before[2] + tokens)
    rates = {}
    for name, (seconds, total, tokens) in rows.items():
        rates[name] = tokens / seconds
        print(f"{name:32s} {tokens:7d} tokens in {seconds:6.2f} CPU-s = {rates[name]:8.0f} tokens/CPU-s (loss sum {total:.3f})")
    plain, shared = rows["prefix buckets, plain forward"], rows["prefix buckets, prefix once"]
    print(f"loss agreement (same batches): {abs(plain[1] - shared[1]) / max(abs(plain[1]), 1e-9):.2e} relative")
    base = rates["length buckets, plain forward"]
    print(f"ratio prefix-once / old path: {rates['prefix buckets, prefix once'] / base:.2f}x; "
          f"/ same batches plain: {rates['prefix buckets, prefix once'] / rates['prefix buckets, plain forward']:.2f}x")


def _ids_mask(samples: list[TrainingSample], indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    batch = collate([samples[i] for i in indices], pad_id=0)
    return batch.input_ids, batch.attention_mask


if __name__ == "__main__":
    main()
