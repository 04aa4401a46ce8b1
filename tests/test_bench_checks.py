"""The benches' equal-work checks on constructed results: a side that did not train or call a tool fails the
bench with the reason, so no ratio is ever printed for work the sides did not share. No timing here."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


grpo_step = _load("grpo_step")
rollout = _load("rollout")


def _run(seconds: list[float], updated: list[bool], signal: list[int], tool_calls: float = 1.2,
         tokens: float = 30.0, checkpointing: bool = False) -> dict[str, Any]:
    """One side's raw numbers for one round, as a side process writes them (the first step is warm-up)."""
    return {"step_seconds": seconds, "updated": updated, "groups_with_signal": signal,
            "tool_calls_per_episode": [tool_calls] * len(seconds),
            "completion_tokens_per_episode": [tokens] * len(seconds),
            "gradient_checkpointing": checkpointing, "dtype": "float32", "threads": 2}


def _grpo_result(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    result: dict[str, Any] = {"sides": grpo_step.summarize(runs, warmup=1)}
    result["ratios"] = grpo_step.ratios(result["sides"])
    result["problems"] = grpo_step.problems(result, tolerance=0.3)
    return result


def test_grpo_summary_drops_warmup_and_takes_ratios_per_round() -> None:
    runs = {"toolgym": [_run([9.0, 1.0, 3.0], [True] * 3, [2, 2, 3]), _run([9.0, 2.0, 2.0], [True] * 3, [1, 2, 2])],
            "trl": [_run([50.0, 10.0, 10.0], [True] * 3, [2, 2, 2]), _run([50.0, 8.0, 8.0], [True] * 3, [2, 3, 2])]}
    result = _grpo_result(runs)
    toolgym = result["sides"]["toolgym"]
    assert toolgym["step_seconds"] == [1.0, 3.0, 2.0, 2.0]
    assert toolgym["timed_steps"] == 4 and toolgym["updates"] == 4
    assert toolgym["groups_with_signal"] == [2, 3, 2, 2]
    assert result["ratios"]["toolgym/trl"]["median"] == pytest.approx(2.0 / 9.0)
    assert result["ratios"]["toolgym/trl"]["per_round"] == pytest.approx([0.2, 0.25])
    assert result["problems"] == []


def test_grpo_side_without_update_or_tool_call_fails_the_bench(tmp_path: Path) -> None:
    runs = {"toolgym": [_run([9.0, 1.0, 1.0], [True, False, False], [1, 0, 0])],
            "trl": [_run([50.0, 10.0, 10.0], [True] * 3, [2, 2, 2], tool_calls=0.0)]}
    result = _grpo_result(runs)
    out = tmp_path / "o.json"
    with pytest.raises(SystemExit) as failed:
        grpo_step.finish(result, out)
    reason = str(failed.value.code)
    assert "toolgym (HF engine): 2 of 2 timed steps made no optimizer step" in reason
    assert "no group with reward signal" in reason
    assert "TRL: 0.00 tool calls per episode: not a tool-use workload" in reason
    assert json.loads(out.read_text())["problems"] == result["problems"]  # the numbers are kept for a look


def test_grpo_unequal_settings_or_work_fail_the_bench() -> None:
    runs = {"toolgym": [_run([9.0, 1.0, 1.0], [True] * 3, [2, 2, 2], tokens=30.0)],
            "trl": [_run([50.0, 10.0, 10.0], [True] * 3, [2, 2, 2], tokens=60.0, checkpointing=True)]}
    problems = _grpo_result(runs)["problems"]
    assert any("different (gradient checkpointing" in p for p in problems)
    assert any(p.startswith("completion_tokens_per_episode differ") for p in problems)


def _side(tool_calls: float, tokens: float = 70.0, episodes: int = 64) -> dict[str, Any]:
    return rollout.side_summary([100.0, 120.0], [{"episodes": episodes, "completion_tokens_per_episode": tokens,
                                                  "turns_per_episode": 2.0, "tool_calls_per_episode": tool_calls}] * 2)


def test_rollout_checks() -> None:
    assert rollout.work_problems({"serial": _side(1.1), "batched": _side(1.1)}, 0.3, 1.0) == []
    no_calls = rollout.work_problems({"serial": _side(1.1), "batched": _side(0.0)}, 0.3, 1.0)
    assert any(p.startswith("batched: 0.00 tool calls per episode") for p in no_calls)
    unequal = rollout.work_problems({"hf": _side(1.1, tokens=40.0), "vllm": _side(1.1, episodes=32)}, 0.3, 1.0)
    assert any("different numbers of episodes" in p for p in unequal)
    assert any(p.startswith("completion_tokens_per_episode differ") for p in unequal)
    ratio = rollout.ratio_summary(_side(1.1), _side(1.1))
    assert ratio["median"] == pytest.approx(1.0) and ratio["per_run"] == pytest.approx([1.0, 1.0])
    with pytest.raises(SystemExit, match="not a tool-use workload"):
        rollout.finish({"problems": no_calls}, None)
