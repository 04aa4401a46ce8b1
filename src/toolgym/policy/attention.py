"""Our own attention layouts inside a transformers model, for the decode loop and batched prefill.

transformers lets a model's attention be any registered function. We register one that looks at
the mask it is given: an `AttentionLayout` (a decode batch, a packed prefill) computes attention
itself from its own states; anything else (another thread's forward, say) goes to the
implementation the model was configured with. `layout_attention` switches a model to it for a
block; `layout_masks` passes a layout where the model expects its per-layer-type masks.
Layouts compute in the dtype of the states they keep, never under autocast: their shapes change
every step, and on CPU each new shape a bf16 kernel sees stays cached for the life of the process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

ATTENTION_NAME = "toolgym_layout"


class AttentionLayout:
    """Attention computed by the layout: given one layer's new queries, keys and values [batch, heads, tokens, dim]."""

    def attention(self, layer: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                  scaling: float) -> torch.Tensor:
        """The attention output as transformers' attention functions return it: [batch, tokens, heads, dim]."""
        raise NotImplementedError


def _layout_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: Any, scaling: float | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    if isinstance(attention_mask, AttentionLayout):
        scale = scaling if scaling is not None else query.shape[-1] ** -0.5
        with torch.autocast(query.device.type, enabled=False):
            return attention_mask.attention(module.layer_idx, query, key, value, scale), None
    previous = _configured.get(id(getattr(module, "config", None)), "sdpa")
    fallback = ALL_ATTENTION_FUNCTIONS.get_interface(previous, sdpa_attention_forward)
    return fallback(module, query, key, value, attention_mask, scaling=scaling, **kwargs)


AttentionInterface.register(ATTENTION_NAME, _layout_attention)
_configured: dict[int, str] = {}  # id(config) -> the attention implementation it had before `layout_attention`


@contextlib.contextmanager
def layout_attention(model: Any) -> Iterator[None]:
    """Run the model's attention through `_layout_attention` inside the block, then restore it."""
    config = model.config
    previous = config._attn_implementation
    _configured[id(config)] = previous if previous != ATTENTION_NAME else "sdpa"
    config._attn_implementation = ATTENTION_NAME
    try:
        yield
    finally:
        config._attn_implementation = previous


def layout_masks(model: Any, layout: AttentionLayout) -> dict[str, AttentionLayout]:
    """The per-layer-type mask dict the model accepts as-is (it then builds no mask of its own)."""
    layer_types = getattr(model.config, "layer_types", None) or ["full_attention"]
    return {layer_type: layout for layer_type in set(layer_types)}


def plain_full_attention(config: Any) -> bool:
    """Whether every layer is plain full attention (no sliding windows, no linear-attention hybrids):
    the only layers our layouts compute."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    return all(type(layer) is DynamicLayer for layer in DynamicCache(config=config).layers)
