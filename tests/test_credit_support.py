"""Shared pieces of the per-turn progress and turn-credit tests: the toy app with a way to undo its write, a
task whose checks score a write, and real episodes on it with scripted turns."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_agent_support import ScriptedTokenPolicy, tiny_tokenizer, toy_task
from toolgym.agent.episode import run_episode
from toolgym.agent.limits import EpisodeLimits
from toolgym.chat.render import Renderer
from toolgym.envs import Environment, ToolContext, ToolError, tool
from toolgym.envs.examples.toy import ToyApp
from toolgym.policy.base import SamplingParams
from toolgym.schema import AnswerContains, Check, DiffOnly, Episode, ExpectedChange, FieldEquals, Task

SAMPLING = SamplingParams(temperature=0.0, max_new_tokens=200)


@tool
def reopen_note(ctx: ToolContext, note_id: int) -> dict:
    """Mark one of the logged-in user's notes as not done.

    Args:
        note_id: Id of the note.
    """
    if ctx.one("SELECT id FROM notes WHERE id=? AND owner=?", (note_id, ctx.env.require_user())) is None:
        raise ToolError(f"no note with id {note_id} belongs to you")
    ctx.db.execute("UPDATE notes SET done=0 WHERE id=?", (note_id,))
    return {"id": note_id, "done": False}


class UndoToy(ToyApp):
    """The toy app with a way to undo its write, so an episode can take progress back."""

    tools = [*ToyApp.tools, reopen_note]


UNDO_APP = UndoToy()

# 'Mark note 1 as done': the field (weight 2), nothing else changed (1), and an answer that says so (1).
COMPLETE_CHECKS: list[Check] = [
    FieldEquals(table="notes", where={"id": 1}, field="done", value=1, weight=2.0),
    DiffOnly(expected=[ExpectedChange(table="notes", op="update", where={"id": 1}, fields=["done"])]),
    AnswerContains(values=["done"]),
]


def complete_task(**fields: Any) -> Task:
    return toy_task("Mark note 1 as done.", **{"id": "toy/complete/progress", "checks": COMPLETE_CHECKS, **fields})


def play(task: Task, script: list[Any], *, turn_progress: bool = True, sample_index: int = 0,
         **limits: Any) -> Episode:
    """One real episode of `task` on the undo-able toy app, the policy's turns scripted."""
    tokenizer = tiny_tokenizer()
    env = Environment([UNDO_APP])
    try:
        return asyncio.run(run_episode(task, env, ScriptedTokenPolicy(tokenizer, script), SAMPLING,
                                       sample_index=sample_index,
                                       renderer=Renderer(tokenizer, prompt_style="compact"),
                                       limits=EpisodeLimits(turn_progress=turn_progress, **limits)))
    finally:
        env.close()
