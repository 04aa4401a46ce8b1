"""Shared pieces of the integration tests: a few real tasks of one app, and SFT rows of their oracle episodes.

The rows come the way a user makes them: the oracle rolled out in a prompt style, then `toolgym data convert`.
"""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path
from typing import Any

from toolgym.agent.limits import EpisodeLimits
from toolgym.chat.render import Renderer
from toolgym.data.convert import convert_run
from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs import get_app
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR
from toolgym.policy.oracle import OraclePolicy
from toolgym.rollout.runner import run_rollout
from toolgym.schema import Task

APP = "tickets"  # short prompts: full-style rows and TRL's prompts fit the tiny model's 4,096-token context
MODEL_DIR = DEFAULT_MODEL_DIR


@functools.cache
def app_tasks(app: str = APP, count: int = 6) -> tuple[Task, ...]:
    """The first `count` single-agent tasks (one per family) of a freshly built task set of `app`."""
    config = BuildConfig(seed=3, apps=[app], tasks_per_family=1, heldout_envs=[], compositions=[],
                         heldout_task_fraction=0.0)
    tasks = [t for t in generate_app_tasks(get_app(app), config) if t.user_scenario is None]
    return tuple(tasks[:count])


def oracle_rows(out_dir: Path, tasks: tuple[Task, ...], prompt_style: str) -> tuple[Path, list[dict[str, Any]]]:
    """`toolgym data convert` of the oracle's episodes of `tasks`, rolled out in `prompt_style`."""
    asyncio.run(run_rollout(list(tasks), OraclePolicy(), out_dir=out_dir / "run",
                            limits=EpisodeLimits(max_turns=12),
                            renderer=Renderer(None, prompt_style=prompt_style)))  # type: ignore[arg-type]
    rows_path = out_dir / "rows.jsonl"
    report = convert_run(out_dir / "run", rows_path)
    assert report.rows_out == len(tasks), report.render()
    return rows_path, [json.loads(line) for line in rows_path.read_text(encoding="utf-8").splitlines()]


def tiny_tokenizer() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(MODEL_DIR), local_files_only=True)


def trl_lengths(rows: list[dict[str, Any]]) -> list[int]:
    """Each SFT row's length in the shipped model's tokens as TRL's SFTTrainer tokenizes it: its `tokenize_fn`
    (`apply_chat_template` with the row's tools, JSON-decoded, and its chat_template_kwargs) on `sft_rows`'s row."""
    from toolgym.integrations.trl import sft_rows

    tokenizer = tiny_tokenizer()
    lengths = []
    for row in sft_rows(rows):
        tools = json.loads(row["tools"]) if isinstance(row["tools"], str) else row["tools"]
        out = tokenizer.apply_chat_template(row["messages"], tools=tools, tokenize=True, return_dict=True,
                                            **row["chat_template_kwargs"])
        lengths.append(len(out["input_ids"]))
    return lengths
