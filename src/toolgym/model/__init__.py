"""Models that ship with toolgym: the tiny Qwen3 default (`toolgym.model.tiny`), and what every command reads
of a model folder without loading it (where the default lives, its context length).

Kept free of torch and transformers, so a command can name the shipped model or read a context cheaply.
"""

from __future__ import annotations

from pathlib import Path

from toolgym.schema.documents import read_json

DEFAULT_MODEL = "default"
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default"


def model_folder(model: str | Path) -> Path:
    """The folder a `model` setting names: `default` is the shipped default model; anything else a path.

    A name that is no folder is refused here, so a mistyped path is not silently read as a model without
    a toolgym.json (which would quietly change the prompt style)."""
    folder = DEFAULT_MODEL_DIR if str(model) == DEFAULT_MODEL else Path(model)
    if not folder.is_dir():
        named = f"{DEFAULT_MODEL} ({folder})" if folder == DEFAULT_MODEL_DIR else str(folder)
        raise ValueError(f"{named} is not a model folder")
    return folder


def context_length(model_dir: str | Path) -> int | None:
    """The model's trained context (max_position_embeddings), when its config says."""
    try:
        config = read_json(Path(model_dir) / "config.json")
    except (OSError, ValueError):
        return None
    value = config.get("max_position_embeddings") if isinstance(config, dict) else None
    return int(value) if isinstance(value, int) and value > 0 else None
