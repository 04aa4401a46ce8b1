"""What kind of row a JSONL line holds, and the conventions SFT rows share across validate/convert/SFT.

Two row kinds travel between stages: results rows (one episode each, written by the rollout) and
SFT rows (`messages` + `tools` + provenance). An assistant message may carry `"weight": 0` (OpenAI's
fine-tuning convention): it stays in the conversation as context but is not trained on.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any, Literal

from toolgym.schema.jsonl import iter_lines as iter_lines  # read here by convert, validate and sft_data

RowKind = Literal["results", "sft", "unknown"]
ALLOWED_ROLES = ("system", "user", "assistant", "tool")
WEIGHT_FIELD = "weight"


def row_kind(row: Any) -> RowKind:
    """results rows carry the episode (or the verifiers prompt/completion pair); SFT rows carry messages."""
    if not isinstance(row, dict):
        return "unknown"
    if "episode" in row or ("example_id" in row and "completion" in row):
        return "results"
    if "messages" in row:
        return "sft"
    return "unknown"


@cache
def format_feedback_prefix() -> str:
    """The first line of the episode loop's feedback after a malformed call (read from the loop itself)."""
    from toolgym.agent.episode import format_feedback

    return format_feedback([]).splitlines()[0]


def is_format_feedback(message: dict[str, Any]) -> bool:
    """The loop's answer to a malformed turn: a `tool` message with no call id (token mode) or a
    `user` message (chat mode), starting with the loop's feedback header."""
    role = message.get("role")
    content = message.get("content")
    if not isinstance(content, str) or not content.startswith(format_feedback_prefix()):
        return False
    return role == "user" or (role == "tool" and not message.get("tool_call_id"))


def is_trained(message: dict[str, Any]) -> bool:
    """An assistant message is trained unless it says `"weight": 0`."""
    return message.get("role") == "assistant" and message.get(WEIGHT_FIELD, 1) != 0


def results_messages(row: dict[str, Any]) -> list[Any]:
    """A results row's conversation in OpenAI form: the verifiers prompt + completion."""
    prompt = row.get("prompt")
    completion = row.get("completion")
    return [*(prompt if isinstance(prompt, list) else []), *(completion if isinstance(completion, list) else [])]


def canonical_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
