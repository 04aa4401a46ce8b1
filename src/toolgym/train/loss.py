"""Token log-probs and the SFT loss at trained positions only.

Most positions of an agent sample are prompt and tool output, so the LM head (vocabulary-wide, the
costliest matmul on small models) runs only where a token is trained: hidden states come from the
model's decoder, the head is applied to the selected rows. Models whose logits are more than the
head (soft-capping, logit scale) and models wrapped for distributed training (whose hooks live on
the outer forward) take the full forward instead; both paths give the same numbers.

Samples of one app (or GRPO's G episodes of one task) begin with the same system prompt, often most
of their tokens. When every row of a micro-batch starts with the same ids, that prefix runs once
and the rows continue from its cache: the same numbers, and gradients reach the prefix through the
cache, for a fraction of the compute.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from toolgym.policy.cache_arg import cache_kwargs, output_cache
from toolgym.train.batching import IGNORE_INDEX, Batch

MIN_SHARED_PREFIX = 32  # below this, one more forward call costs more than it saves
_LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "logits_scaling", "output_multiplier_scale")


def causal_lm(model: Any) -> Any:
    """The transformers *ForCausalLM under peft (LoRA layers stay injected in it)."""
    from peft import PeftModel

    if isinstance(model, PeftModel):
        return model.get_base_model()
    return model


def _head_is_plain(model: Any) -> bool:
    if isinstance(model, torch.nn.parallel.DistributedDataParallel) or hasattr(model, "_fsdp_wrapped_module"):
        return False
    config = getattr(causal_lm(model), "config", None)
    return not any(getattr(config, name, None) not in (None, 1.0) for name in _LOGIT_TRANSFORMS)


def shared_prefix_length(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> int:
    """Leading ids every row has in common, leaving each row at least one token of its own."""
    if input_ids.shape[0] < 2:
        return 0
    limit = int(attention_mask.sum(dim=1).min()) - 1
    same = (input_ids[:, :limit] == input_ids[:1, :limit]).all(dim=0)
    differs = (~same).nonzero()
    return int(differs[0]) if len(differs) else max(limit, 0)


def decoder_hidden(decoder: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Last hidden states [B, T, H]; a prefix shared by all rows (right padding) is computed once."""
    prefix = shared_prefix_length(input_ids, attention_mask)
    if prefix < MIN_SHARED_PREFIX:
        return decoder(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    rows = input_ids.shape[0]
    head = decoder(input_ids=input_ids[:1, :prefix], use_cache=True)
    cache = output_cache(head)
    cache.batch_repeat_interleave(rows)
    tail = decoder(input_ids=input_ids[:, prefix:], attention_mask=attention_mask, use_cache=True,
                   **cache_kwargs(decoder, cache)).last_hidden_state
    return torch.cat([head.last_hidden_state.expand(rows, -1, -1), tail], dim=1)


def supervised_logits(model: Any, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits at trained positions [N, vocab], their target ids [N])."""
    selected = batch.targets != IGNORE_INDEX
    targets = batch.targets[selected]
    if _head_is_plain(model):
        lm = causal_lm(model)
        hidden = decoder_hidden(lm.get_decoder(), batch.input_ids, batch.attention_mask)
        logits = lm.get_output_embeddings()(hidden[selected])
    else:
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False).logits
        logits = logits[selected]
    return logits, targets


def token_logprobs(model: Any, batch: Batch) -> torch.Tensor:
    """log p(target) at every trained position, in float32 (for SFT, RFT and policy-gradient losses)."""
    logits, targets = supervised_logits(model, batch)
    return -F.cross_entropy(logits.float(), targets, reduction="none")


def nll_sum(model: Any, batch: Batch) -> torch.Tensor:
    """Summed negative log-likelihood of the trained tokens (divide by the step's token count)."""
    logits, targets = supervised_logits(model, batch)
    return F.cross_entropy(logits.float(), targets, reduction="sum")
