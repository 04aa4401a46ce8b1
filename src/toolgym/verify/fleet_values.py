"""Scores, value comparison and the small helpers Fleet verifiers find in their namespace.

Standard library only, like every fleet_*.py file: see `toolgym.verify.fleet_api`.
"""

from __future__ import annotations

import json
import re
import string
from typing import Any

TASK_SUCCESSFUL_SCORE = 1
TASK_FAILED_SCORE = 0
# toolgym's change-tracking table: bookkeeping, never part of an app's data.
TOUCHED_TABLE = "_toolgym_touched"


def _looks_like_json(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    text = value.strip()
    return (text.startswith("{") and text.endswith("}")) or (text.startswith("[") and text.endswith("]"))


def values_equivalent(expected: Any, actual: Any) -> bool:
    """Equal, or both JSON text with the same parsed value (Fleet compares JSON columns by meaning)."""
    if expected == actual:
        return True
    if _looks_like_json(expected) and _looks_like_json(actual):
        try:
            return json.loads(expected) == json.loads(actual)
        except ValueError:
            return False
    return False


_PUNCTUATION = str.maketrans(string.punctuation, " " * len(string.punctuation))


def _squash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)
    return "".join(text.lower().translate(_PUNCTUATION).split())


def normalized_contains(target: str, blob: Any) -> bool:
    """`target` occurs in `blob` ignoring case, punctuation and whitespace."""
    return _squash(target) in _squash(blob)


def normalized_string_comparison(target: str, blob: Any) -> bool:
    """`target` equals `blob` ignoring case, punctuation and whitespace."""
    return _squash(target) == _squash(blob)


def extract_numbers(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"-?\d+\.?\d*", str(text).replace(",", ""))]


def contains_number(text: str, target_number: Any) -> bool:
    try:
        target = float(str(target_number).replace(",", ""))
    except ValueError:
        return False
    return target in extract_numbers(text)
