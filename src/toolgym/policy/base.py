"""One Policy interface for every model: in-process, OpenAI-compatible server, or oracle replay.

Two modes, chosen by the policy:
- token mode (`policy.tokenizer` is set): the episode loop renders prompt token ids itself and the
  policy returns the exact sampled ids and their log-probs (token-in/token-out; trainable);
- chat mode (`policy.tokenizer` is None): the policy takes OpenAI messages + tools and returns an
  assistant Message with parsed tool calls (hosted teachers, user simulators, the oracle).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import Field

from toolgym.schema import Message, Task
from toolgym.schema.section import Section


class Sampling(Section):
    """How each turn is sampled: the one home of these settings' defaults, which every command's config, the
    per-call `SamplingParams` and the teacher settings share."""

    temperature: float = Field(1.0, ge=0)
    """Sampling temperature (0: greedy)."""
    top_p: float = Field(1.0, gt=0, le=1)
    """Nucleus sampling mass (1: off)."""
    top_k: int = Field(0, ge=0)
    """Keep only the k most likely tokens (0: off)."""
    max_new_tokens: int = Field(512, ge=1)
    """Generation budget per turn, tokens."""

    def to_params(self, *, seed: int | None = None, stop: Sequence[str] = (), greedy: bool = False) -> SamplingParams:
        """The per-call SamplingParams of these settings; `greedy` keeps only the budget (temperature 0, no
        truncation), as an eval's greedy pass samples."""
        if greedy:
            return SamplingParams(temperature=0.0, max_new_tokens=self.max_new_tokens, stop=list(stop), seed=seed)
        return SamplingParams(temperature=self.temperature, top_p=self.top_p, top_k=self.top_k,
                              max_new_tokens=self.max_new_tokens, stop=list(stop), seed=seed)


_DEFAULT_SAMPLING = Sampling()


@dataclass
class SamplingParams:
    """Per-call sampling settings; temperature 0 means greedy. Defaults are `Sampling`'s."""

    temperature: float = _DEFAULT_SAMPLING.temperature
    top_p: float = _DEFAULT_SAMPLING.top_p
    top_k: int = _DEFAULT_SAMPLING.top_k  # 0: off
    max_new_tokens: int = _DEFAULT_SAMPLING.max_new_tokens
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


@runtime_checkable
class TrainableEngine(Protocol):
    """A policy that samples a training run's rollouts from the weights being trained (GRPO's engine).

    The trainer names the weights it holds before each step's rollouts and each eval (`weights_changed`: a new
    label means they moved, so the engine must serve them before it samples again), reads what the engine did
    to follow them into the step's metrics row (`sync_metrics`; {} when there is nothing to say) and closes it
    at the end. Engines are built by `toolgym.policy.engines.build_trainable_engine`, which checks this.
    """

    name: str
    checkpoint: str | None
    tokenizer: Any

    async def generate(self, request: GenerationRequest) -> Generation: ...

    def weights_changed(self, checkpoint: str | None = None) -> None: ...

    def sync_metrics(self) -> dict[str, Any]: ...

    async def close(self) -> None: ...
