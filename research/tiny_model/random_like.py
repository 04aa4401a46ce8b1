"""A random-init model of the same shape and tokenizer as a base folder (the issue's SFT comparison).

    python research/tiny_model/random_like.py BASE_DIR OUT_DIR
Same config (rope_theta included), same tokenizer and template, default Qwen3 init (no planted circuit).
"""
import shutil, sys
from pathlib import Path
import torch
from transformers import AutoConfig, AutoModelForCausalLM

base, out = Path(sys.argv[1]), Path(sys.argv[2])
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(base))
out.mkdir(parents=True, exist_ok=True)
model.save_pretrained(out)
for f in base.iterdir():
    if f.name.startswith("tokenizer") or f.name in ("chat_template.jinja", "toolgym.json", "generation_config.json"):
        shutil.copy(f, out / f.name)
