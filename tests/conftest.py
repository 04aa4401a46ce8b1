"""Fixtures shared by the verifier-sandbox tests."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from toolgym.verify import isolation


@pytest.fixture
def private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Sandbox directories go under this test's tmp_path, so leftovers and survivors can be found; the
    strong sandbox is required (no trust-verifiers fallback from the environment)."""
    root = tmp_path / "sandboxes"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    monkeypatch.delenv(isolation.TRUST_ENV, raising=False)
    return root
