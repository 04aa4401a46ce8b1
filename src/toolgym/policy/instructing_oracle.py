"""InstructingOraclePolicy: the oracle for dual-control tasks — it acts where it may and instructs
where only the user may.

It works with any environment whose tasks carry a reference solution: toolgym's own apps, and
any other environment (a third-party MCP server, imported tau2 tasks). Only toolgym's apps mark
tools as user-owned, so in any other environment every reference call is the agent's.

It walks the task's reference solution: an agent-owned call becomes a tool call; a user-owned call
(a device tool) becomes a plain-language instruction for the user (the app's `user_actions`
phrasing), which a user simulator then performs; when the solution is used up it gives the
expected answer. Progress is read from the history (one step per assistant tool call or text turn),
so the policy is stateless and can serve many episodes at once. Tasks without user-owned calls
play out exactly as with the plain oracle.
"""

from __future__ import annotations

import json
from typing import Any

from toolgym.envs import App, app_names, get_app
from toolgym.envs.user_actions import app_user_actions, instruction_for
from toolgym.policy.base import Generation, GenerationRequest, Policy, PolicyError
from toolgym.policy.oracle import FALLBACK_ANSWER, hermes_text
from toolgym.schema import Message, Task, ToolCall


def _steps_taken(messages: list[dict[str, Any]]) -> int:
    """Reference steps already played: each assistant tool call, and each assistant text turn."""
    steps = 0
    for message in messages:
        if message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls") or []
        steps += len(calls) if calls else 1
    return steps


def _apps(task: Task) -> list[App]:
    """The registered toolgym apps of the task's environment; none for any other environment."""
    known = set(app_names())
    return [get_app(name) for name in task.env.split("+") if name in known]


def owner_of(apps: list[App], name: str) -> str:
    for app in apps:
        found = app.tool(name)
        if found is not None:
            return found.owner
    return "agent"


class InstructingOraclePolicy(Policy):
    """Reference solution replay with user-owned calls spoken as instructions (chat mode)."""

    name = "oracle-instructing"
    checkpoint = None
    tokenizer = None

    def __init__(self, prompt_style: str | None = None) -> None:
        # Which system prompt the teacher rows carry: the student's style, so SFT trains on what
        # its rollouts will show it (compact for the tiny model, full for real models).
        self.prompt_style = prompt_style

    async def generate(self, request: GenerationRequest) -> Generation:
        task = request.task
        if task is None or request.messages is None:
            raise PolicyError("the instructing oracle needs the task and the chat messages of the request")
        step = _steps_taken(request.messages)
        if step >= len(task.reference_solution):
            answer = task.expected_answer or FALLBACK_ANSWER
            return Generation(text=answer, message=Message(role="assistant", content=answer))
        reference = task.reference_solution[step]
        apps = _apps(task)
        if owner_of(apps, reference.name) == "user":
            text = instruction_for(app_user_actions(apps), reference) or (
                f"Please do this on your phone: {reference.name} {json.dumps(reference.arguments)}."
            )
            return Generation(text=text, message=Message(role="assistant", content=text))
        call = ToolCall(name=reference.name, arguments=dict(reference.arguments), id=f"call_{step}")
        return Generation(text=hermes_text(call), message=Message(role="assistant", content="", tool_calls=[call]))
