"""Shared pieces of the harness tests: booking tasks, scripted harnesses, and the re-render check of token rows.

Everything is real: tasks come from the booking app's own generators (kept only when their reference solution
replays to reward 1), harnesses are real subprocesses, the default model's chat template renders the prompts.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

from test_rollout_support import suite_tasks
from toolgym.agent.samples import build_samples
from toolgym.chat.render import Renderer
from toolgym.schema import Message, Task, TokenTurn, ToolSpec
from toolgym.schema.jsonl import write_jsonl

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "harness"
AGENTS_HARNESS = f"{sys.executable} {EXAMPLES / 'openai_agents.py'}"
LOOP_HARNESS = f"{sys.executable} {EXAMPLES / 'openai_loop.py'}"


@cache
def booking_tasks(count: int) -> tuple[Task, ...]:
    """`count` booking tasks that replay to reward 1, one family after another (round robin)."""
    by_family: dict[str, list[Task]] = {}
    for task in suite_tasks(tasks_per_family=2, apps=["booking"]):
        by_family.setdefault(task.family or "", []).append(task)
    chosen: list[Task] = []
    depth = 0
    while len(chosen) < count and depth < 4:
        chosen += [tasks[depth] for tasks in by_family.values() if len(tasks) > depth][: count - len(chosen)]
        depth += 1
    assert len(chosen) == count, f"only {len(chosen)} booking tasks replay to reward 1"
    return tuple(chosen)


def write_dataset(root: Path, tasks: tuple[Task, ...] | list[Task]) -> Path:
    write_jsonl(root / "tasks.jsonl", list(tasks))
    return root


def script_harness(folder: Path, name: str, body: str) -> str:
    """A harness written for one test: `body` is a Python program; the command that runs it."""
    path = folder / f"{name}.py"
    path.write_text(body)
    return f"{sys.executable} {path}"


def rendered_prompt_problems(row: dict[str, Any], renderer: Renderer) -> list[str]:
    """Where a token row's recorded prompts are not the chat template's rendering of the recorded messages.

    A call that starts a training sample must be the template's rendering of its messages, whole; a call that
    continues one must be the previous call's prompt, its sampled ids (closed as the template closes a turn)
    and the template's rendering of the messages added since, exactly. Also: the row's token samples are what
    its token turns build, and their loss mask covers exactly the sampled ids."""
    harness = row["harness"]
    turns = [TokenTurn.model_validate(t) for t in row["episode"]["token_turns"]]
    tool_sets = [[ToolSpec.from_openai(t) for t in tools] for tools in harness["tool_sets"]]
    transcript = [Message.model_validate(m) for m in row["episode"]["messages"]]
    problems: list[str] = []
    previous: tuple[list[int], list[dict[str, Any]]] | None = None
    for call in harness["calls"]:
        turn = turns[call["token_turn"]]
        if call["messages"] is not None:
            messages = call["messages"]
        else:
            messages = [m.to_openai() for m in transcript[: call["transcript_prefix"]]]
        tools = tool_sets[call["tool_set"]]
        continued = previous is not None and turn.prompt_ids[: len(previous[0])] == previous[0]
        if continued:
            assert previous is not None
            held_ids, held_messages = previous
            expected = [*held_ids, *renderer.observation_ids(messages[len(held_messages):], tools)]
        else:
            expected = renderer.prompt_ids(messages, tools)
        if turn.prompt_ids != expected:
            problems.append(f"call {call['request']} ({'continued' if continued else 'whole'}): the recorded prompt "
                            "is not the template's rendering of its messages")
        closing = [] if renderer.ends_turn(turn.completion_ids) else renderer.turn_close_ids
        reply = transcript[call["reply_at"]].to_openai()
        previous = ([*turn.prompt_ids, *turn.completion_ids, *closing], [*messages, reply])
    built = [s.model_dump(mode="json") for s in build_samples(turns)]
    if built != row["token_samples"]:
        problems.append("token_samples are not what the token turns build")
    sampled = [i for t in turns for i in t.completion_ids]
    trained = [i for s in row["token_samples"] for i, m in zip(s["input_ids"], s["loss_mask"], strict=True) if m]
    if trained != sampled:
        problems.append("the loss mask does not cover exactly the sampled ids")
    return problems
