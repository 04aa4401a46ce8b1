"""The user-simulator protocol: dual-control tasks where a simulated user answers the agent.

A simulator ends the conversation with a tau2-style marker in its reply; `split_termination` turns
the marker into the episode's stop reason. Scripted and LLM simulators implement this protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from toolgym.schema import Message, Task

if TYPE_CHECKING:
    from toolgym.envs import Environment

UserTermination = Literal["user_stop", "user_transfer", "user_out_of_scope"]

STOP_MARKER = "###STOP###"
TRANSFER_MARKER = "###TRANSFER###"
OUT_OF_SCOPE_MARKER = "###OUT-OF-SCOPE###"

TERMINATION_MARKERS: dict[str, UserTermination] = {
    STOP_MARKER: "user_stop",
    TRANSFER_MARKER: "user_transfer",
    OUT_OF_SCOPE_MARKER: "user_out_of_scope",
}
MARKER_OF: dict[UserTermination, str] = {v: k for k, v in TERMINATION_MARKERS.items()}


@runtime_checkable
class UserSimulator(Protocol):
    """Plays the user. `history` is the episode's messages from the agent's side (system first).

    Returns the user's next message and, when the user ends the conversation, why.
    """

    name: str

    async def respond(self, history: list[Message]) -> tuple[str, UserTermination | None]: ...


@runtime_checkable
class EpisodeUserFactory(Protocol):
    """A simulator that acts on the episode's environment (dual control: it performs user-side tool
    calls with caller "user") makes one bound simulator per episode, so concurrent episodes never
    share its state. The episode loop calls `for_episode` after the environment is reset.
    """

    name: str

    def for_episode(self, task: Task, env: Environment) -> UserSimulator: ...


def bind_user_simulator(simulator: UserSimulator, task: Task, env: Environment) -> UserSimulator:
    """The simulator to use for one episode: its per-episode copy when it makes one, else itself."""
    for_episode = getattr(simulator, "for_episode", None)
    return for_episode(task, env) if callable(for_episode) else simulator


def split_termination(text: str) -> tuple[str, UserTermination | None]:
    """A reply without its termination marker, and which one it was (None if the user goes on)."""
    for marker, termination in TERMINATION_MARKERS.items():
        if marker in text:
            for other in TERMINATION_MARKERS:
                text = text.replace(other, "")
            return text.strip(), termination
    return text, None
