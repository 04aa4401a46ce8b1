"""The corpus's fixed wording, read once from phrases.json beside this module.

Argument names by value kind, the numeric record fields with their superlatives, refusal openings,
tool-description tails, confirmation keys and verbs' past tense: data, kept apart from the code
that draws from it.
"""

from __future__ import annotations

from pathlib import Path

from toolgym.schema.documents import read_json

_PHRASES = read_json(Path(__file__).with_name("phrases.json"))

# value kind → the names an argument of that kind goes by
ARG_NAMES: dict[str, tuple[str, ...]] = {kind: tuple(names) for kind, names in _PHRASES["argument_names"].items()}
# field: (kind, words, min phrases, max phrases)
NUMERIC_FIELDS: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]] = {
    name: (f["kind"], f["words"], tuple(f["min_phrases"]), tuple(f["max_phrases"]))
    for name, f in _PHRASES["numeric_fields"].items()
}
REFUSALS: tuple[str, ...] = tuple(_PHRASES["refusals"])
DESCRIPTION_TAILS: tuple[str, ...] = tuple(_PHRASES["description_tails"])
CONFIRMATION_KEYS: tuple[str, ...] = tuple(_PHRASES["confirmation_keys"])
PAST_TENSE: dict[str, str] = dict(_PHRASES["past_tense"])
