"""Sanity check of the training loop: does a 256x4 Qwen3 learn a pure repeat-copy task quickly?"""
import sys, time, torch
sys.path.insert(0, "research/tiny_model")
from common import make_model
from toolgym.model.pretrain.train import supervised_loss, cpu_seconds
torch.set_num_threads(1); torch.manual_seed(0)
m = make_model(4000, 256, 4, 4, 2, 768, seed=0)
opt = torch.optim.AdamW(m.parameters(), lr=2e-3, betas=(0.9, 0.95), weight_decay=0.1)
L, seg = 256, 40
g = torch.Generator().manual_seed(1)
c0 = cpu_seconds()
for step in range(400):
    ids = torch.randint(10, 4000, (8, L), generator=g)
    # each row: random prefix, then a segment, random filler, then the segment again (copy targets)
    a = torch.randint(10, 4000, (8, seg), generator=g)
    ids[:, 20:20 + seg] = a
    ids[:, L - seg:] = a
    targets = torch.full((8, L), -100)
    targets[:, L - seg - 1:L - 1] = ids[:, L - seg:]
    lr = 2e-3 * min(1, (step + 1) / 50)
    for gr in opt.param_groups: gr["lr"] = lr
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = supervised_loss(m, ids, targets)
    opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step()
    if step % 25 == 0:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            pred = m(ids).logits.argmax(-1)
        acc = (pred[:, L - seg:L - 1] == ids[:, L - seg + 1:]).float().mean().item()
        print(step, round(loss.item(), 3), "copy acc (after first)", round(acc, 3), f"cpu {cpu_seconds()-c0:.0f}s", flush=True)
