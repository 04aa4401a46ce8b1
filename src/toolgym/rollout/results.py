"""results.jsonl rows: the verifiers row shape plus toolgym's fields, derived from an Episode.

One row per (task_id, sample_index). The verifiers fields (`example_id`, `prompt`, `completion`,
`reward`, `metrics`, `timing`, `is_completed`, `is_truncated`, `stop_condition`, `error`, `info`,
`tool_defs`, `token_usage`) let other tools read a run; `episode` keeps the whole Episode (its
`samples` live once, in `token_samples`) so `row_to_episode` loses nothing. On an error row
`reward` and `partial_score` are null: an infrastructure failure must never average in as a 0.
Rows are written by `toolgym.schema.jsonl.dumps`, so whatever the model produced, its row is strict
JSON that reads back (see `jsonable` for what is stored in another form).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from toolgym.schema import Episode, Message, Task, TrainingSample
from toolgym.schema.jsonl import JsonlError, dumps, iter_json_rows, jsonable

RESULTS_FILE = "results.jsonl"
ROW_SCHEMA_VERSION = "toolgym.rollout_row/1"
STOPPED_ON_PURPOSE = {"answer", "done_tool", "user_stop", "user_transfer", "user_out_of_scope"}
# An error row's cause, from the prefix the episode loop and the worker give its error text.
ERROR_CAUSES = (
    ("policy error", "policy error"),
    ("env error", "env error"),
    ("user simulator error", "user simulator error"),
    ("timeout", "timeout"),
    ("worker error", "worker error"),  # a Ray worker died under the episode, on every try
    ("harness error", "harness error"),  # `toolgym harness run`: the agent harness crashed or could not start
    ("verifier", "verifier error"),  # "verifier crashed …", "verifier error: …", "verifier timed out …"
    ("episode loop error", "internal error"),  # a bug in toolgym itself
    ("rollout error", "internal error"),
)


def error_cause(error: str | None) -> str:
    """The short cause of an error row ("env error", "verifier error", "timeout" …), for counts by cause."""
    text = (error or "").strip().lower()
    if not text:
        return "unknown"
    for prefix, cause in ERROR_CAUSES:
        if text.startswith(prefix):
            return cause
    if "no checks and no verifier" in text:
        return "verifier error"
    return "other"


def _openai(message: Message) -> dict[str, Any]:
    try:
        return message.to_openai()
    except (ValueError, RecursionError):  # arguments nested too deep to print: keep what JSON can hold
        return Message.model_validate(jsonable(message.model_dump())).to_openai()


def split_prompt(episode: Episode) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(prompt, completion): messages before the first assistant turn, and the rest."""
    messages = [_openai(m) for m in episode.messages]
    first_assistant = next((i for i, m in enumerate(episode.messages) if m.role == "assistant"), len(messages))
    return messages[:first_assistant], messages[first_assistant:]


def episode_to_row(episode: Episode, task: Task | None = None) -> dict[str, Any]:
    """The results.jsonl row of one episode (task adds its metadata to `info`)."""
    prompt, completion = split_prompt(episode)
    errored = episode.status == "error"
    verdict = episode.verdict
    tool_calls = sum(episode.tool_calls_by_tool.values())
    input_tokens = sum(len(t.prompt_ids) for t in episode.token_turns)
    output_tokens = sum(len(t.completion_ids) for t in episode.token_turns)
    info: dict[str, Any] = {
        "tool_calls_by_tool": episode.tool_calls_by_tool,
        "user_simulator": episode.user_simulator,
        "user_termination": episode.user_termination,
        "verifier_error": verdict.error if verdict else None,
    }
    if task is not None:
        info.update(
            family=task.family,
            difficulty=task.difficulty,
            env_version=task.env_version,
            env_variables=task.env_variables,
            data_id=task.data_id,
            metadata=task.metadata,
        )
    return {
        "schema_version": ROW_SCHEMA_VERSION,
        # verifiers fields
        "example_id": episode.task_id,
        "prompt": prompt,
        "completion": completion,
        "reward": None if errored else episode.reward,
        "metrics": {
            "partial_score": None if errored else episode.partial_score,
            "turns": episode.turns,
            "tool_calls": tool_calls,
            "format_errors": episode.format_errors,
            "tool_errors": episode.tool_errors,
        },
        "timing": {
            "generation_ms": round(episode.timings.generation_s * 1000, 3),
            "env_ms": round(episode.timings.env_s * 1000, 3),
            "scoring_ms": round(episode.timings.verifier_s * 1000, 3),
            "total_ms": round(episode.timings.total_s * 1000, 3),
        },
        "is_completed": not errored and episode.stop_reason in STOPPED_ON_PURPOSE,
        "is_truncated": episode.status == "truncated",
        "stop_condition": episode.stop_reason,
        "error": episode.error,
        "info": info,
        "tool_defs": [t.to_openai() for t in episode.tools],
        "token_usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        # toolgym fields
        "task_id": episode.task_id,
        "env": episode.env,
        "split": episode.split,
        "sample_index": episode.sample_index,
        "status": episode.status,
        "partial_score": None if errored else episode.partial_score,
        "checks": [c.model_dump(mode="json") for c in verdict.checks] if verdict else [],
        # turn_progress: the share of checks holding on the seed and after each agent turn, and what flipped
        "progress": episode.progress,
        "check_flips": [f.model_dump(mode="json") for f in episode.check_flips],
        "final_answer": episode.final_answer,
        "total_tool_calls": tool_calls,
        "policy": episode.policy,
        "checkpoint": episode.checkpoint,
        "sampling": episode.sampling,
        "token_samples": [s.model_dump(mode="json") for s in episode.samples],
        "episode": _episode_data(episode),
    }


def _episode_data(episode: Episode) -> dict[str, Any]:
    try:
        return episode.model_dump(mode="json", exclude={"samples"})
    except ValueError:  # tool-call arguments nested deeper than pydantic serialises
        return jsonable(episode.model_dump(exclude={"samples"}))


def row_to_episode(row: dict[str, Any]) -> Episode:
    """The Episode a row was made from (samples come back from `token_samples`)."""
    if "episode" not in row:
        raise ValueError(f"row for task {row.get('task_id')!r} has no 'episode' field: not a toolgym results row")
    data = dict(row["episode"])
    data["samples"] = [TrainingSample.model_validate(s) for s in row.get("token_samples", [])]
    return Episode.model_validate(data)


def row_key(row: dict[str, Any]) -> tuple[str, int]:
    return str(row["task_id"]), int(row["sample_index"])


def repair_torn_tail(path: str | Path) -> int:
    """Drop a last line without its newline (a write cut by a kill); returns the bytes dropped.

    Rows are written as one `line + "\\n"` and fsynced, so only the final line can be partial.
    """
    path = Path(path)
    if not path.exists():
        return 0
    with open(path, "r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return 0
        keep = size
        block = 1 << 16
        while keep > 0:
            start = max(0, keep - block)
            handle.seek(start)
            chunk = handle.read(keep - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            keep = start
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
        return size - keep


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Every row of a results file; a bad line raises JsonlError naming the file and line."""
    path = Path(path)
    if not path.exists():
        return []
    rows: list[dict[str, Any]] = []
    for number, row in iter_json_rows(path, cut_off="last line is cut off (run was killed mid-write); resume repairs it"):
        if "task_id" not in row or "sample_index" not in row:
            raise JsonlError(path, number, "not a results row (needs task_id and sample_index)")
        rows.append(row)
    return rows


def read_episodes(path: str | Path) -> list[Episode]:
    return [row_to_episode(r) for r in read_rows(path)]


def rewrite_rows(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """Replace a results file atomically (write aside, fsync, rename)."""
    path = Path(path)
    temporary = path.with_suffix(path.suffix + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(dumps(row) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
