"""Episode: one agent run on one task, with the exact tokens the sampler produced.

Token-in/token-out: `token_turns` hold the ids sent and sampled each turn; `samples` are the
training sequences built from them by extension, never by re-rendering history.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolgym.schema.checks import Verdict
from toolgym.schema.messages import Message, ToolSpec
from toolgym.schema.task import Split

EPISODE_SCHEMA_VERSION = "toolgym.episode/1"

Status = Literal["ok", "truncated", "error"]
StopReason = Literal[
    "answer",  # the agent replied without a tool call
    "done_tool",  # the agent called the done tool
    "max_turns",
    "max_tokens",  # a turn hit max_new_tokens without finishing
    "context",  # the next turn would not fit the context budget
    "timeout",  # the per-episode wall clock ran out
    "user_stop",
    "user_transfer",
    "user_out_of_scope",
    "format_errors",  # max_format_errors malformed tool calls
    "error",
]


class TokenTurn(BaseModel):
    """What one generation call saw and produced, exactly as token ids."""

    model_config = ConfigDict(extra="forbid")

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    finish_reason: str = "stop"

    @model_validator(mode="after")
    def _aligned(self) -> TokenTurn:
        if len(self.logprobs) != len(self.completion_ids):
            raise ValueError(
                f"logprobs ({len(self.logprobs)}) and completion_ids ({len(self.completion_ids)}) differ in length"
            )
        return self


class TrainingSample(BaseModel):
    """A training sequence: loss_mask is 1 exactly on sampled tokens (stop token included)."""

    model_config = ConfigDict(extra="forbid")

    input_ids: list[int]
    loss_mask: list[int]
    sampler_logprobs: list[float]

    @model_validator(mode="after")
    def _aligned(self) -> TrainingSample:
        n = len(self.input_ids)
        if len(self.loss_mask) != n or len(self.sampler_logprobs) != n:
            raise ValueError(
                f"input_ids ({n}), loss_mask ({len(self.loss_mask)}) and sampler_logprobs "
                f"({len(self.sampler_logprobs)}) must have one entry per token"
            )
        return self


class CheckFlip(BaseModel):
    """A check whose earned share of its weight changed during one agent turn: up when a write landed,
    down when one was undone or did collateral damage (lost progress)."""

    model_config = ConfigDict(extra="forbid")

    turn: int  # the agent turn (1 = the first), whose state after it differs from the state before it
    check: int  # index among the verdict's checks
    label: str
    before: float  # earned share of the check's weight before the turn, 0..1
    after: float


class Timings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    generation_s: float = 0.0
    env_s: float = 0.0
    verifier_s: float = 0.0
    total_s: float = 0.0


class Episode(BaseModel):
    """The full record of one episode; results.jsonl rows are derived from it."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = EPISODE_SCHEMA_VERSION
    task_id: str
    env: str
    split: Split = "train"
    sample_index: int = 0
    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    final_answer: str | None = None
    verdict: Verdict | None = None
    status: Status = "ok"
    stop_reason: StopReason = "answer"
    error: str | None = None
    turns: int = 0
    tool_calls_by_tool: dict[str, int] = Field(default_factory=dict)
    format_errors: int = 0
    tool_errors: int = 0
    timings: Timings = Field(default_factory=Timings)
    token_turns: list[TokenTurn] = Field(default_factory=list)
    samples: list[TrainingSample] = Field(default_factory=list)
    policy: str = ""
    checkpoint: str | None = None
    sampling: dict[str, float | int | str | list[str] | None] = Field(default_factory=dict)
    user_simulator: str | None = None
    user_termination: str | None = None
    teacher_mistake: str | None = None  # the mistake an imperfect teacher played in this episode, if any
    # With the loop's turn_progress on (toolgym.verify.progress): the weighted share of the task's checks
    # holding on the seed state (progress[0]) and after each agent turn t (progress[t]); the last is the
    # verdict's partial_score. None: not tracked.
    progress: list[float] | None = None
    check_flips: list[CheckFlip] = Field(default_factory=list)

    @property
    def reward(self) -> float:
        return self.verdict.reward if self.verdict and self.verdict.error is None else 0.0

    @property
    def partial_score(self) -> float:
        return self.verdict.partial_score if self.verdict and self.verdict.error is None else 0.0

    @property
    def succeeded(self) -> bool:
        return self.status != "error" and self.verdict is not None and self.verdict.passed
