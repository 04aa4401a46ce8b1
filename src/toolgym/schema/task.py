"""Task: what the agent is asked, in which environment and context, and how success is checked."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolgym.schema.checks import Check
from toolgym.schema.messages import ToolCall

SCHEMA_VERSION = "toolgym.task/1"

# train: training tasks; heldout_tasks: held-out tasks of training environments;
# heldout_env: tasks of an environment never seen in training.
Split = Literal["train", "heldout_tasks", "heldout_env"]
EVAL_SPLITS: tuple[Split, ...] = ("heldout_tasks", "heldout_env")


class UserScenario(BaseModel):
    """For dual-control tasks: who the simulated user is and what they know and want."""

    model_config = ConfigDict(extra="forbid")

    persona: str = ""
    instructions: str
    known_info: dict[str, str] = Field(default_factory=dict)
    opening_message: str | None = None


class Task(BaseModel):
    """One task of the dataset. `reference_solution` replays to reward 1 in a fresh environment."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = SCHEMA_VERSION
    id: str
    env: str
    env_version: str
    prompt: str
    split: Split = "train"
    family: str = ""
    difficulty: int = Field(default=1, ge=1, le=3)
    task_modality: Literal["tool_use", "computer_use"] = "tool_use"
    env_variables: dict[str, str] = Field(default_factory=dict)
    data_id: str | None = None
    data_version: str | None = None
    checks: list[Check] = Field(default_factory=list)
    verifier_code: str | None = None  # Fleet form: def validate_task(env, final_answer=None) -> int
    reference_solution: list[ToolCall] = Field(default_factory=list)
    expected_answer: str | None = None
    user_scenario: UserScenario | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def is_eval(self) -> bool:
        return self.split != "train"
