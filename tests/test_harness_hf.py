"""Acceptance: the shipped default model behind the policy endpoint: scored rows whose token samples re-render to
the recorded prompts through the model's chat template, split at a harness's history rewrite, and SFT rows from
`toolgym data convert` that carry exactly those tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer
from typer.testing import CliRunner

from test_harness_support import (
    AGENTS_HARNESS,
    booking_tasks,
    rendered_prompt_problems,
    script_harness,
    write_dataset,
)
from toolgym.chat.render import Renderer, load_prompt_style
from toolgym.cli.main import app
from toolgym.data.validate import validate_file
from toolgym.model import DEFAULT_MODEL_DIR
from toolgym.rollout.results import RESULTS_FILE, read_rows

POLICY = f"hf:{DEFAULT_MODEL_DIR}"
REWRITING_HARNESS = '''
import os
from openai import OpenAI

client = OpenAI(max_retries=0, timeout=600)
model = os.environ["OPENAI_MODEL"]
opening = [{"role": "system", "content": os.environ["TOOLGYM_SYSTEM_PROMPT"]},
           {"role": "user", "content": os.environ["TOOLGYM_TASK_PROMPT"]}]
first = client.chat.completions.create(model=model, messages=opening, max_tokens=24).choices[0].message
history = [*opening, first.model_dump(exclude_none=True), {"role": "user", "content": "Go on."}]
client.chat.completions.create(model=model, messages=history, max_tokens=24)
# Compaction: the history is replaced by a summary, so the next prompt extends no earlier one.
compacted = [opening[0], {"role": "user", "content": "Summary: nothing is done yet. " + os.environ["TOOLGYM_TASK_PROMPT"]}]
client.chat.completions.create(model=model, messages=compacted, max_tokens=24)
'''


def _renderer() -> Renderer:
    tokenizer = AutoTokenizer.from_pretrained(str(DEFAULT_MODEL_DIR), local_files_only=True)
    return Renderer(tokenizer, prompt_style=load_prompt_style(DEFAULT_MODEL_DIR))


def _run(tmp_path: Path, command: str, count: int, *extra: str) -> list[dict[str, Any]]:
    dataset = write_dataset(tmp_path / "data", booking_tasks(count))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["harness", "run", "--tasks", str(dataset), "--command", command,
                                      "--policy", POLICY, "--out", str(out), "--seed", "5", "--max-new-tokens", "96",
                                      "--no-progress", *extra])
    assert result.exit_code == 0, result.output
    return read_rows(out / RESULTS_FILE)


def _convert(tmp_path: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    sft = tmp_path / "sft.jsonl"
    result = CliRunner().invoke(app, ["data", "convert", str(tmp_path / "run"), "--out", str(sft)])
    assert result.exit_code == 0, result.output
    converted = [json.loads(line) for line in sft.read_text().splitlines()]
    assert len(converted) == len(rows), result.output
    return converted


def test_agents_sdk_on_the_default_model_gives_scored_rows_whose_tokens_rerender_and_convert(tmp_path: Path) -> None:
    rows = _run(tmp_path, AGENTS_HARNESS, 3)
    assert len(rows) == 3
    renderer = _renderer()
    for row in rows:
        assert row["status"] in ("ok", "truncated") and row["reward"] in (0.0, 1.0), (row["error"], row["harness"])
        assert row["harness"]["requests"] >= 1 and row["token_samples"], row["harness"]
        assert rendered_prompt_problems(row, renderer) == []
        sampler = [lp for t in row["episode"]["token_turns"] for lp in t["logprobs"]]
        assert sampler and all(lp <= 0.0 for lp in sampler)  # the sampler's own log-probs, per sampled token
    assert validate_file(tmp_path / "run" / RESULTS_FILE).invalid == 0
    for row, sft in zip(sorted(rows, key=lambda r: r["task_id"]), _convert(tmp_path, rows), strict=True):
        assert sft["task_id"] == row["task_id"] and sft["prompt_style"] == "compact"
        assert sft["token_samples"] == row["token_samples"]  # the sampled ids, not a re-render
        assert [m["role"] for m in sft["messages"]][:2] == ["system", "user"]


def test_a_rewritten_history_splits_the_episode_into_samples_that_each_rerender(tmp_path: Path) -> None:
    rows = _run(tmp_path, script_harness(tmp_path, "rewriting", REWRITING_HARNESS), 2)
    renderer = _renderer()
    for row in rows:
        harness = row["harness"]
        assert row["status"] == "ok" and row["reward"] == 0.0, (row["error"], harness["stderr_tail"])
        assert harness["requests"] == 3 and harness["prefix_breaks"] == 1
        assert [c["prefix_break"] for c in harness["calls"]] == [False, False, True]
        assert len(row["token_samples"]) == 2  # split at the rewrite, never retokenised into one
        assert rendered_prompt_problems(row, renderer) == []
        assert harness["tool_uses"] == [] and row["total_tool_calls"] == 0  # never called a tool: scored, failed
    assert validate_file(tmp_path / "run" / RESULTS_FILE).invalid == 0
    for row, sft in zip(sorted(rows, key=lambda r: r["task_id"]), _convert(tmp_path, rows), strict=True):
        assert sft["token_samples"] == row["token_samples"]
