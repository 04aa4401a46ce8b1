"""OpenAI-format chat messages, tool calls and tool specs: the lingua franca of every stage."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One call of a tool by name with parsed JSON arguments."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None

    @field_validator("arguments", mode="before")
    @classmethod
    def _parse_string_arguments(cls, value: Any) -> Any:
        # OpenAI sends arguments as a JSON string; accept both shapes, store the dict.
        if isinstance(value, str):
            try:
                parsed = json.loads(value) if value.strip() else {}
            except RecursionError:  # pydantic reports ValueError as a field error; RecursionError would escape
                raise ValueError("tool call arguments nest too deeply") from None
            if not isinstance(parsed, dict):
                raise ValueError("tool call arguments must be a JSON object")
            return parsed
        return value

    def to_openai(self, fallback_id: str = "call_0") -> dict[str, Any]:
        """The `{id, type: "function", function: {name, arguments}}` shape prime-rl and TRL read."""
        return {
            "id": self.id or fallback_id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> ToolCall:
        function = data.get("function", data)
        return cls(name=function["name"], arguments=function.get("arguments") or {}, id=data.get("id"))


class Message(BaseModel):
    """A chat message in OpenAI format; assistant tool calls are kept parsed."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning_content: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """Plain dict for chat templates and OpenAI clients (arguments as a JSON string)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content if self.content is not None else ""}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai(f"call_{i}") for i, c in enumerate(self.tool_calls)]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.reasoning_content:
            out["reasoning_content"] = self.reasoning_content
        return out

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> Message:
        calls = data.get("tool_calls")
        return cls(
            role=data["role"],
            content=data.get("content"),
            tool_calls=[ToolCall.from_openai(c) for c in calls] if calls else None,
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            reasoning_content=data.get("reasoning_content"),
        )


class ToolSpec(BaseModel):
    """An OpenAI function schema: `{"type": "function", "function": {name, description, parameters}}`."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> ToolSpec:
        function = data.get("function", data)
        return cls(
            name=function["name"],
            description=function.get("description", ""),
            parameters=function.get("parameters") or {"type": "object", "properties": {}},
        )

    def signature(self) -> str:
        """One-line signature for compact prompts: `name(arg: type, opt?: type) - description`."""
        props = self.parameters.get("properties", {})
        required = set(self.parameters.get("required", []))
        args = []
        for arg, schema in props.items():
            kind = schema.get("type", "any")
            if "enum" in schema:
                kind = "|".join(str(v) for v in schema["enum"])
            args.append(f"{arg}{'' if arg in required else '?'}: {kind}")
        first_line = self.description.strip().splitlines()[0] if self.description.strip() else ""
        return f"{self.name}({', '.join(args)})" + (f" - {first_line}" if first_line else "")
