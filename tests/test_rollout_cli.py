"""`toolgym rollout` as a real subprocess: SIGKILL, SIGINT or SIGTERM mid-run, re-run, exactly one row per
(task, sample)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_rollout_support import subprocess_env, suite_tasks, tiny_model_dir
from toolgym.chat.render import CALL_FORMAT
from toolgym.dataset.manifest import read_manifest, sha256_file
from toolgym.rollout.results import RESULTS_FILE, read_rows, row_key
from toolgym.schema.jsonl import write_jsonl

APPS = ["booking", "code_host", "forum"]


def _dataset(root: Path, per_app: int = 2) -> Path:
    """A small validated dataset of registered apps: tasks whose reference solution replays to 1."""
    tasks = suite_tasks(apps=APPS)
    chosen = [t for app in APPS for t in [t for t in tasks if t.env == app][:per_app]]
    assert len(chosen) == per_app * len(APPS)
    write_jsonl(root / "tasks.jsonl", chosen)
    return root


def _command(dataset: Path, out: Path, policy: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "toolgym.cli.main", "rollout", "--tasks", str(dataset), "--policy", policy,
            "--out", str(out), "--no-progress", *extra]


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_killed_rollout_resumes_to_exactly_one_row_per_task_and_sample(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path / "data")
    out = tmp_path / "run"
    samples = 4
    command = _command(dataset, out, f"hf:{tiny_model_dir()}", "--samples-per-task", str(samples),
                       "--concurrency", "2", "--temperature", "1.0", "--seed", "3", "--max-new-tokens", "48",
                       "--max-turns", "2")
    results = out / RESULTS_FILE
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=subprocess_env())
    deadline = time.monotonic() + 300
    while _lines(results) < 3 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    before = read_rows(results)
    total = 6 * samples
    assert 3 <= len(before) < total, f"the run was not cut mid-way ({len(before)} of {total} rows)"
    with open(results, "ab") as handle:  # what a kill in the middle of a write leaves behind
        handle.write(b'{"schema_version": "toolgym.rollout_row/1", "example_id": "booking/')

    finished = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    rows = read_rows(results)
    keys = [row_key(r) for r in rows]
    assert len(keys) == len(set(keys)) == total
    assert rows[: len(before)] == before  # finished episodes were kept, not run again
    assert "dropped a torn last line" in finished.stdout
    assert f"resumed {len(before)}" in finished.stdout
    manifest = read_manifest(out)
    assert manifest["status"] == "complete" and manifest["tasks_sha256"] == sha256_file(dataset / "tasks.jsonl")
    assert manifest["summary"]["episodes"] == total


def test_interrupted_rollouts_exit_cleanly_and_resume_without_duplicates(tmp_path: Path) -> None:
    """Ctrl-C or SIGTERM with episodes in flight, three times: each stop is an orderly exit (never a crash
    such as a segfault), keeps every row written, and a re-run completes the run with one row per pair."""
    dataset = _dataset(tmp_path / "data")
    out = tmp_path / "run"
    samples = 300
    total = 6 * samples
    command = _command(dataset, out, "oracle", "--samples-per-task", str(samples), "--concurrency", "8")
    results = out / RESULTS_FILE
    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGINT):
        before = read_rows(results) if results.exists() else []
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=subprocess_env())
        deadline = time.monotonic() + 300
        while _lines(results) < len(before) + 5 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process.poll() is None, "the run ended before it could be interrupted"
        process.send_signal(stop)
        output, _ = process.communicate(timeout=120)
        assert process.returncode == 128 + stop, output.decode(errors="replace")[-2000:]
        assert b"run the same command again to resume" in output
        rows = read_rows(results)
        assert rows[: len(before)] == before and len(before) < len(rows) < total
        assert len({row_key(r) for r in rows}) == len(rows)
        assert read_manifest(out)["status"] == "interrupted"
    finished = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    keys = [row_key(r) for r in read_rows(results)]
    assert len(keys) == len(set(keys)) == total
    assert read_manifest(out)["status"] == "complete"


def test_oracle_rollout_from_the_command_line_passes_every_task(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path / "data")
    out = tmp_path / "run"
    finished = subprocess.run(_command(dataset, out, "oracle", "--split", "train", "--limit", "5"),
                              capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "pass rate 5/5" in finished.stdout
    rows = read_rows(out / RESULTS_FILE)
    assert len(rows) == 5 and {r["reward"] for r in rows} == {1.0}
    assert json.loads((out / "manifest.json").read_text())["policy"].startswith("oracle")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "gpt:x"], "unknown policy spec"),
        (["--policy", "oracle", "--split", "dev"], "unknown split"),
        (["--policy", "oracle", "--env", "nowhere"], "no tasks"),
        (["--policy", "oracle", "--model", "no/such/model"], "is not a model folder"),
    ],
)
def test_bad_arguments_are_named(tmp_path: Path, args: list[str], message: str) -> None:
    dataset = _dataset(tmp_path / "data", per_app=1)
    command = [sys.executable, "-m", "toolgym.cli.main", "rollout", "--tasks", str(dataset), "--out",
               str(tmp_path / "run"), "--no-progress", *args]
    finished = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert finished.returncode == 2 and message in " ".join((finished.stdout + finished.stderr).split())


def test_policy_specs_carry_prompt_style_and_lora(tmp_path: Path) -> None:
    from toolgym.policy.spec import make_policy

    assert make_policy("oracle", prompt_style="compact").prompt_style == "compact"
    assert make_policy("oracle").prompt_style is None
    with pytest.raises(ValueError, match=r"hf:MODEL_DIR\+lora:ADAPTER_DIR"):
        make_policy(f"hf:{tmp_path}+lora:")


def test_rollout_writes_the_prompt_style_of_the_model_the_rows_are_for(tmp_path: Path) -> None:
    """The oracle has no model of its own: with no --prompt-style its rows take the style of --model's
    toolgym.json (the shipped default's compact unless named, so they fit it); an explicit style still wins,
    and a model folder without a toolgym.json means full."""
    dataset = _dataset(tmp_path / "data", per_app=1)
    plain = tmp_path / "plain-model"  # a model folder that names no style
    plain.mkdir()
    runs = {"default": ([], True), "explicit": (["--prompt-style", "full"], False),
            "plain": (["--model", str(plain)], False),
            "explicit_compact": (["--model", str(plain), "--prompt-style", "compact"], True)}
    for name, (extra, compact) in runs.items():
        out = tmp_path / name
        finished = subprocess.run(_command(dataset, out, "oracle", *extra), capture_output=True, text=True,
                                  env=subprocess_env(), timeout=300)
        assert finished.returncode == 0, finished.stdout + finished.stderr
        rows = read_rows(out / RESULTS_FILE)
        assert len(rows) == 3 and all(r["prompt"][0]["role"] == "system" for r in rows)
        # compact lists the tools and the call format in the system prompt; full leaves both to the template
        assert {CALL_FORMAT in r["prompt"][0]["content"] for r in rows} == {compact}, name
    assert read_manifest(tmp_path / "default")["config"]["model"] == "default"
    assert read_manifest(tmp_path / "plain")["config"]["model"] == str(plain)


def test_only_policies_without_a_model_of_their_own_take_the_default_prompt_style(tmp_path: Path) -> None:
    from toolgym.policy.spec import make_policy

    assert make_policy("oracle", default_prompt_style="compact").prompt_style == "compact"
    assert make_policy("imperfect:premature_done=0.5", default_prompt_style="compact").prompt_style == "compact"
    assert make_policy("oracle", prompt_style="full", default_prompt_style="compact").prompt_style == "full"
    remote = make_policy("openai:http://127.0.0.1:9/v1#some-model", default_prompt_style="compact")
    assert remote.prompt_style == "compact"  # a served model named only by the server: the rows' model decides
    local = make_policy(f"openai:http://127.0.0.1:9/v1#{tmp_path}", default_prompt_style="compact")
    assert local.prompt_style == "full"  # a local folder names its own style (no toolgym.json: full)
