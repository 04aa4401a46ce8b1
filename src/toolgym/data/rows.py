"""What kind of row a JSONL line holds, and the conventions SFT rows share across validate/convert/SFT.

Two row kinds travel between stages: results rows (one episode each, written by the rollout) and
SFT rows (`messages` + `tools` + provenance). An assistant message may carry `"weight": 0` (OpenAI's
fine-tuning convention): it stays in the conversation as context but is not trained on.
`ResultsRow` is the type of a results row: `data validate` and `data convert` both read rows through it.
"""

from __future__ import annotations

import json
import reprlib
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from toolgym.schema import Episode, Split, Status, TrainingSample
from toolgym.schema.jsonl import iter_lines as iter_lines  # read here by convert, validate and sft_data

RowKind = Literal["results", "sft", "unknown"]
ALLOWED_ROLES = ("system", "user", "assistant", "tool")
WEIGHT_FIELD = "weight"
Score = Annotated[float, Field(strict=True, ge=0.0, le=1.0, allow_inf_nan=False)]
# Countable reasons for the rules ResultsRow checks across fields (pydantic error type -> reason).
ROW_RULES = {
    "reward_on_error_row": "error row carries a reward",
    "reward_missing": "scored row without a reward",
    "episode_disagrees": "row disagrees with its episode",
}


class ResultsRow(BaseModel):
    """The fields of a results.jsonl row that validate, convert and training rely on.

    The verifiers fields not listed pass through untouched. `reward` is a number in [0, 1] on a scored
    row and null on an error row, so an infrastructure failure never averages in as a 0.
    """

    model_config = ConfigDict(extra="allow")

    task_id: Annotated[StrictStr, Field(min_length=1)]
    sample_index: Annotated[int, Field(strict=True, ge=0)]
    status: Status
    reward: Score | None
    partial_score: Score | None = None
    env: StrictStr | None = None
    split: Split | None = None
    policy: StrictStr | None = None
    checkpoint: StrictStr | None = None
    stop_condition: StrictStr | None = None
    info: dict[str, Any] | None = None
    prompt: list[Any]
    completion: list[Any]
    tool_defs: list[Any] | None = None
    token_samples: list[Any] = Field(default_factory=list)
    episode: Episode

    @field_validator("reward")
    @classmethod
    def _reward_matches_status(cls, reward: float | None, info: ValidationInfo) -> float | None:
        status = info.data.get("status")
        if status == "error" and reward is not None:
            raise PydanticCustomError("reward_on_error_row", "an infrastructure error has no reward: must be null")
        if status in ("ok", "truncated") and reward is None:
            raise PydanticCustomError("reward_missing", "must be a number in [0, 1] when status is '{status}' (null "
                                      "only when status is 'error')", {"status": status})
        return reward

    @field_validator("episode")
    @classmethod
    def _episode_matches_row(cls, episode: Episode, info: ValidationInfo) -> Episode:
        for name in ("task_id", "sample_index", "status"):
            if name in info.data and getattr(episode, name) != info.data[name]:
                raise PydanticCustomError("episode_disagrees", "episode.{name} is {episode} but the row's {name} is {row}",
                                          {"name": name, "episode": reprlib.repr(getattr(episode, name)),
                                           "row": reprlib.repr(info.data[name])})
        return episode

    @property
    def key(self) -> tuple[str, int]:
        return self.task_id, self.sample_index

    def to_episode(self) -> Episode:
        """The Episode the row was made from, its samples back from `token_samples`."""
        samples = [TrainingSample.model_validate(s) for s in self.token_samples]
        return self.episode.model_copy(update={"samples": samples})


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
