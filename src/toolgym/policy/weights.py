"""A fingerprint of a checkpoint's weight files, so a resumed run notices new weights at an old path.

A run folder remembers its checkpoint by path; retraining into the same folder (or copying other
weights over it) would otherwise let a resumed eval mix two models' rows. Hashing whole files costs
seconds per GB, so the fingerprint reads each file's size and 16 evenly spaced 64 KiB chunks: any
fine-tune changes bytes everywhere, and the cost stays a few milliseconds at any model size.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
CHUNKS = 16
CHUNK_BYTES = 64 * 1024


def weight_files(folder: Path) -> list[Path]:
    """The weight files directly in `folder` (shards included), sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)


def file_fingerprint(path: Path, digest: hashlib._Hash) -> None:
    """Feed the name, size and sampled chunks of one file into `digest`."""
    size = path.stat().st_size
    digest.update(f"{path.name}\0{size}\0".encode())
    with open(path, "rb") as handle:
        if size <= CHUNKS * CHUNK_BYTES:
            digest.update(handle.read())
            return
        stride = (size - CHUNK_BYTES) // (CHUNKS - 1)
        for index in range(CHUNKS):
            handle.seek(index * stride)
            digest.update(handle.read(CHUNK_BYTES))


def weights_fingerprint(*folders: str | Path | None) -> str | None:
    """sha256 (hex, 16 chars) over the weight files of the folders given; None when there are none."""
    digest = hashlib.sha256()
    found = False
    for folder in folders:
        if folder is None or not Path(folder).is_dir():
            continue
        for path in weight_files(Path(folder)):
            file_fingerprint(path, digest)
            found = True
    return digest.hexdigest()[:16] if found else None
