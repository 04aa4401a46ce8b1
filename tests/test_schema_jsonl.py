"""JsonlWriter: every row reaches the file when `write` returns; fsync is batched in time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from toolgym.schema.jsonl import JsonlWriter, iter_json_rows


def test_each_row_is_in_the_file_when_write_returns(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    path = tmp_path / "results.jsonl"
    writer = JsonlWriter(path, fsync_interval_s=3600)
    for index in range(3):
        writer.write({"index": index})
        assert [row for _, row in iter_json_rows(path)] == [{"index": i} for i in range(index + 1)]
    assert synced == []  # within the interval: flushed, not yet fsynced
    writer.close()
    assert len(synced) == 1  # close always syncs


def test_rows_survive_the_writer_process_being_killed(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    script = (
        "import os, signal\n"
        "from toolgym.schema.jsonl import JsonlWriter\n"
        f"w = JsonlWriter({str(path)!r}, fsync_interval_s=3600)\n"
        "for i in range(5): w.write({'i': i})\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], check=False)
    assert result.returncode == -9
    assert [row for _, row in iter_json_rows(path)] == [{"i": i} for i in range(5)]
