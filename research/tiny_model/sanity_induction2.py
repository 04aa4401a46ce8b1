"""Does a 256x4 Qwen3 learn *content-based* copying (induction) from dense, variable-offset chunk copies?

The phase-0 copy rows of main6-8 repeated a sequence at a fixed offset (len/2): the model learned
"attend 64 back" (0.045 loss) and copied 2% of echo text. Here every row is random chunks, about half
of them copies of an earlier stretch at a random distance, so only matching content finds the source.
    nice -n 19 python research/tiny_model/sanity_induction2.py OUT [steps] [rows] [len]
"""
import shutil, sys, torch
sys.path.insert(0, "research/tiny_model")
from pathlib import Path
from toolgym.model.pretrain.train import supervised_loss, cpu_seconds, chunk_copy_batch
from transformers import AutoModelForCausalLM
torch.set_num_threads(1); torch.manual_seed(0)
out = Path(sys.argv[1]); steps = int(sys.argv[2]) if len(sys.argv) > 2 else 400
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 16; length = int(sys.argv[4]) if len(sys.argv) > 4 else 256
symbols = int(sys.argv[5]) if len(sys.argv) > 5 else 0  # >0: tokens from a small alphabet (10 .. 10+symbols)
base = Path("research/tiny_model/runs/init_iso_256")
m = AutoModelForCausalLM.from_pretrained(base)
LR = float(sys.argv[6]) if len(sys.argv) > 6 else 2e-3
opt = torch.optim.AdamW(m.parameters(), lr=LR, betas=(0.9, 0.95), weight_decay=0.1)
c0 = cpu_seconds()
held_ids, held_t = chunk_copy_batch(10**6, 99, 32, length, 10, 10 + symbols if symbols else m.config.vocab_size)
for step in range(steps + 1):
    ids, targets = chunk_copy_batch(step, 0, rows, length, 10, 10 + symbols if symbols else m.config.vocab_size)
    lr = LR * min(1, (step + 1) / 50)
    for gr in opt.param_groups: gr["lr"] = lr
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = supervised_loss(m, ids, targets)
    opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step()
    if step % 100 == 0 and step:
        m.save_pretrained(out)
    if step % 25 == 0:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            pred = m(held_ids).logits.argmax(-1)
        sel = held_t != -100
        acc = (pred[sel] == held_t[sel]).float().mean().item()
        print(step, round(loss.item(), 3), "held-out copy acc", round(acc, 3), f"cpu {cpu_seconds()-c0:.0f}s", flush=True)
m.save_pretrained(out)
for f in base.iterdir():
    if f.name.startswith("tokenizer") or f.name in ("chat_template.jinja", "toolgym.json"):
        shutil.copy(f, out / f.name)
