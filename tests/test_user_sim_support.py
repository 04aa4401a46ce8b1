"""Shared pieces of the user-simulator tests: a scripted chat-mode agent and dual-control tasks."""

from __future__ import annotations

from functools import cache

from toolgym.dataset.build import BuildConfig, generate_app_tasks
from toolgym.envs.apps.phone_support import APP
from toolgym.policy.base import Generation, GenerationRequest, Policy
from toolgym.schema import Message, Task, ToolCall


@cache
def dual_tasks() -> tuple[Task, ...]:
    return tuple(t for t in generate_app_tasks(APP, BuildConfig(tasks_per_family=4)) if t.user_scenario is not None)


def dual_task(family: str) -> Task:
    return next(t for t in dual_tasks() if t.family == family)


class ChatScript(Policy):
    """A chat-mode agent that says (or calls) exactly what the test scripts, then repeats its last line."""

    name = "chat-script"

    def __init__(self, script: list[str | ToolCall]) -> None:
        self.script = list(script)

    async def generate(self, request: GenerationRequest) -> Generation:
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, ToolCall):
            return Generation(text="", message=Message(role="assistant", content="", tool_calls=[step]))
        return Generation(text=step, message=Message(role="assistant", content=step))
