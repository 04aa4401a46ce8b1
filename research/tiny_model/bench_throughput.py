"""Tokens/s of one training step for several shapes, fp32 vs bf16 autocast (2 threads)."""
import sys, time
import torch
sys.path.insert(0, "research/tiny_model")
from common import make_model, provisional_tokenizer, renderer_for
from toolgym.model.pretrain.data import episode_stream, pack_batch
from toolgym.model.pretrain.train import supervised_loss, cpu_seconds

tok = provisional_tokenizer()
r = renderer_for(tok)
torch.set_num_threads(2)
stream = episode_stream(0, r, 0, 1023)
carry = []
batch = pack_batch(stream, 8, 1024, tok.pad_token_id, tok.convert_tokens_to_ids("<|endoftext|>"), carry)
print("episodes/batch", batch.episodes, "supervised", batch.supervised_tokens, "of", batch.input_ids.numel())
shapes = [(256, 4, 4, 2, 768), (384, 4, 6, 2, 1024), (256, 6, 4, 2, 768), (512, 4, 8, 4, 1536)]
for shape in shapes[: int(sys.argv[1]) if len(sys.argv) > 1 else None]:
    m = make_model(len(tok), *shape, seed=0)
    n = sum(p.numel() for p in m.parameters())
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    for bf16 in (False, True):
        times = []
        for i in range(4):
            c0, w0 = cpu_seconds(), time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = supervised_loss(m, batch.input_ids, batch.targets)
            opt.zero_grad(); loss.backward(); opt.step()
            times.append((cpu_seconds() - c0, time.perf_counter() - w0))
        c, w = min(t[0] for t in times[1:]), min(t[1] for t in times[1:])
        print(f"shape={shape} params={n/1e6:.2f}M bf16={bf16} wall={w:.2f}s cpu={c:.2f}s tok/s(wall)={8192/w:.0f}", flush=True)
