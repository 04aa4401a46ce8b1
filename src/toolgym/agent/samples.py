"""Training samples from token turns, by extension only: never train on tokens the model did not produce.

loss_mask is 1 exactly on sampled ids (the turn's stop token included) and 0 on everything the
loop wrote (system, user, tool results, template scaffolding) (docs/architecture.md,
"token-in/token-out" and "masks from the sampler").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolgym.schema import TokenTurn, TrainingSample


@dataclass(frozen=True)
class TurnSpan:
    """Where one agent turn's sampled ids lie in its training sample: input_ids[start:end]."""

    turn: int  # index into the episode's token_turns
    start: int
    end: int


def _extends(prompt_ids: Sequence[int], sequence: Sequence[int]) -> bool:
    return len(prompt_ids) >= len(sequence) and list(prompt_ids[: len(sequence)]) == list(sequence)


def _chains(token_turns: Sequence[TokenTurn]) -> list[tuple[TrainingSample, list[TurnSpan]]]:
    """Each sample with the spans of the turns it holds (the one walk both views below come from)."""
    chains: list[tuple[TrainingSample, list[TurnSpan]]] = []
    input_ids: list[int] = []
    loss_mask: list[int] = []
    logprobs: list[float] = []
    spans: list[TurnSpan] = []
    for index, turn in enumerate(token_turns):
        if input_ids and _extends(turn.prompt_ids, input_ids):
            added = turn.prompt_ids[len(input_ids) :]
        else:
            if input_ids:
                chains.append((TrainingSample(input_ids=input_ids, loss_mask=loss_mask, sampler_logprobs=logprobs),
                               spans))
            input_ids, loss_mask, logprobs, spans = [], [], [], []
            added = turn.prompt_ids
        input_ids.extend(added)
        loss_mask.extend([0] * len(added))
        logprobs.extend([0.0] * len(added))
        spans.append(TurnSpan(index, len(input_ids), len(input_ids) + len(turn.completion_ids)))
        input_ids.extend(turn.completion_ids)
        loss_mask.extend([1] * len(turn.completion_ids))
        logprobs.extend(turn.logprobs)
    if input_ids:
        chains.append((TrainingSample(input_ids=input_ids, loss_mask=loss_mask, sampler_logprobs=logprobs), spans))
    return chains


def build_samples(token_turns: Sequence[TokenTurn]) -> list[TrainingSample]:
    """One sample per maximal chain of turns whose prompt starts with the chain so far.

    A prompt that does not extend the chain (a template rewrote history) starts a new sample.
    """
    return [sample for sample, _ in _chains(token_turns)]


def turn_spans(token_turns: Sequence[TokenTurn]) -> list[list[TurnSpan]]:
    """Per sample of `build_samples(token_turns)`, the spans of its turns, in order: how turn-level credit
    reaches each turn's tokens, also when a rewritten history split the episode into several samples."""
    return [spans for _, spans in _chains(token_turns)]
