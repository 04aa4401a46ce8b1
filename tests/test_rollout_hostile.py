"""Rollouts under hostile conditions: a policy that emits what no JSON file should hold, and a run
cancelled while verifier threads are still reading the episodes' databases."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from test_rollout_support import env_factory, toy_tasks
from toolgym.agent.limits import EpisodeLimits
from toolgym.dataset.manifest import read_manifest
from toolgym.eval.report import write_report
from toolgym.policy.base import Generation, GenerationRequest, Policy
from toolgym.policy.oracle import OraclePolicy
from toolgym.rollout.results import RESULTS_FILE, read_rows, row_key, row_to_episode
from toolgym.rollout.runner import RolloutSummary, run_rollout
from toolgym.schema import Message, Task, ToolCall

DEPTH = 1000


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def _text_call(name: str, arguments: str) -> Message:
    """A turn whose tool call is text for the hermes parser (a server without a tool parser)."""
    return Message(role="assistant", content=f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>')


def _structured_call(name: str, arguments: dict[str, Any]) -> Message:
    """A turn whose tool call arrives already parsed (a server with a tool parser)."""
    return Message(role="assistant", content="", tool_calls=[ToolCall(name=name, arguments=arguments)])


# One hostile turn per kind; every episode then answers in text holding lone surrogates.
HOSTILE_TURNS: dict[str, Message | None] = {
    "escaped-surrogate-text": _text_call("add_note", r'{"title": "\ud800 milk", "due": NaN}'),
    "raw-surrogate-text": _text_call("add_note", '{"title": "raw \udcff milk", "due": "tomorrow"}'),
    "infinity-text": _text_call("complete_note", '{"note_id": Infinity}'),
    "negative-infinity-text": _text_call("complete_note", '{"note_id": -Infinity}'),
    "deep-text": _text_call("complete_note", '{"note_id": ' + "[" * DEPTH + "]" * DEPTH + "}"),
    "deep-object-text": _text_call("complete_note", '{"note_id": ' + '{"a": ' * DEPTH + "1" + "}" * DEPTH + "}"),
    "long-int-text": _text_call("complete_note", '{"note_id": ' + "9" * 5000 + "}"),
    "surrogate-call": _structured_call("add_note", {"title": "x\udfff", "due": float("nan")}),
    "infinity-call": _structured_call("complete_note", {"note_id": float("inf")}),
    "deep-call": _structured_call("complete_note", {"note_id": _deep(DEPTH)}),
    "surrogate-name-call": _structured_call("add_note\ud800", {}),
    "plain-text": None,
}
SURROGATE_ANSWER = "Done \ud800, all \udcff set \udfff."


class HostilePolicy(Policy):
    """Chat mode: the task's hostile turn first (by the kind in its id), then a surrogate-laden answer."""

    name = "hostile"

    async def generate(self, request: GenerationRequest) -> Generation:
        assert request.task is not None
        turn = HOSTILE_TURNS[request.task.id.split("/")[1]]
        if request.turn == 0 and turn is not None:
            return Generation(text=turn.content or "", message=turn)
        answer = Message(role="assistant", content=SURROGATE_ANSWER)
        return Generation(text=SURROGATE_ANSWER, message=answer)


def _hostile_tasks() -> list[Task]:
    base = toy_tasks()[1]  # add a note: every hostile call fails it
    return [base.model_copy(update={"id": f"toy/{kind}/0"}) for kind in HOSTILE_TURNS]


def _rollout(tasks: list[Task], out: Path, policy: Policy, **kwargs: Any) -> RolloutSummary:
    return asyncio.run(run_rollout(tasks, policy, out_dir=out, env_factory=env_factory, **kwargs))


def test_a_hostile_policy_is_scored_and_every_row_is_written_readable_and_resumable(tmp_path: Path) -> None:
    tasks = _hostile_tasks()
    summary = _rollout(tasks, tmp_path, HostilePolicy(), samples_per_task=2, concurrency=4,
                       limits=EpisodeLimits(max_turns=4))
    results = tmp_path / RESULTS_FILE
    written = results.read_bytes()
    written.decode("utf-8")  # strict UTF-8 on disk
    rows = read_rows(results)
    keys = [row_key(r) for r in rows]
    assert len(keys) == len(set(keys)) == 2 * len(tasks) == summary.episodes
    for row in rows:
        row_to_episode(row)  # each row reads back into its Episode
    # The model's garbage is the model's failure, scored like any other: never an infrastructure error.
    errored = {r["task_id"]: r["error"] for r in rows if r["status"] == "error"}
    assert errored == {}, "hostile output became error rows (the parser or a tool raised)"
    for row in rows:
        assert row["reward"] is not None and row["reward"] < 1.0, row["task_id"]
        assert row["stop_condition"] == "answer" and "\ufffd" in row["final_answer"]
        if not row["task_id"].startswith("toy/plain-text/"):
            assert row["metrics"]["format_errors"] + row["metrics"]["tool_errors"] >= 1, row["task_id"]
    # Resuming the finished run is a no-op: nothing re-run, nothing rewritten, nothing crashes.
    again = _rollout(tasks, tmp_path, HostilePolicy(), samples_per_task=2, concurrency=4,
                     limits=EpisodeLimits(max_turns=4))
    assert (again.ran, again.skipped, again.episodes) == (0, len(rows), len(rows))
    assert results.read_bytes() == written
    markdown, html = write_report(tmp_path, tmp_path / "report")
    assert "toy/deep-call/0" in html.read_text(encoding="utf-8") and markdown.read_text(encoding="utf-8")


def test_cancelling_a_rollout_never_closes_a_database_under_its_verifier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancel a run while verifier threads read their episodes' SQLite connections, three times over:
    no connection closes under a thread (which can crash the process), the run stops at once (each
    slot finishes at most the episode it was in), the written rows stay whole, and a re-run completes
    the run without duplicates."""
    from toolgym.agent import episode as episode_module

    real_verify = episode_module.verify_task
    faults: list[str] = []
    in_flight = 0
    lock = threading.Lock()

    def slow_verify(task: Task, env: Any, final_answer: str | None) -> Any:
        nonlocal in_flight
        with lock:
            in_flight += 1
        try:
            conn = env.db("current")
            deadline = time.monotonic() + 0.25
            while time.monotonic() < deadline:  # keep the connection busy, as a long diff would
                conn.execute("SELECT count(*) FROM notes").fetchone()
            return real_verify(task, env, final_answer)
        except Exception as exc:
            faults.append(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            with lock:
                in_flight -= 1

    monkeypatch.setattr(episode_module, "verify_task", slow_verify)
    tasks = toy_tasks()
    samples, concurrency = 20, 4
    results = tmp_path / RESULTS_FILE

    async def cancel_mid_run(rows_before: int) -> int:
        job = asyncio.create_task(run_rollout(tasks, OraclePolicy(), out_dir=tmp_path, samples_per_task=samples,
                                              concurrency=concurrency, env_factory=env_factory))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not job.done():
            await asyncio.sleep(0.01)
            if len(read_rows(results)) > rows_before and in_flight >= 2:
                break
        assert not job.done(), "the run finished before it could be cancelled"
        at_cancel = len(read_rows(results))
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        return at_cancel

    for _ in range(3):
        before = read_rows(results)
        at_cancel = asyncio.run(cancel_mid_run(len(before)))  # returns once the verifier threads are done
        after = read_rows(results)
        assert after[: len(before)] == before and len(after) > len(before)
        assert len(after) <= at_cancel + concurrency, "the run went on after it was cancelled"
        assert len({row_key(r) for r in after}) == len(after)
        assert read_manifest(tmp_path)["status"] == "interrupted"
    assert faults == []
    final = _rollout(tasks, tmp_path, OraclePolicy(), samples_per_task=samples, concurrency=concurrency)
    rows = read_rows(results)
    assert len(rows) == len({row_key(r) for r in rows}) == len(tasks) * samples == final.episodes
    assert final.error == 0 and final.passed == final.episodes
    assert read_manifest(tmp_path)["status"] == "complete"
    assert faults == []


def test_a_results_row_is_built_and_read_back_whatever_an_episode_holds(tmp_path: Path) -> None:
    """An episode holding what the parser would refuse today (a call nested past every serializer's
    limit, NaN, lone surrogates) still gives a row: the row is the last place a run could lose it."""
    from toolgym.rollout.results import episode_to_row
    from toolgym.schema import Episode, TokenTurn
    from toolgym.schema.jsonl import JsonlWriter

    call = ToolCall(name="complete_note\udcff", arguments={"note_id": _deep(3000), "x": float("nan")}, id="c1")
    episode = Episode(
        task_id="toy/add/0", env="toy", split="train", sample_index=0, status="ok", stop_reason="answer",
        messages=[Message(role="user", content="add \ud800"), Message(role="assistant", content="", tool_calls=[call])],
        token_turns=[TokenTurn(prompt_ids=[1], completion_ids=[2], logprobs=[float("-inf")])],
        final_answer="done \udfff",
    )
    with JsonlWriter(tmp_path / RESULTS_FILE) as writer:
        writer.write(episode_to_row(episode))
    (row,) = read_rows(tmp_path / RESULTS_FILE)
    back = row_to_episode(row)
    assert back.final_answer == "done \ufffd" and back.messages[0].content == "add \ufffd"
    assert back.token_turns[0].logprobs == [float("-inf")]
    assert back.messages[1].tool_calls and back.messages[1].tool_calls[0].name == "complete_note\ufffd"
