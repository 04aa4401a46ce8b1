"""Teacher-forced copy accuracy of a model folder: chunk-copy rows (random tokens) and corpus echo/copy spans."""
import sys, torch
from transformers import AutoModelForCausalLM
from toolgym.model.pretrain.train import chunk_copy_batch
torch.set_num_threads(1)
m = AutoModelForCausalLM.from_pretrained(sys.argv[1]).eval()
for symbols in (0, 512):
    ids, t = chunk_copy_batch(10**6, 99, 16, 256, 10, 10 + symbols if symbols else m.config.vocab_size)
    with torch.no_grad():
        logits = m(ids).logits
    sel = t != -100
    acc = (logits.argmax(-1)[sel] == t[sel]).float().mean().item()
    loss = torch.nn.functional.cross_entropy(logits[sel], t[sel]).item()
    print(f"chunk copies (alphabet {symbols or m.config.vocab_size}): acc {acc:.3f} loss {loss:.3f}")
