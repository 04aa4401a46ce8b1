"""Training samples from token turns, by extension only: never train on tokens the model did not produce.

loss_mask is 1 exactly on sampled ids (the turn's stop token included) and 0 on everything the
loop wrote (system, user, tool results, template scaffolding) (docs/architecture.md,
"token-in/token-out" and "masks from the sampler").
"""

from __future__ import annotations

from collections.abc import Sequence

from toolgym.schema import TokenTurn, TrainingSample


def _extends(prompt_ids: Sequence[int], sequence: Sequence[int]) -> bool:
    return len(prompt_ids) >= len(sequence) and list(prompt_ids[: len(sequence)]) == list(sequence)


def build_samples(token_turns: Sequence[TokenTurn]) -> list[TrainingSample]:
    """One sample per maximal chain of turns whose prompt starts with the chain so far.

    A prompt that does not extend the chain (a template rewrote history) starts a new sample.
    """
    samples: list[TrainingSample] = []
    input_ids: list[int] = []
    loss_mask: list[int] = []
    logprobs: list[float] = []
    for turn in token_turns:
        if input_ids and _extends(turn.prompt_ids, input_ids):
            added = turn.prompt_ids[len(input_ids) :]
        else:
            if input_ids:
                samples.append(TrainingSample(input_ids=input_ids, loss_mask=loss_mask, sampler_logprobs=logprobs))
            input_ids, loss_mask, logprobs = [], [], []
            added = turn.prompt_ids
        input_ids.extend(added)
        loss_mask.extend([0] * len(added))
        logprobs.extend([0.0] * len(added))
        input_ids.extend(turn.completion_ids)
        loss_mask.extend([1] * len(turn.completion_ids))
        logprobs.extend(turn.logprobs)
    if input_ids:
        samples.append(TrainingSample(input_ids=input_ids, loss_mask=loss_mask, sampler_logprobs=logprobs))
    return samples
