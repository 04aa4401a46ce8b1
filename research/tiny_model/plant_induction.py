"""Write a planted-copy-circuit model (toolgym.model.pretrain.plant) from a base folder's config and tokenizer.

    python research/tiny_model/plant_induction.py BASE_DIR OUT_DIR ['{"copy_gain": 5}']
"""
import json, shutil, sys
from pathlib import Path
import torch
from transformers import AutoConfig, AutoModelForCausalLM
from toolgym.model.pretrain.plant import ROPE_THETA, plant_copy_circuit

base, out = Path(sys.argv[1]), Path(sys.argv[2])
gains = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
config = AutoConfig.from_pretrained(base)
config.rope_parameters = {"rope_type": "default", "rope_theta": ROPE_THETA}
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(config)
plant_copy_circuit(model, **gains)
out.mkdir(parents=True, exist_ok=True)
model.save_pretrained(out)
for f in base.iterdir():
    if f.name.startswith("tokenizer") or f.name in ("chat_template.jinja", "toolgym.json", "generation_config.json"):
        shutil.copy(f, out / f.name)
