"""ScriptedUserSimulator: a deterministic customer that follows a task's `user_scenario`.

Each turn it reads the agent's latest message and, in this order:
1. ends with ###TRANSFER### if the agent handed it to a human (a successful transfer tool call, or
   "I'm transferring you" in the text);
2. performs every device action the message asks for (the app's `user_actions` vocabulary) as a
   user-side tool call on the same Environment (caller "user"), and says what it saw;
3. reveals each `known_info` fact the message asks about (a key lists its aliases after '|');
4. looks at its phone (the task's `metadata["user_goal"]`: a user tool and the fields it must
   show) and ends with ###STOP### once the problem is solved;
5. otherwise, if the agent asked a question it cannot answer, ends with ###OUT-OF-SCOPE###; if
   not, says the problem is still there.
No model and no randomness: the same agent messages always get the same replies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from toolgym.agent.user import STOP_MARKER, TRANSFER_MARKER, UserTermination, split_termination
from toolgym.envs import EnvError, Environment
from toolgym.envs.user_actions import app_user_actions, normalize, parse_instructions, report_for
from toolgym.schema import Message, Task, ToolCall, UserScenario

OUT_OF_SCOPE_REPLY = "Sorry, I don't know that. ###OUT-OF-SCOPE###"

_TRANSFER_TEXT = re.compile(
    r"\btransfer(?:ring|red)? you\b|\bconnect(?:ing)? you (?:with|to) (?:a|our) (?:human|technician|specialist)"
)
_PROBLEM_QUESTION = re.compile(
    r"how (?:can|may) i help|what (?:seems to be|is) the (?:problem|issue)|what can i do for you|"
    r"what(?:'s| is) (?:going on|wrong|happening)|describe|tell me more|anything else|what happens"
)


class UserSimulatorError(RuntimeError):
    """The simulator cannot play this task (no scenario, not bound to an episode): an infrastructure error."""


def _fact_aliases(key: str) -> list[str]:
    return [a.strip().lower() for a in key.split("|") if a.strip()]


def fact_label(key: str) -> str:
    """The name a fact is spoken under: the first alias of its key."""
    return _fact_aliases(key)[0] if _fact_aliases(key) else key


def describe(value: Any) -> str:
    """A tool result as a customer would read it off the screen: 'key: value' pairs."""
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            label = str(key).replace("_", " ")
            parts.append(f"{label}: ({describe(item)})" if isinstance(item, dict) else f"{label}: {describe(item)}")
        return ", ".join(parts)
    if isinstance(value, list):
        return "; ".join(describe(v) for v in value)
    return str(value)


def _result_value(content: str) -> Any:
    try:
        return json.loads(content)
    except json.JSONDecodeError:
        return content


def goal_met(shown: dict[str, Any], expect: dict[str, Any]) -> bool:
    """Every expected field shows the expected value (a list means any one of them)."""
    for key, wanted in expect.items():
        actual = shown.get(key)
        if isinstance(wanted, list):
            if actual not in wanted:
                return False
        elif actual != wanted:
            return False
    return True


class ScriptedUserSession:
    """One episode's scripted customer: bound to the task's scenario and the episode's environment."""

    def __init__(self, name: str, task: Task, env: Environment, actions: Sequence[Any]) -> None:
        if task.user_scenario is None:
            raise UserSimulatorError(f"task {task.id} has no user_scenario; a scripted user has nothing to follow")
        self.name = name
        self.task = task
        self.scenario: UserScenario = task.user_scenario
        self.env = env
        self.actions = list(actions)
        goal = task.metadata.get("user_goal")
        self.goal: dict[str, Any] | None = goal if isinstance(goal, dict) else None
        self.performed: list[ToolCall] = []  # every user-side call this customer made, in order

    # -- what the agent said ----------------------------------------------------------------------

    @staticmethod
    def _latest_turn(history: list[Message]) -> list[Message]:
        """The agent's messages since the customer last spoke (its tool calls, results and text)."""
        start = 0
        for index in range(len(history) - 1, -1, -1):
            if history[index].role == "user":
                start = index + 1
                break
        return history[start:]

    @staticmethod
    def _transferred(turn: list[Message], text: str) -> bool:
        results = {m.tool_call_id: m.content or "" for m in turn if m.role == "tool"}
        for message in turn:
            for call in message.tool_calls or []:
                if "transfer" in call.name and not results.get(call.id, "").startswith("Error"):
                    return True
        return _TRANSFER_TEXT.search(text) is not None

    # -- acting on the phone ----------------------------------------------------------------------

    def _perform(self, call: ToolCall) -> tuple[str, Any]:
        """Make one user-side call; (report sentence, parsed result or None on error)."""
        self.performed.append(call)
        try:
            result = self.env.call_tool(call.name, call.arguments, caller="user")
        except EnvError as exc:
            raise UserSimulatorError(f"device tool {call.name} crashed: {exc}") from exc
        what = call.name.replace("_", " ")
        if call.arguments:
            what += " (" + ", ".join(f"{k}={v}" for k, v in call.arguments.items()) + ")"
        if result.is_error:
            return f"I tried to {what}, but my phone said: {result.content.removeprefix('Error: ')}", None
        value = _result_value(result.content)
        done = report_for(self.actions, call) or f"I did {what}."
        return f"{done} It shows: {describe(value)}.", value

    def _look_at_phone(self) -> dict[str, Any] | None:
        """Run the goal's user tool (e.g. the device status) and return what it shows."""
        if self.goal is None:
            return None
        call = ToolCall(name=str(self.goal.get("tool")), arguments=dict(self.goal.get("arguments") or {}))
        self.performed.append(call)
        result = self.env.call_tool(call.name, call.arguments, caller="user")
        value = _result_value(result.content)
        return value if isinstance(value, dict) and not result.is_error else None

    def solved(self) -> bool:
        shown = self._look_at_phone()
        return shown is not None and self.goal is not None and goal_met(shown, dict(self.goal.get("expect") or {}))

    # -- one reply --------------------------------------------------------------------------------

    def _facts_asked(self, text: str) -> list[str]:
        said = []
        for key, value in self.scenario.known_info.items():
            if any(re.search(rf"(?<!\w){re.escape(alias)}(?!\w)", text) for alias in _fact_aliases(key)):
                said.append(f"My {fact_label(key)}: {value}.")
        return said

    def reply(self, history: list[Message]) -> str:
        """The customer's next message, with a termination marker when the conversation ends."""
        turn = self._latest_turn(history)
        agent_text = next((m.content or "" for m in reversed(turn) if m.role == "assistant" and m.content), "")
        text = normalize(agent_text)
        if self._transferred(turn, text):
            return f"Okay, I'll wait for the technician. {TRANSFER_MARKER}"
        parts = self._facts_asked(text)
        calls = parse_instructions(self.actions, agent_text)
        for call in calls:
            parts.append(self._perform(call)[0])
        if self.solved():
            parts.append(f"Everything works now, thank you! {STOP_MARKER}")
            return " ".join(parts)
        if parts:
            parts.append("It's still not fixed, though." if calls else "")
            return " ".join(p for p in parts if p)
        if self.goal is None and "?" not in text:
            # No phone to check (e.g. imported tau2 tasks): an answer that asks nothing ends the conversation.
            return f"Thank you, that's all. {STOP_MARKER}"
        if "?" in text and not _PROBLEM_QUESTION.search(text):
            return OUT_OF_SCOPE_REPLY
        shown = self._look_at_phone()
        symptom = f" My phone shows: {describe(shown)}." if shown else ""
        return f"It's still not working. {self.scenario.opening_message or self.task.prompt}{symptom}".strip()

    async def respond(self, history: list[Message]) -> tuple[str, UserTermination | None]:
        return split_termination(self.reply(history))


class ScriptedUserSimulator:
    """Deterministic user simulator for dual-control tasks; one session per episode (`for_episode`).

    `actions`: the instruction vocabulary; default: the `user_actions` of the episode's apps.
    """

    def __init__(self, actions: Sequence[Any] | None = None, name: str = "scripted") -> None:
        self.actions = list(actions) if actions is not None else None
        self.name = name

    def for_episode(self, task: Task, env: Environment) -> ScriptedUserSession:
        actions = self.actions if self.actions is not None else app_user_actions(env.apps)
        return ScriptedUserSession(self.name, task, env, actions)

    async def respond(self, history: list[Message]) -> tuple[str, UserTermination | None]:
        raise UserSimulatorError(
            "ScriptedUserSimulator acts on the episode's environment: bind it with for_episode(task, env) "
            "(run_episode does this)"
        )
