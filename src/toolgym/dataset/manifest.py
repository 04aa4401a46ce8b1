"""manifest.json: provenance of every output folder (config, sha256 of inputs, versions, git commit)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import toolgym
from toolgym.schema.documents import read_json
from toolgym.schema.jsonl import jsonl_in

TASKS_FILE = "tasks.jsonl"


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def write_manifest(directory: str | Path, kind: str, **fields: Any) -> Path:
    """Write `manifest.json` with the package version, git commit and the given fields."""
    path = Path(directory) / "manifest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "kind": kind,
        "toolgym_version": toolgym.__version__,
        "git_commit": git_commit(),
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **fields,
    }
    # Written aside and renamed: a kill mid-write must not leave a torn manifest that every resume trips on.
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(body, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(temporary, path)
    return path


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The folder's manifest.json ({} when there is none); a corrupt one raises ValueError naming the file."""
    path = Path(directory) / "manifest.json"
    if not path.exists():
        return {}
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a manifest (a JSON object), got {type(data).__name__}")
    return data


def tasks_file(dataset: str | Path) -> Path:
    """`dataset` is a tasks.jsonl file or a dataset folder holding one."""
    return jsonl_in(dataset, TASKS_FILE, "dataset folder")
