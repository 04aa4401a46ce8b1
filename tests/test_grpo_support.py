"""Shared pieces of the GRPO tests: toy datasets, a seeded custom reward, and a subprocess entry point.

`python tests/test_grpo_support.py CONFIG_JSON` runs GRPO on the toy app in a fresh process (so a
test can SIGKILL it mid-run and resume it).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_rollout_support import broken_tasks, env_factory, tiny_model_dir, toy_tasks
from toolgym.schema import Episode, Task
from toolgym.schema.jsonl import write_jsonl
from toolgym.train.grpo.config import GRPOConfig, grpo_config_from_dict
from toolgym.train.grpo.trainer import GRPOResult, run_grpo


def first_token_parity(episode: Episode) -> float:
    """A custom reward a random model can earn: 1 when its first sampled token id is even.

    The toy tasks' own rewards stay 0 for an untrained model, so groups would have no signal; this
    reward makes every update real while staying a pure function of the sampled ids.
    """
    turns = episode.token_turns
    return float(turns[0].completion_ids[0] % 2 == 0) if turns and turns[0].completion_ids else 0.0


def first_token_logprob(episode: Episode) -> float:
    """A custom reward a policy raises by sharpening: the log-prob it gave its own first token."""
    turns = episode.token_turns
    return turns[0].logprobs[0] if turns and turns[0].logprobs else -20.0


def toy_dataset(root: Path, *, with_broken: bool = False) -> Path:
    """Toy train tasks (plus copies), held-out copies, and optionally two tasks whose every episode errors."""
    tasks: list[Task] = []
    for copy in range(2):
        tasks += [t.model_copy(update={"id": f"{t.id}/{copy}", "prompt": t.prompt + (" Please." if copy else "")})
                  for t in toy_tasks()]
    tasks += [t.model_copy(update={"id": f"{t.id}/heldout", "split": "heldout_tasks", "prompt": t.prompt + " Now."})
              for t in toy_tasks()]
    if with_broken:  # errors whatever the model does: a crashing verifier, an environment that cannot be made
        bad_verifier = next(t for t in broken_tasks() if "bad_verifier" in t.id)
        tasks += [bad_verifier, bad_verifier.model_copy(update={"id": "nowhere/list/0", "env": "nowhere"})]
    path = root / "tasks.jsonl"
    root.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, tasks)
    return path


def toy_config(root: Path, out: Path, **overrides: Any) -> GRPOConfig:
    data: dict[str, Any] = {
        "tasks": str(toy_dataset(root)), "model": str(tiny_model_dir()), "out": str(out),
        "steps": 4, "tasks_per_step": 2, "samples_per_task": 3, "threads": 1,
        "sampling": {"max_new_tokens": 12, "max_turns": 2, "temperature": 1.0},
        "optim": {"lr": 3e-3, "precision": "fp32"}, "checkpoint": {"save_every": 2},
        "eval": {"every": 2, "concurrency": 4},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return grpo_config_from_dict(data, "test config")


def run_toy(config: GRPOConfig, reward_fn: Callable[[Episode], float] = first_token_parity) -> GRPOResult:
    return run_grpo(config, env_factory=env_factory, reward_fn=reward_fn)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


if __name__ == "__main__":
    run_toy(grpo_config_from_dict(json.loads(Path(sys.argv[1]).read_text()), sys.argv[1]))
