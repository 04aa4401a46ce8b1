"""Shared pieces of the TRL-backend tests: a task set whose verifier splits the default model's episodes, its
config, and a subprocess entry point (`python tests/test_trl_grpo_support.py CONFIG_JSON` trains it, also under
`accelerate launch`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_rollout_support import env_factory, toy_tasks
from toolgym.config.grpo import GRPOConfig
from toolgym.config.loading import grpo_config_from_dict
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR
from toolgym.schema.jsonl import write_jsonl

# toolgym's verifier, not a test reward: the task's own validate_task, run by verify_task in its sandbox. It passes
# an answer of even length, so the untrained model's sampled episodes differ in reward within a group.
PARITY_VERIFIER = ("def validate_task(env, final_answer=None):\n"
                   "    return 1 if final_answer and len(final_answer) % 2 == 0 else 0\n")


def parity_dataset(root: Path) -> Path:
    """Three train tasks scored by PARITY_VERIFIER and one whose environment cannot be made (every episode errors)."""
    base = next(t for t in toy_tasks() if "list" in t.id)
    tasks = [base.model_copy(update={"id": f"toy/parity/{i}", "checks": [], "verifier_code": PARITY_VERIFIER,
                                     "prompt": base.prompt + " Answer briefly." * i}) for i in range(3)]
    tasks.append(base.model_copy(update={"id": "nowhere/list/0", "env": "nowhere"}))
    root.mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "tasks.jsonl", tasks)
    return root / "tasks.jsonl"


def trl_config(root: Path, out: Path, **overrides: Any) -> GRPOConfig:
    data: dict[str, Any] = {
        "tasks": str(parity_dataset(root / "data")), "model": str(DEFAULT_MODEL_DIR), "out": str(out),
        "backend": "trl", "steps": 2, "tasks_per_step": 4, "samples_per_task": 4, "threads": 1, "seed": 0,
        "save_rollouts": True,
        "sampling": {"max_new_tokens": 40, "max_turns": 2, "temperature": 1.0, "done_tool": True},
        "reward": {"alpha": 0.5}, "curriculum": {"enabled": False}, "eval": {"enabled": False},
        "optim": {"lr": 1e-4, "precision": "fp32", "batch_tokens": 8192}, "engine": {"device": "cpu"},
    }
    data.update(overrides)
    return grpo_config_from_dict(data, "trl test config")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


if __name__ == "__main__":
    from toolgym.integrations.trl_grpo.run import run_trl_grpo

    run_trl_grpo(grpo_config_from_dict(json.loads(Path(sys.argv[1]).read_text()), sys.argv[1]),
                 env_factory=env_factory)
