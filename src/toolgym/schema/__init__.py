"""The data model shared by every stage (pydantic v2, JSON-serializable, versioned)."""

from toolgym.schema.checks import (
    AnswerContains,
    AnswerEquals,
    Check,
    CheckResult,
    DiffOnly,
    ExpectedChange,
    FieldEquals,
    RowAbsent,
    RowExists,
    ToolCalled,
    ToolNotCalled,
    Verdict,
)
from toolgym.schema.episode import CheckFlip, Episode, Status, StopReason, Timings, TokenTurn, TrainingSample
from toolgym.schema.messages import Message, Role, ToolCall, ToolSpec
from toolgym.schema.task import EVAL_SPLITS, SCHEMA_VERSION, Split, Task, UserScenario

__all__ = [
    "EVAL_SPLITS",
    "SCHEMA_VERSION",
    "AnswerContains",
    "AnswerEquals",
    "Check",
    "CheckFlip",
    "CheckResult",
    "DiffOnly",
    "Episode",
    "ExpectedChange",
    "FieldEquals",
    "Message",
    "Role",
    "RowAbsent",
    "RowExists",
    "Split",
    "Status",
    "StopReason",
    "Task",
    "Timings",
    "TokenTurn",
    "ToolCall",
    "ToolCalled",
    "ToolNotCalled",
    "ToolSpec",
    "TrainingSample",
    "UserScenario",
    "Verdict",
]
