"""The trajectory viewer's data: each chosen episode as plain JSON (messages, tool calls, checks).

Long texts are trimmed (the full row stays in results.jsonl, named by `where`), and the episodes
embedded per run are capped, flipped tasks first, then a mix of outcomes so failures and errors
are always represented.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from toolgym.eval.records import EpisodeRecord

MESSAGE_CHARS = 4000


def outcome(record: EpisodeRecord) -> str:
    if record.errored:
        return "errored"
    if record.passed:
        return "passed"
    return "truncated" if record.status == "truncated" else "failed"


def _trim(text: str | None) -> str:
    text = text or ""
    if len(text) <= MESSAGE_CHARS:
        return text
    return text[:MESSAGE_CHARS] + f"\n… ({len(text) - MESSAGE_CHARS} more characters in the results row)"


def _messages(row: dict[str, Any]) -> list[dict[str, Any]]:
    episode = row.get("episode") or {}
    raw = episode.get("messages")
    if raw is None:
        raw = list(row.get("prompt") or []) + list(row.get("completion") or [])
    messages = []
    for message in raw:
        if not isinstance(message, dict):
            continue
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function", call) if isinstance(call, dict) else {}
            arguments = function.get("arguments", {})
            if isinstance(arguments, str):
                with contextlib.suppress(json.JSONDecodeError):
                    arguments = json.loads(arguments)
            calls.append({"name": str(function.get("name", "?")),
                          "arguments": _trim(arguments if isinstance(arguments, str)
                                             else json.dumps(arguments, ensure_ascii=False, indent=2))})
        messages.append({
            "role": str(message.get("role", "")), "content": _trim(message.get("content")),
            "name": message.get("name"), "tool_calls": calls,
            "reasoning": _trim(message.get("reasoning_content")) or None,
        })
    return messages


def viewer_episode(record: EpisodeRecord, run_name: str, episode_id: str, root: Path) -> dict[str, Any]:
    row = record.row
    try:
        where = f"{record.path.resolve().relative_to(root.resolve())}:{record.line}"
    except ValueError:
        where = record.location
    calls = (row.get("info") or {}).get("tool_calls_by_tool") or {}
    return {
        "id": episode_id, "run": run_name, "trial": record.trial, "task": record.task_id, "env": record.env,
        "split": record.split, "sample": record.sample_index, "status": record.status, "outcome": outcome(record),
        "reward": row.get("reward"), "partial": row.get("partial_score"), "stop": row.get("stop_condition"),
        "error": row.get("error"), "turns": (row.get("metrics") or {}).get("turns", 0),
        "tool_call_count": sum(int(v) for v in calls.values()), "where": where,
        "final_answer": _trim(row.get("final_answer")),
        "checks": [{"label": str(c.get("label") or c.get("kind")), "passed": bool(c.get("passed")),
                    "detail": str(c.get("detail") or "")} for c in row.get("checks") or []],
        "messages": _messages(row),
    }


def choose_episodes(records: list[EpisodeRecord], cap: int, first_tasks: set[str]) -> list[EpisodeRecord]:
    """Every episode of `first_tasks`, then up to `cap` in all, taking outcomes in turn in file order."""
    chosen = [r for r in records if r.task_id in first_tasks]
    by_outcome: dict[str, list[EpisodeRecord]] = {}
    for record in records:
        if record.task_id not in first_tasks:
            by_outcome.setdefault(outcome(record), []).append(record)
    while len(chosen) < cap and any(by_outcome.values()):
        for bucket in by_outcome.values():
            if bucket and len(chosen) < cap:
                chosen.append(bucket.pop(0))
    return chosen
