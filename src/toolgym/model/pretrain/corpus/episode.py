"""What the corpus produces: an episode (context, tools, messages) and the marks that measure its skills."""

from __future__ import annotations

from dataclasses import dataclass, field

from toolgym.schema import Message, ToolSpec


@dataclass(frozen=True)
class Mark:
    """A value inside assistant message `message` that measures `skill`.

    `argument` names the tool-call argument holding it (None: the value is quoted in text).
    """

    message: int
    value: str
    skill: str
    argument: str | None = None


@dataclass
class CorpusEpisode:
    """One synthetic episode: the context the agent sees, the messages, and its skill marks."""

    skill: str
    env_variables: dict[str, str]
    tools: list[ToolSpec]
    messages: list[Message]
    marks: list[Mark] = field(default_factory=list)
    policy: str = ""

    def user_prompts(self) -> list[str]:
        return [m.content or "" for m in self.messages if m.role == "user"]
