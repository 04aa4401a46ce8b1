"""One Policy interface for every model: in-process, OpenAI-compatible server, or oracle replay.

Two modes, chosen by the policy:
- token mode (`policy.tokenizer` is set): the episode loop renders prompt token ids itself and the
  policy returns the exact sampled ids and their log-probs (token-in/token-out; trainable);
- chat mode (`policy.tokenizer` is None): the policy takes OpenAI messages + tools and returns an
  assistant Message with parsed tool calls (hosted teachers, user simulators, the oracle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from toolgym.schema import Message, Task


@dataclass
class SamplingParams:
    """Per-call sampling settings; temperature 0 means greedy."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0: off
    max_new_tokens: int = 256
    stop: list[str] = field(default_factory=list)
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "max_new_tokens": self.max_new_tokens,
            "stop": list(self.stop),
            "seed": self.seed,
        }


@dataclass
class GenerationRequest:
    """One pending turn of one episode.

    Token mode reads `prompt_ids`; chat mode reads `messages` and `tools` (OpenAI dicts).
    `task` and `turn` let the oracle replay a reference solution; other policies ignore them.
    `grammar` (token mode): a Lark grammar, in llguidance's dialect, that the completion must follow;
    a policy that cannot hold its output to one refuses the request rather than ignore it.
    """

    sampling: SamplingParams
    prompt_ids: list[int] | None = None
    grammar: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    task: Task | None = None
    turn: int = 0
    sample_index: int = 0  # which sample of the task this episode is: seeds per-episode choices (teachers)


@dataclass
class Generation:
    """What the policy produced for one request."""

    text: str
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: Literal["stop", "length"] = "stop"
    message: Message | None = None  # chat mode: the parsed assistant message
    teacher_mistake: str | None = None  # an imperfect teacher's deliberate mistake in this episode


class PolicyError(RuntimeError):
    """The policy could not produce a generation (server died, bad response): an infrastructure error."""


def refuse_grammar(request: GenerationRequest, policy: str) -> None:
    """Raise when `request` carries a grammar: `policy` cannot hold its output to one, and ignoring it would
    return unconstrained text as if it were."""
    if request.grammar is not None:
        raise PolicyError(f"{policy} cannot hold a completion to a grammar; the hf engine can "
                          "(toolgym serve policy runs on it)")


class Policy:
    """Subclass and implement `generate`; the runner awaits it from many episodes at once."""

    name: str = "policy"
    checkpoint: str | None = None
    weights: str | None = None  # fingerprint of the checkpoint's weight files (policy/weights.py), when local
    tokenizer: Any = None  # a transformers tokenizer in token mode; None in chat mode

    async def generate(self, request: GenerationRequest) -> Generation:
        raise NotImplementedError

    async def close(self) -> None:
        """Release servers, threads and models."""
