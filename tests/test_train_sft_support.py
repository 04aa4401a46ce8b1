"""Shared pieces of the data / SFT / RFT tests: a token-mode replay policy and real toy rollouts.

`ReplayTokenPolicy` is a real token-mode policy (no model): it writes each task's reference calls
and expected answer through the real tokenizer, so episodes, results rows and token samples are
exactly what the episode loop and the rollout runner produce. A task whose metadata says
`malformed_turns: N` first writes N unreadable calls, so the loop's format-error feedback shows up;
`cut_off_answer: True` ends with an answer cut by the token budget (no stop token, finish "length").
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from test_rollout_support import broken_tasks, env_factory, toy_tasks
from toolgym.agent.limits import EpisodeLimits
from toolgym.chat.render import Renderer
from toolgym.data.convert import convert_run
from toolgym.policy.base import Generation, GenerationRequest, Policy, SamplingParams
from toolgym.policy.oracle import OraclePolicy
from toolgym.rollout.runner import RolloutSummary, run_rollout
from toolgym.schema import Task, ToolCall

MALFORMED_CALL = '<tool_call>\n{"name": "list_my_notes", "arguments": {oops}\n</tool_call>'


def call_text(call: ToolCall) -> str:
    return f'<tool_call>\n{{"name": "{call.name}", "arguments": {json.dumps(call.arguments)}}}\n</tool_call>'


class ReplayTokenPolicy(Policy):
    """Token mode: turn t writes the task's t-th reference call (after any scripted malformed turns)."""

    name = "replay-token"

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")

    async def generate(self, request: GenerationRequest) -> Generation:
        task = request.task
        assert task is not None
        malformed = int(task.metadata.get("malformed_turns", 0))
        turn = request.turn
        if turn < malformed:
            text = MALFORMED_CALL
        elif turn - malformed < len(task.reference_solution):
            text = call_text(task.reference_solution[turn - malformed])
        else:
            text = task.expected_answer or "Done."
        cut = turn - malformed >= len(task.reference_solution) and task.metadata.get("cut_off_answer")
        ids = [*self.tokenizer(text, add_special_tokens=False)["input_ids"], *([] if cut else [self.im_end])]
        logprobs = [-0.01 * (i + 1) for i in range(len(ids))]
        return Generation(text=text, completion_ids=ids, logprobs=logprobs, finish_reason="length" if cut else "stop")


def mixed_tasks() -> list[Task]:
    """Successes, a failure (wrong answer), a malformed-then-recovered success, a truncation, two errors.

    Run with max_turns=3: `toy/list/loop` needs 4 turns and is truncated.
    """
    tasks = toy_tasks()  # list (2 turns), add (2 turns), complete (3 turns)
    wrong = tasks[0].model_copy(update={"id": "toy/list/wrong", "expected_answer": "I cannot list them.",
                                        "checks": [*tasks[2].checks[-1:]]})  # AnswerContains "done": fails
    recovered = tasks[1].model_copy(update={"id": "toy/add/recovered", "metadata": {"malformed_turns": 1}})
    loop = tasks[0].model_copy(update={"id": "toy/list/loop", "reference_solution": tasks[0].reference_solution * 3})
    return [*tasks, wrong, recovered, loop, *broken_tasks()]


def run_toy(out_dir: Path, policy: Policy, tasks: list[Task], *, renderer: Renderer | None = None,
            max_turns: int = 3, samples_per_task: int = 1) -> RolloutSummary:
    return asyncio.run(run_rollout(
        tasks, policy, out_dir=out_dir, samples_per_task=samples_per_task, concurrency=1,
        limits=EpisodeLimits(max_turns=max_turns),
        env_factory=env_factory, renderer=renderer, sampling=SamplingParams(temperature=0.0, max_new_tokens=64),
    ))


def oracle_rollout(out_dir: Path, tasks: list[Task], prompt_style: str = "compact") -> RolloutSummary:
    """Teacher trajectories in the student's prompt style (the oracle is chat mode)."""
    return run_toy(out_dir, OraclePolicy(), tasks, renderer=Renderer(None, prompt_style=prompt_style))  # type: ignore[arg-type]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@cache
def toy_sft_rows() -> Path:
    """Teacher SFT rows (compact style, like the tiny model) of the six toy tasks, each also with a reworded
    prompt: 12 rows, built once per test process."""
    root = Path(tempfile.mkdtemp(prefix="toolgym-sft-rows-"))
    tasks = [t for t in mixed_tasks() if "crash" not in t.id and "bad_verifier" not in t.id]
    tasks += [t.model_copy(update={"id": t.id + "/b", "prompt": t.prompt + " Thanks."}) for t in tasks]
    oracle_rollout(root / "run", tasks)
    report = convert_run(root / "run", root / "sft.jsonl")
    assert report.rows_out == len(tasks) == 12
    return root / "sft.jsonl"
