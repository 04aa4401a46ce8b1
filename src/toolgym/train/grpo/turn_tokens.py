"""Turn advantages onto tokens: each agent turn's advantage on exactly the sampled ids of that turn, in
whichever of the episode's training samples holds it (a template that rewrote history splits an episode
into several). Anything that does not line up stops the run rather than crediting the wrong tokens."""

from __future__ import annotations

from collections.abc import Sequence

from toolgym.agent.samples import turn_spans
from toolgym.algorithms.turn_credit import TurnCreditError
from toolgym.schema import Episode


def token_advantages(episode: Episode, per_turn: Sequence[float]) -> list[list[float]]:
    """Per training sample of the episode, an advantage per input position: the turn's on its sampled ids,
    0 on everything the loop wrote (never trained: loss_mask 0 there)."""
    name = f"task {episode.task_id!r} sample {episode.sample_index}"
    if len(per_turn) != len(episode.token_turns):
        raise TurnCreditError(f"{name}: {len(per_turn)} turn advantages for {len(episode.token_turns)} turns")
    spans = turn_spans(episode.token_turns)
    if len(spans) != len(episode.samples):
        raise TurnCreditError(f"{name}: its turns chain into {len(spans)} samples, the episode holds "
                              f"{len(episode.samples)}")
    result: list[list[float]] = []
    for sample, sample_spans in zip(episode.samples, spans, strict=True):
        values = [0.0] * len(sample.input_ids)
        covered = 0
        for span in sample_spans:
            if span.end > len(values) or not all(sample.loss_mask[span.start:span.end]):
                raise TurnCreditError(f"{name}: turn {span.turn + 1}'s sampled ids are not where its sample trains")
            values[span.start:span.end] = [per_turn[span.turn]] * (span.end - span.start)
            covered += span.end - span.start
        if covered != sum(sample.loss_mask):
            raise TurnCreditError(f"{name}: its sample trains {sum(sample.loss_mask)} tokens, its turns sampled {covered}")
        result.append(values)
    return result
