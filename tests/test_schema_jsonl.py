"""JsonlWriter: every row reaches the file when `write` returns; fsync is batched in time."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from toolgym.rollout.results import read_rows, rewrite_rows
from toolgym.schema import TokenTurn
from toolgym.schema.jsonl import MAX_DEPTH, JsonlWriter, dumps, iter_json_rows, write_jsonl


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


def _deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def test_rows_of_any_content_are_written_as_strict_json_and_read_back(tmp_path: Path) -> None:
    """What a model can produce (lone surrogates, NaN, huge numbers, deep nesting) never stops a row."""
    path = tmp_path / "results.jsonl"
    big = 7 ** 6000  # past Python's 4300-digit limit for decimal text
    rows = [
        {"text": "lone \ud800 and \udcff, a pair \ud83d\ude00, ok é", "key \udfff": 1},
        {"nan": float("nan"), "inf": float("inf"), "-inf": [float("-inf")], "finite": 1.5},
        {"int64": 2**63 + 1, "huge": 2**200, "too_long": big, "negative": -big},
        {"deep": _deep(150), "deeper": _deep(5000)},
        TokenTurn(prompt_ids=[1], completion_ids=[2, 3], logprobs=[float("-inf"), float("nan")]),
    ]
    with JsonlWriter(path) as writer:
        for row in rows:
            writer.write(row)
    raw = path.read_bytes()
    raw.decode("utf-8")  # strict UTF-8: no surrogate bytes
    assert b"NaN," not in raw and b"Infinity]" not in raw  # strict JSON: non-finite numbers are strings
    back = [row for _, row in iter_json_rows(path)]
    assert len(back) == len(rows)
    assert back[0] == {"text": "lone \ufffd and \ufffd, a pair \U0001f600, ok é", "key \ufffd": 1}
    assert back[1] == {"nan": "NaN", "inf": "Infinity", "-inf": ["-Infinity"], "finite": 1.5}
    assert back[2]["int64"] == 2**63 + 1 and back[2]["huge"] == 2**200
    assert int(back[2]["too_long"], 16) == big and int(back[2]["negative"], 16) == -big
    assert _depth(back[3]) <= MAX_DEPTH
    assert json.loads(_cut(back[3]["deep"])) == _deep(150 - (MAX_DEPTH - 1))  # the rest kept as JSON text
    assert "nested deeper than" in _cut(back[3]["deeper"])
    turn = TokenTurn.model_validate(back[4])  # pydantic reads the non-finite strings back as floats
    assert turn.logprobs[0] == float("-inf") and math.isnan(turn.logprobs[1])
    # a file written whole (datasets, rewritten results) follows the same rules
    assert write_jsonl(tmp_path / "all.jsonl", rows) == len(rows)
    assert [row for _, row in iter_json_rows(tmp_path / "all.jsonl")] == back
    rewrite_rows(tmp_path / "rewritten.jsonl", [{"task_id": "t\ud800", "sample_index": 0, "x": float("nan")}])
    assert read_rows(tmp_path / "rewritten.jsonl") == [{"task_id": "t\ufffd", "sample_index": 0, "x": "NaN"}]


def _cut(value: object) -> str:
    """The string a too-deep container was stored as, found by walking the stored dict."""
    while isinstance(value, dict):
        value = value["a"]
    assert isinstance(value, str)
    return value


def test_ordinary_rows_are_written_as_before(tmp_path: Path) -> None:
    """Strictness costs ordinary rows nothing: same text as json.dumps, and model rows keep field order."""
    row = {"a": [1, 2.5, None, True], "b": "é ü 中", "c": {"d": -3}}
    assert dumps(row) == json.dumps(row, ensure_ascii=False, separators=(",", ":"))
    turn = TokenTurn(prompt_ids=[1], completion_ids=[2], logprobs=[-0.5])
    assert dumps(turn) == turn.model_dump_json()
