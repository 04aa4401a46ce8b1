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


def test_help_runs_without_a_device() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--bandwidth-gbs" in done.stdout and "roofline" in done.stdout


@pytest.mark.parametrize(("name", "expected"), [
    ("NVIDIA H200", 4800.0), ("NVIDIA H100 80GB HBM3", 3350.0), ("NVIDIA H100 PCIe", 2000.0),
    ("NVIDIA A100-SXM4-80GB", 2039.0), ("NVIDIA A100-SXM4-40GB", 1555.0), ("NVIDIA L40S", 864.0),
    ("NVIDIA L4", 300.0), ("cpu (2 cores)", None)])
def test_bandwidth_comes_from_the_device_name(name: str, expected: float | None) -> None:
    gpu_check = _module()
    assert gpu_check.memory_bandwidth_gbs(name) == expected
    assert gpu_check.memory_bandwidth_gbs(name, 1000.0) == 1000.0  # the flag wins


def test_decode_roofline_is_weights_and_kv_read_once_over_bandwidth() -> None:
    gpu_check = _module()
    fields = dict(gpu_check.QWEN3_0_6B)
    parameters = 596_049_920  # Qwen3-0.6B, tied embeddings: the lm_head reads the embedding once
    kv_per_token = 28 * 2 * 8 * 128  # layers × (K, V) × kv heads × head dim
    roofline = gpu_check.decode_roofline(fields, parameters, rows=64, context_tokens=1000.5, value_bytes=2,
                                         bandwidth_gbs=4800.0)
    step = (parameters * 2 + 64 * 1000.5 * kv_per_token * 2) / 4.8e12
    assert roofline["step_s"] == pytest.approx(step, rel=1e-12)
    assert roofline["tokens_per_s"] == pytest.approx(64 / step, rel=1e-12)
    untied = gpu_check.decode_roofline({**fields, "tie_word_embeddings": False}, parameters, 1, 0.0, 2, 4800.0)
    assert untied["weight_bytes"] == (parameters - 151936 * 1024) * 2  # the input embedding is only gathered


@pytest.mark.slow
def test_engine_part_reports_the_engine_beside_eager_generate_and_the_roofline(tmp_path: Path) -> None:
    data = _run(tmp_path / "out", "--device", "cpu", "--shape", "tiny", "--parts", "engine", "--bandwidth-gbs", "20",
                "--budget-s", "200")
    for entry in data["parts"]["engine"]["metrics"]["generate_batch"]:
        roofline = entry["roofline"]
        assert roofline["bandwidth_gbs"] == 20.0 and roofline["tokens_per_s"] > 0
        for where in (entry, entry["static"], entry["generate_eager"]):
            assert where["tokens_per_s"] > 0
            # the fraction is written to 4 decimals: half a unit of the last one apart at most
            assert where["tokens_per_s_of_roofline"] == pytest.approx(where["tokens_per_s"] / roofline["tokens_per_s"],
                                                                      abs=5e-5)
        assert entry["generate_eager"]["tokens"] == entry["batch"] * entry["new_tokens"]
        assert entry["static"]["compiled"] is False  # compiled only on CUDA


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
