"""The shipped recipe (toolgym.model.pretrain.recipe.pretrain_tiny) with snapshots and a JSONL log.

nice -n 19 python research/tiny_model/pretrain_main.py NAME [--steps N] [--lr X] [--snapshot-every 250]
"""
import argparse, json, shutil, sys
from dataclasses import replace
from pathlib import Path
sys.path.insert(0, "research/tiny_model")
from common import RUNS, log_jsonl
from toolgym.model.pretrain.recipe import TinyRecipe, pretrain_tiny

p = argparse.ArgumentParser()
p.add_argument("name")
p.add_argument("--steps", type=int)
p.add_argument("--lr", type=float)
p.add_argument("--rows", type=int)
p.add_argument("--hidden", type=int)
p.add_argument("--layers", type=int)
p.add_argument("--pretokenizer")
p.add_argument("--snapshot-every", type=int, default=250)
p.add_argument("--weights", help="JSON skill weights, e.g. {\"transcribe\": 0.5}")
p.add_argument("--warmup", type=int)
p.add_argument("--context-weight", type=float)
p.add_argument("--curriculum", type=int)
p.add_argument("--copy-steps", type=int)
p.add_argument("--planted", action="store_true")
p.add_argument("--copy-mix-rows", type=int)
p.add_argument("--copy-mix-len", type=int)
a = p.parse_args()
recipe = TinyRecipe()
train = recipe.train
for key, field in (("steps", "steps"), ("lr", "lr"), ("rows", "rows")):
    if getattr(a, key) is not None:
        train = replace(train, **{field: getattr(a, key)})
if a.weights: train = replace(train, skill_weights=json.loads(a.weights))
if a.context_weight is not None: train = replace(train, context_weight=a.context_weight)
if a.copy_steps is not None: train = replace(train, copy_steps=a.copy_steps)
if a.copy_mix_rows is not None: train = replace(train, copy_mix_rows=a.copy_mix_rows)
if a.copy_mix_len is not None: train = replace(train, copy_mix_len=a.copy_mix_len)
if a.curriculum is not None: train = replace(train, curriculum_episodes=a.curriculum)
if a.warmup is not None: train = replace(train, warmup_steps=a.warmup)
recipe = replace(recipe, train=train, planted_copy=a.planted)
if a.hidden: recipe = replace(recipe, hidden_size=a.hidden)
if a.layers: recipe = replace(recipe, layers=a.layers)
if a.pretokenizer: recipe = replace(recipe, pretokenizer=a.pretokenizer)
out = RUNS / a.name
log = RUNS / f"{a.name}.jsonl"
log.unlink(missing_ok=True)
log_jsonl(log, {"recipe": json.loads(json.dumps(recipe, default=lambda o: o.__dict__))})

def on_step(r):
    if r.step % 25 == 0:
        log_jsonl(log, {"step": r.step, "loss": r.loss, "lr": r.lr, "cpu_s": r.cpu_s, "wall_s": r.wall_s})
        print(f"step {r.step} loss {r.loss:.3f} cpu {r.cpu_s/60:.1f}m wall {r.wall_s/60:.1f}m", flush=True)

def on_eval(step, cpu_s, result):
    log_jsonl(log, {"eval_step": step, "cpu_s": cpu_s, **result})
    f, e = result["first"], result["exact"]
    print(f"EVAL step {step} cpu {cpu_s/60:.1f}m loss {result['loss']:.3f} acc {result['token_accuracy']:.3f} | "
          + " ".join(f"{k}={f[k]:.2f}/{e[k]:.2f}" for k in sorted(f)), flush=True)

def snapshot(step, model):
    folder = RUNS / f"{a.name}_snap{step}"
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "toolgym.json", "generation_config.json"):
        if (out / name).exists():
            shutil.copy(out / name, folder / name)

report = pretrain_tiny(out, recipe, on_step, on_eval, snapshot=snapshot, snapshot_every=a.snapshot_every)
print("DONE", report.steps, report.cpu_seconds, report.wall_seconds, report.parameters, flush=True)
