"""TRL's colocated weight sync through vLLM's in-place reload.

TRL's colocate mode pushes each parameter with the model's own `load_weights([(name, tensor)])`. Once vLLM has
processed a layer's weights after loading (its CPU kernels repack linear weights, dropping the parameters' weight
loaders), that call fails, and a partial push leaves layers of two policies. vLLM's `reload_weights` is its API
for replacing weights in place: it restores the loaders, takes the whole model in one streamed pass and processes
it again. The push keeps TRL's own parameter walk (gathering under ZeRO-3/FSDP, PEFT merged, vLLM names), so only
the call that receives the tensors changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

EMBEDDING = "model.embed_tokens.weight"


def streamed_weights(generation: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """TRL's parameters one at a time, plus the tied lm_head right after the embedding (while it is gathered):
    `named_parameters` lists a tied tensor once, and vLLM keeps a stale head without a word when it is missing."""
    config = getattr(generation.model, "config", None)
    tied = bool(getattr(config, "tie_word_embeddings", False))
    for name, tensor in generation._iter_named_params():
        yield name, tensor
        if tied and name == EMBEDDING:
            yield "lm_head.weight", tensor


def reload_colocated(generation: Any) -> None:
    """Replace the colocated engine's weights with the trainer's, then drop prefix states of the old ones."""
    if generation.enable_sleep_mode:
        generation.llm.wake_up(tags=["weights"])
        generation._llm_weights_sleeping = False
    generation.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": streamed_weights(generation)})
    generation.llm.reset_prefix_cache()


def install(trainer: Any) -> None:
    """Route the trainer's colocated weight sync through `reload_colocated` (server mode keeps TRL's NCCL push)."""
    generation = getattr(trainer, "vllm_generation", None)
    if generation is None or generation.mode != "colocate":
        return
    generation.sync_weights = lambda: reload_colocated(generation)
