"""bench/gpu_check.py: the prepared device check runs end to end at tiny shapes on CPU, and on a GPU when there is one.

The CPU smoke hides the packages a bare GPU machine lacks (here and in the processes `accelerate launch`
starts), so a part that would import one of them fails here first.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "gpu_check.py"
# Not installed on the GPU machine the check is written for (starlette arrives as a carried wheel there).
MISSING_THERE = ("mcp", "fastapi", "uvicorn", "openai")
ALL_PARTS = {"setup", "engine", "sft", "grpo", "memfit", "launch"}


@cache
def _module() -> ModuleType:
    """The script as a module (registered first: its dataclasses look their module up while being built)."""
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(out: Path, *args: str, timeout: float = 300) -> dict:
    command = [sys.executable, str(SCRIPT), "--out", str(out), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    results = out / "gpu_check.json"
    assert results.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads(results.read_text())
    failed = {name: part["error"] for name, part in data["parts"].items() if part["status"] != "ok"}
    assert not failed, f"{failed}\n{done.stdout[-4000:]}"
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return data


def test_step_seconds_come_from_cumulative_elapsed() -> None:
    gpu_check = _module()
    rows = [{"elapsed_s": 2.0}, {"elapsed_s": 2.5}, {"elapsed_s": 3.25}]
    assert gpu_check.step_seconds(rows) == [2.0, 0.5, 0.75]
    assert gpu_check.steady([2.0, 0.5, 0.75]) == [0.5, 0.75]
    assert gpu_check.steady([2.0]) == [2.0]


@pytest.mark.slow  # imports torch, transformers, peft and accelerate: ~10 s on its own
def test_a_spent_budget_skips_every_part_and_still_writes_results(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    gpu_check = _module()
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY", "TOKENIZERS_PARALLELISM"):
        monkeypatch.delenv(name, raising=False)  # main() sets them: give them back afterwards
    code = gpu_check.main(["--device", "cpu", "--budget-s", "0", "--out", str(tmp_path), "--parts", "engine,memfit"])
    data = json.loads((tmp_path / "gpu_check.json").read_text())
    assert code == 1
    assert {name: part["status"] for name, part in data["parts"].items()} == {
        "setup": "skipped", "engine": "skipped", "memfit": "skipped"}
    assert "needs setup" in data["parts"]["engine"]["error"]
    assert "budget" in data["parts"]["memfit"]["error"]
    assert "memfit" in gpu_check.summary_table(data)


@pytest.mark.slow
def test_cpu_smoke_runs_every_part_without_the_missing_packages(tmp_path: Path) -> None:
    data = _run(tmp_path / "out", "--device", "cpu", "--shape", "tiny", "--threads", "2",
                "--block-imports", ",".join(MISSING_THERE), "--budget-s", "240")
    assert set(data["parts"]) == ALL_PARTS
    assert not set(MISSING_THERE) & set(data["third_party_modules"])
    engine = data["parts"]["engine"]["metrics"]
    assert engine["rollout"]["episodes"] > 0 and engine["rollout"]["tokens_per_s"] > 0
    assert [b["batch"] for b in engine["generate_batch"]] == [1, 4]
    sft = data["parts"]["sft"]["metrics"]
    assert sft["lora"]["steps"] == sft["full"]["steps"] == 2
    assert any(data["parts"]["grpo"]["metrics"]["optimizer_steps"])
    off_policy = data["parts"]["grpo"]["metrics"]["off_policy"]
    assert off_policy["staleness"] == [0, 1] and off_policy["policy_version"] == [0, 0]
    launched = data["parts"]["launch"]["metrics"]
    assert launched["sft_lora"]["exit_code"] == launched["grpo_lora"]["exit_code"] == 0
    assert launched["sft_lora"]["metrics_rows"] == launched["grpo_lora"]["metrics_rows"] == 2


@pytest.mark.gpu
def test_gpu_check_on_cuda(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device (run bench/gpu_check.py on a GPU machine)")
    data = _run(tmp_path / "out", "--device", "cuda", "--budget-s", "450", timeout=600)
    assert data["precision"] == "bf16"
    assert set(data["parts"]) == ALL_PARTS
