"""The key/value cache's keyword across transformers versions.

transformers 5.x renamed a forward's `past_key_values` to `cache` (the old name still works but
warns on every call, which floods rollout and training logs); 4.x knows only the old name.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any


@functools.cache
def _forward_cache_keyword(forward_owner: type) -> str:
    parameters = inspect.signature(forward_owner.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def cache_keyword(model: Any) -> str:
    """This model's forward keyword for the cache: `cache` where the model takes it, else `past_key_values`.

    A peft wrapper's forward takes **kwargs and hands them to the model it wraps: ask that model.
    """
    get_base_model = getattr(model, "get_base_model", None)
    if callable(get_base_model):
        model = get_base_model()
    return _forward_cache_keyword(type(model))


def cache_kwargs(model: Any, cache: Any) -> dict[str, Any]:
    """`{cache_keyword(model): cache}`, to pass with `**`."""
    return {cache_keyword(model): cache}


def output_cache(output: Any) -> Any:
    """The cache a forward returned, under whichever name this transformers version gives it."""
    cache = output.get("cache")  # not .get("cache", output.past_key_values): that reads the old name and warns
    return cache if cache is not None else output.past_key_values
