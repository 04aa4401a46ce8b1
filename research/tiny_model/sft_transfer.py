"""Transfer check: SFT a model on oracle trajectories of app task families, measure greedy success.

A small torch loop (the real SFT trainer comes later): one episode per row, loss on assistant
tokens only (masks from `toolgym.train.sft_data`), LM head only at supervised positions, bf16
autocast, AdamW. Every `--eval-every` CPU-seconds of *training* the model is saved and run greedily
on held-out tasks through the real episode loop (`run_episode` + `HFPolicy`); eval CPU is not
counted in the training budget.

nice -n 19 python research/tiny_model/sft_transfer.py NAME --model DIR [--random-init] \
    --families code_host/comment_on_issue,... --budget 1800 --eval-every 450
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RUNS, log_jsonl  # noqa: E402

from toolgym.agent.episode import run_episode  # noqa: E402
from toolgym.agent.render import Renderer  # noqa: E402
from toolgym.dataset.build import BuildConfig, generate_app_tasks  # noqa: E402
from toolgym.envs import get_app, make_env  # noqa: E402
from toolgym.model.pretrain.train import cpu_seconds  # noqa: E402
from toolgym.policy.base import SamplingParams  # noqa: E402
from toolgym.policy.hf import HFPolicy  # noqa: E402
from toolgym.schema import Message, Task, ToolCall  # noqa: E402
from toolgym.train.sft_data import messages_to_samples  # noqa: E402


def load_tasks(families: list[str], per_family: int, seed: int) -> tuple[list[Task], list[Task]]:
    by_app: dict[str, set[str]] = defaultdict(set)
    for f in families:
        app, family = f.split("/")
        by_app[app].add(family)
    train, heldout = [], []
    for app_name, wanted in by_app.items():
        tasks = generate_app_tasks(get_app(app_name), BuildConfig(seed=seed, tasks_per_family=per_family))
        for t in tasks:
            if t.family in wanted or "*" in wanted:
                (train if t.split == "train" else heldout).append(t)
    return train, heldout


def oracle_messages(task: Task, renderer: Renderer) -> list[dict]:
    app = get_app(task.env)
    env = make_env(task.env)
    env.reset(task.env_variables)
    specs = env.tool_specs("agent")
    messages = renderer.initial_messages(task, specs, env.policy)
    for i, call in enumerate(task.reference_solution):
        call_id = f"call_{i}"
        messages.append(Message(role="assistant", content="", tool_calls=[ToolCall(name=call.name, arguments=call.arguments, id=call_id)]))
        result = env.call_tool(call.name, call.arguments)
        messages.append(Message(role="tool", content=result.content, tool_call_id=call_id, name=call.name))
    messages.append(Message(role="assistant", content=task.expected_answer or "Done."))
    env.close()
    del app
    return [m.to_openai() for m in messages]


def build_samples(tasks: list[Task], tokenizer, renderer: Renderer) -> list[tuple[list[int], list[int]]]:
    out = []
    for t in tasks:
        for s in messages_to_samples(tokenizer, oracle_messages(t, renderer), None):
            out.append((s.input_ids, s.loss_mask))
    return out


def batch_tensors(group: list[tuple[list[int], list[int]]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(ids) for ids, _ in group)
    ids = torch.full((len(group), width), pad_id, dtype=torch.long)
    targets = torch.full((len(group), width), -100, dtype=torch.long)
    for row, (seq, mask) in enumerate(group):
        n = len(seq)
        t = torch.tensor(seq)
        m = torch.tensor(mask, dtype=torch.bool)
        ids[row, :n] = t
        targets[row, : n - 1] = torch.where(m[1:], t[1:], torch.tensor(-100))
    return ids, targets


async def evaluate(model_dir: Path, tasks: list[Task], max_tokens: int) -> list[dict]:
    policy = HFPolicy(model_dir, dtype="float32", max_batch_size=32, batch_wait_ms=50)
    sampling = SamplingParams(temperature=0.0, max_new_tokens=max_tokens)

    async def one(task: Task) -> dict:
        env = make_env(task.env)
        episode = await run_episode(task, env, policy, sampling, max_turns=8, timeout_s=1800.0)
        env.close()
        calls = [c.name for m in episode.messages if m.tool_calls for c in m.tool_calls]
        return {"task": task.id, "family": task.family, "reward": episode.reward, "partial": episode.partial_score,
                "status": episode.status, "stop": episode.stop_reason, "calls": calls,
                "answer": (episode.final_answer or "")[:200], "error": episode.error}

    results = await asyncio.gather(*(one(t) for t in tasks))
    await policy.close()
    return list(results)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("name")
    p.add_argument("--model", required=True)
    p.add_argument("--random-init", action="store_true")
    p.add_argument("--families", required=True)
    p.add_argument("--per-family", type=int, default=120)
    p.add_argument("--task-seed", type=int, default=7)
    p.add_argument("--budget", type=float, default=1800.0, help="training CPU-seconds")
    p.add_argument("--eval-every", type=float, default=450.0)
    p.add_argument("--eval-max", type=int, default=60)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--decay", action="store_true", help="linear decay of lr to 10% over the budget")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    log = RUNS / f"sft_{a.name}.jsonl"
    log.unlink(missing_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(a.model)
    renderer = Renderer(tokenizer, prompt_style="compact")
    families = a.families.split(",")
    train_tasks, heldout = load_tasks(families, a.per_family, a.task_seed)
    rng = random.Random(a.seed)
    heldout = sorted(heldout, key=lambda t: t.id)
    if len(heldout) > a.eval_max:
        heldout = rng.sample(heldout, a.eval_max)
    samples = build_samples(train_tasks, tokenizer, renderer)
    lengths = [len(s[0]) for s in samples]
    info = {"args": vars(a), "train_tasks": len(train_tasks), "heldout": len(heldout), "samples": len(samples),
            "mean_len": sum(lengths) / len(lengths), "max_len": max(lengths),
            "supervised_per_sample": sum(sum(m) for _, m in samples) / len(samples),
            "heldout_families": Counter(t.family for t in heldout)}
    print(json.dumps(info), flush=True)
    log_jsonl(log, info)
    if a.random_init:
        torch.manual_seed(a.seed)
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(a.model))
    else:
        model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.0)
    pad_id = tokenizer.pad_token_id
    ckpt = RUNS / f"sft_{a.name}_ckpt"
    order: list[int] = []
    step = 0
    spent = 0.0
    next_eval = 0.0
    seen = 0
    while True:
        if spent >= next_eval:
            ckpt.mkdir(parents=True, exist_ok=True)
            model.save_pretrained(ckpt)
            tokenizer.save_pretrained(ckpt)
            shutil.copy(Path(a.model) / "toolgym.json", ckpt / "toolgym.json")
            began = time.perf_counter()
            results = asyncio.run(evaluate(ckpt, heldout, 200))
            torch.set_num_threads(a.threads)
            wins = sum(r["reward"] >= 1.0 for r in results)
            per_family = defaultdict(lambda: [0, 0])
            for r in results:
                per_family[r["family"]][0] += r["reward"] >= 1.0
                per_family[r["family"]][1] += 1
            row = {"eval_at_cpu_s": spent, "step": step, "seen": seen, "success": wins, "n": len(results),
                   "partial": sum(r["partial"] for r in results) / len(results),
                   "per_family": {k: f"{v[0]}/{v[1]}" for k, v in sorted(per_family.items())},
                   "eval_wall_s": time.perf_counter() - began, "examples": results[:6]}
            log_jsonl(log, row)
            print(f"EVAL cpu {spent:.0f}s step {step} seen {seen}: {wins}/{len(results)} partial {row['partial']:.3f} "
                  f"{row['per_family']} (eval {row['eval_wall_s']:.0f}s wall)", flush=True)
            next_eval += a.eval_every
            if spent >= a.budget:
                break
        if not order:
            order = list(range(len(samples)))
            rng.shuffle(order)
        group = [samples[order.pop()] for _ in range(min(a.batch, len(order)))]
        began = cpu_seconds()
        lr = a.lr * min(1.0, (step + 1) / a.warmup)
        if a.decay:
            lr *= max(0.1, 1.0 - spent / a.budget)
        for g in optimizer.param_groups:
            g["lr"] = lr
        ids, targets = batch_tensors(group, pad_id)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = model.model(input_ids=ids).last_hidden_state
            positions = targets != -100
            logits = model.lm_head(hidden[positions])
        loss = F.cross_entropy(logits.float(), targets[positions])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        spent += cpu_seconds() - began
        step += 1
        seen += len(group)
        if step % 10 == 0:
            log_jsonl(log, {"step": step, "loss": float(loss.detach()), "cpu_s": spent, "lr": lr})
            print(f"step {step} loss {float(loss.detach()):.3f} cpu {spent:.0f}s", flush=True)


if __name__ == "__main__":
    main()
