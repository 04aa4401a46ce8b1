"""OraclePolicy: replays a task's reference solution, one tool call per turn, then its expected answer.

A chat-mode policy with no model: it checks the rollout machinery end to end (every validated
task must score reward 1) and produces teacher trajectories for SFT.
"""

from __future__ import annotations

import json
from typing import Any

from toolgym.policy.base import Generation, GenerationRequest, Policy, PolicyError
from toolgym.schema import Message, ToolCall

FALLBACK_ANSWER = "Done."


def _calls_already_made(messages: list[dict[str, Any]] | None) -> int:
    """How many tool calls the assistant has made so far in this history."""
    return sum(len(m.get("tool_calls") or []) for m in messages or [] if m.get("role") == "assistant")


def hermes_text(call: ToolCall) -> str:
    """The call as the `<tool_call>` text a model would write (for logs and `Generation.text`)."""
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


class OraclePolicy(Policy):
    """Turn i calls reference_solution[i]; once all are made, answers with `expected_answer`."""

    name = "oracle"
    checkpoint = None
    tokenizer = None

    async def generate(self, request: GenerationRequest) -> Generation:
        task = request.task
        if task is None:
            raise PolicyError("the oracle policy needs the task in the request to replay its reference solution")
        made = _calls_already_made(request.messages) if request.messages is not None else request.turn
        if made < len(task.reference_solution):
            reference = task.reference_solution[made]
            call = ToolCall(name=reference.name, arguments=dict(reference.arguments), id=f"call_{made}")
            return Generation(
                text=hermes_text(call), message=Message(role="assistant", content="", tool_calls=[call])
            )
        answer = task.expected_answer or FALLBACK_ANSWER
        return Generation(text=answer, message=Message(role="assistant", content=answer))
