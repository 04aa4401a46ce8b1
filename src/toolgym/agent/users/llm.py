"""LLMUserSimulator: a model plays the customer over any OpenAI-compatible chat endpoint.

The system prompt comes from the task's `user_scenario` (persona, situation, known facts) plus the
stop-token rules; the user-side tools of the environment (e.g. the phone's settings) are offered as
function tools and run on the episode's Environment with caller "user". The model's view of the
conversation is flipped: the agent's messages are its "user" turns, its own replies are
"assistant" turns; the agent's tool calls and results stay hidden, as they are from a customer.
Uses the official `openai` client; any server failure is a UserSimulatorError (an infrastructure
error of the episode, never a reward).
"""

from __future__ import annotations

import json
from typing import Any

import openai

from toolgym.agent.user import (
    OUT_OF_SCOPE_MARKER,
    STOP_MARKER,
    TRANSFER_MARKER,
    UserTermination,
    split_termination,
)
from toolgym.agent.users.scripted import UserSimulatorError, fact_label
from toolgym.envs import EnvError, Environment
from toolgym.policy.openai_client import LoopBoundClient
from toolgym.schema import Message, Task, UserScenario

RULES = f"""Rules:
- Write only what the customer says: short and plain, one to three sentences.
- You hold your phone. When the agent asks you to do something on it, do it with your tools, then say what you see. Never claim you did something you did not do with a tool, and do nothing on your own initiative.
- Share a fact from the list only when the agent asks for it. Never invent facts.
- When your phone shows the problem is solved, thank the agent and end your message with {STOP_MARKER}.
- If the agent transfers you to a human agent or technician, end your message with {TRANSFER_MARKER}.
- If the agent asks for something you do not know and cannot find on your phone, end your message with {OUT_OF_SCOPE_MARKER}."""


def user_system_prompt(scenario: UserScenario) -> str:
    """The customer's instructions: who they are, what they want, what they know, how to end."""
    lines = ["You are playing a customer chatting with a support agent. Stay in character."]
    if scenario.persona:
        lines.append(f"Persona: {scenario.persona}")
    lines.append(f"Situation and goal: {scenario.instructions}")
    if scenario.known_info:
        lines.append("Facts you know:")
        lines += [f"- {fact_label(key)}: {value}" for key, value in scenario.known_info.items()]
    lines.append(RULES)
    return "\n".join(lines)


class LLMUserSession:
    """One episode's model-played customer: its own transcript, and the episode's environment."""

    def __init__(self, owner: LLMUserSimulator, task: Task, env: Environment) -> None:
        if task.user_scenario is None:
            raise UserSimulatorError(f"task {task.id} has no user_scenario; an LLM user has no part to play")
        self.owner = owner
        self.name = owner.name
        self.env = env
        self.scenario = task.user_scenario
        self.tools = [spec.to_openai() for spec in env.tool_specs("user")]
        self.transcript: list[dict[str, Any]] = [{"role": "system", "content": user_system_prompt(self.scenario)}]
        self.seen = 0  # history messages already folded into the transcript
        self.tool_calls = 0

    def _absorb(self, history: list[Message]) -> None:
        """Fold the agent's new text into the transcript (flipped roles; hidden tool traffic)."""
        for index in range(self.seen, len(history)):
            message = history[index]
            if message.role == "assistant" and message.content and message.content.strip():
                self.transcript.append({"role": "user", "content": message.content})
            elif message.role == "user" and index == 1:  # the opening line: the customer's own words
                self.transcript.append({"role": "assistant", "content": message.content or ""})
        self.seen = len(history)

    def _run_tool(self, call: Any) -> dict[str, Any]:
        name = call.function.name
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError as exc:
            content = f"Error: arguments of {name} are not valid JSON ({exc.msg})"
        else:
            try:
                content = self.env.call_tool(name, arguments, caller="user").content
            except EnvError as exc:
                raise UserSimulatorError(f"device tool {name} crashed: {exc}") from exc
        self.tool_calls += 1
        return {"role": "tool", "tool_call_id": call.id, "content": content}

    async def _complete(self, with_tools: bool) -> Any:
        owner = self.owner
        kwargs: dict[str, Any] = {"tools": self.tools} if with_tools and self.tools else {}
        try:
            response = await owner.client().chat.completions.create(
                model=owner.model, messages=self.transcript,  # type: ignore[arg-type]
                temperature=owner.temperature, max_tokens=owner.max_tokens, seed=owner.seed, **kwargs,
            )
        except openai.OpenAIError as exc:
            raise UserSimulatorError(f"{owner.base_url}: {type(exc).__name__}: {exc}") from exc
        if not response.choices:
            raise UserSimulatorError(f"{owner.base_url}: the server returned no choices")
        return response.choices[0].message

    async def respond(self, history: list[Message]) -> tuple[str, UserTermination | None]:
        self._absorb(history)
        for round_index in range(self.owner.max_tool_rounds + 1):
            message = await self._complete(with_tools=round_index < self.owner.max_tool_rounds)
            calls = list(message.tool_calls or [])
            if not calls:
                text = (message.content or "").strip()
                self.transcript.append({"role": "assistant", "content": text})
                return split_termination(text)
            self.transcript.append({
                "role": "assistant", "content": message.content or "",
                "tool_calls": [{"id": c.id, "type": "function",
                                "function": {"name": c.function.name, "arguments": c.function.arguments}}
                               for c in calls],
            })
            for call in calls:
                self.transcript.append(self._run_tool(call))
        raise UserSimulatorError("unreachable: the last round offers no tools")  # pragma: no cover


class LLMUserSimulator:
    """A user simulator over an OpenAI-compatible endpoint; one session per episode (`for_episode`)."""

    def __init__(
        self, base_url: str, model: str, *, api_key: str = "EMPTY", temperature: float = 0.0, max_tokens: int = 256,
        max_tool_rounds: int = 4, seed: int | None = None, timeout_s: float = 60.0, max_retries: int = 1,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.name = f"llm:{model}"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_tool_rounds = max_tool_rounds
        self.seed = seed
        self._clients = LoopBoundClient(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries)

    def client(self) -> openai.AsyncOpenAI:
        """The client of the running event loop (see `LoopBoundClient`)."""
        return self._clients.get()

    def for_episode(self, task: Task, env: Environment) -> LLMUserSession:
        return LLMUserSession(self, task, env)

    async def respond(self, history: list[Message]) -> tuple[str, UserTermination | None]:
        raise UserSimulatorError(
            "LLMUserSimulator acts on the episode's environment: bind it with for_episode(task, env) "
            "(run_episode does this)"
        )

    async def close(self) -> None:
        await self._clients.close()
