"""One pre-training run with per-skill held-out accuracy logged over CPU time.

nice -n 19 python research/tiny_model/pretrain_run.py NAME --hidden 256 --layers 4 --lr 2e-3 --steps 1500
"""
import argparse, json, sys, time
sys.path.insert(0, "research/tiny_model")
import torch
from common import RUNS, log_jsonl, make_model, provisional_tokenizer, renderer_for, tiny_tokenizer
from toolgym.model.pretrain.train import TrainConfig, eval_episodes, train

p = argparse.ArgumentParser()
p.add_argument("name")
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--kv-heads", type=int, default=2)
p.add_argument("--intermediate", type=int, default=768)
p.add_argument("--lr", type=float, default=2e-3)
p.add_argument("--steps", type=int, default=1500)
p.add_argument("--rows", type=int, default=8)
p.add_argument("--seq-len", type=int, default=1024)
p.add_argument("--warmup", type=int, default=100)
p.add_argument("--decay-start", type=float, default=0.8)
p.add_argument("--eval-every", type=float, default=120.0)
p.add_argument("--vocab", type=int, default=4000)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--save", action="store_true")
p.add_argument("--tok", default="iso")
p.add_argument("--threads", type=int, default=1)
a = p.parse_args()

tok = provisional_tokenizer(a.vocab) if a.tok == "prov" else tiny_tokenizer(a.tok, a.vocab)
renderer = renderer_for(tok)
model = make_model(len(tok), a.hidden, a.layers, a.heads, a.kv_heads, a.intermediate, seed=a.seed)
config = TrainConfig(seed=a.seed, steps=a.steps, rows=a.rows, seq_len=a.seq_len, lr=a.lr, warmup_steps=a.warmup,
                     decay_start=a.decay_start, eval_every_s=a.eval_every, threads=a.threads)
log = RUNS / f"{a.name}.jsonl"
log.unlink(missing_ok=True)
log_jsonl(log, {"args": vars(a), "params": sum(p.numel() for p in model.parameters())})
eval_set = eval_episodes(a.seed, renderer, 300, a.seq_len)
t0 = time.perf_counter()

def on_step(r):
    if r.step % 25 == 0:
        log_jsonl(log, {"step": r.step, "loss": r.loss, "lr": r.lr, "cpu_s": r.cpu_s, "wall_s": r.wall_s})
        print(f"step {r.step} loss {r.loss:.3f} cpu {r.cpu_s/60:.1f}m wall {r.wall_s/60:.1f}m", flush=True)

def on_eval(step, cpu_s, result):
    log_jsonl(log, {"eval_step": step, "cpu_s": cpu_s, **result})
    f = result["first"]; e = result["exact"]
    keys = ["copy_entity", "copy_number", "copy_date", "copy_id", "copy_from_result", "copy_context", "select_extreme",
            "select_filter", "select_extreme_answer", "date_relative", "answer_quote", "answer_field", "count", "turn_start"]
    print(f"EVAL step {step} cpu {cpu_s/60:.1f}m loss {result['loss']:.3f} acc {result['token_accuracy']:.3f} | "
          + " ".join(f"{k}={f.get(k, float('nan')):.2f}/{e.get(k, float('nan')):.2f}" for k in keys), flush=True)

train(model, renderer, config, on_step, on_eval, eval_set)
if a.save:
    out = RUNS / f"{a.name}_model"
    model.save_pretrained(out); tok.save_pretrained(out)
    (out / "toolgym.json").write_text(json.dumps({"prompt_style": "compact"}))
