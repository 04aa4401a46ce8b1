"""The README's walk through the loop runs as written, in order, on the shipped default model.

Each line of the first bash block under "Common commands" runs in a fresh folder where `src` points at this
checkout (the README's commands run from a clone's root). The two `serve` lines start servers: each must
answer on its port, then it is stopped; their ports are swapped for free ones so a busy port cannot fail CI.
"""

from __future__ import annotations

import json
import re
import shlex
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def walkthrough_commands() -> list[str]:
    """The command lines of the first bash block after the "Common commands" heading, comments removed."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Common commands"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "README: no bash block under Common commands"
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str, deadline_s: float, process: subprocess.Popen[str]) -> bytes:
    """The body of the first answer from `url` (any HTTP status) before the deadline; fails if the server died."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if process.poll() is not None:
            raise AssertionError(f"server exited {process.returncode}: {process.stderr.read() if process.stderr else ''}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            return error.read()
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"nothing answered on {url} in {deadline_s:.0f} s")


def run_server(line: str, cwd: Path) -> bytes:
    port = free_port()
    argv = shlex.split(re.sub(r"--port \d+", f"--port {port}", line))
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        path = "/v1/models" if argv[:3] == ["toolgym", "serve", "policy"] else "/mcp"
        return answers(f"http://127.0.0.1:{port}{path}", 120, process)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
def test_the_readme_walkthrough_runs_in_order(tmp_path: Path) -> None:
    commands = walkthrough_commands()
    assert [c.split()[1] for c in commands] == [
        "tasks", "tasks", "rollout", "data", "train", "eval", "report", "serve", "serve"]
    (tmp_path / "src").symlink_to(REPO / "src")
    for line in commands:
        if line.startswith("toolgym serve"):
            body = run_server(line, tmp_path)
            if " policy " in line:
                assert json.loads(body)["data"][0]["id"], body
            continue
        result = subprocess.run(shlex.split(line), cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"{line}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    runs = tmp_path / "runs"
    assert (runs / "tasks" / "validated" / "tasks.jsonl").is_file()
    oracle_rows = [json.loads(x) for x in (runs / "oracle" / "results.jsonl").read_text().splitlines()]
    assert oracle_rows and all(row["reward"] == 1.0 for row in oracle_rows)
    assert (runs / "sft" / "final" / "config.json").is_file()
    assert sum(1 for _ in (runs / "sft.jsonl").open()) == len(oracle_rows)
    report = json.loads((runs / "eval" / "eval.json").read_text())
    assert report, "eval.json is empty"
    assert any(p.suffix == ".html" for p in (runs / "eval").iterdir())
