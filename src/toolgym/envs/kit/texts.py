"""An app's wording kept as data: the prompt templates and word lists a module draws from live in a JSON file
in the app's `texts/` folder, so the module holds only logic and the wording can be read and edited as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolgym.schema.documents import read_json

TEXTS_FOLDER = "texts"  # beside an app's modules: texts/<module>.json


def _frozen(value: Any) -> Any:
    """JSON arrays as tuples (templates and word lists are fixed), objects as dicts in file order."""
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return {key: _frozen(item) for key, item in value.items()}
    return value


def module_texts(module_file: str) -> dict[str, Any]:
    """The texts of a module (`module_file` is its `__file__`): `texts/<module>.json` in its folder, so
    `tasks_tours.py` reads `texts/tasks_tours.json`; arrays come back as tuples."""
    module = Path(module_file)
    path = module.parent / TEXTS_FOLDER / f"{module.stem}.json"
    return _frozen(read_json(path))
