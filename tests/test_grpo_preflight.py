"""The GRPO memory preflight: the one-GPU Qwen3-8B launch config fits its own plan, full weights are refused
naming what to change, `--dry-run` prints the plan from a config.json alone, and a CUDA run that cannot fit
stops before loading weights."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from test_grpo_support import toy_config
from toolgym.cli.main import app
from toolgym.train.architecture import Architecture
from toolgym.train.grpo.config import GRPOConfig, load_grpo_config
from toolgym.train.grpo.preflight import architecture_file, suggestions, workload
from toolgym.train.memory_plan import GIB, MemoryPlan, Workload, plan_memory

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = ROOT / "configs" / "launch" / "grpo_qwen3_8b.yaml"
CARD = 80 * GIB


def _launch(*overrides: str) -> GRPOConfig:
    return load_grpo_config(LAUNCH, list(overrides))


def _plan(config: GRPOConfig, processes: int = 1) -> tuple[Workload, MemoryPlan]:
    architecture = Architecture.from_file(ROOT / architecture_file(config))
    work = workload(config, architecture, CARD, processes)
    return work, plan_memory(work)


def test_the_one_gpu_launch_config_fits_its_own_plan_on_an_80gb_card() -> None:
    config = _launch()
    assert architecture_file(config) == Path("configs/launch/models/qwen3_8b/config.json")  # no model folder yet
    work, plan = _plan(config)
    assert work.lora_rank == 32 and work.reference == "adapter_off"  # KL to the adapter switched off: no copy
    assert plan.fits, plan.render()
    assert plan.vllm_bytes >= (plan.vllm_floor_bytes or 0)


def test_the_ddp_recipe_of_the_launch_config_fits_per_rank() -> None:
    work, plan = _plan(_launch("engine.name=hf", "engine.max_batch_size=24"), processes=8)
    assert work.processes == 8 and work.hf_sampling_rows == 24
    assert plan.fits, plan.render()
    _, default_rows = _plan(_launch("engine.name=hf"), processes=8)
    assert not default_rows.fits  # 64 rows × 16K tokens of KV cache do not fit next to the weights


def test_full_weights_on_one_80gb_card_are_refused_naming_the_settings_that_fit() -> None:
    config = _launch("lora.enabled=false")
    work, plan = _plan(config)
    assert not plan.fits
    assert work.reference == "gpu"  # full weights with KL: a frozen copy
    advice = suggestions(config, work)
    assert any(line.strip().startswith("lora.enabled: true") for line in advice)
    assert advice[-1].strip().startswith("together: lora.enabled: true → peak") and advice[-1].endswith("(fits)")


def _followed(advice: str) -> list[str]:
    """The --set overrides a "together: …" line of the advice asks for."""
    changes = advice.split("together: ", 1)[1].split(" → ", 1)[0].split("; ")
    overrides = []
    for change in changes:
        keys, value = change.split(": ", 1)
        for key in keys.split(" and "):
            overrides.append(f"{key}={value.removeprefix('at most ')}")
    return overrides


def test_the_seed_stage_on_one_card_gets_settings_that_fit_when_followed() -> None:
    """The seed's stage (full weights, 64K contexts, vLLM at 0.85) needs several changes at once."""
    seed = ("lora.enabled=false", "optim.batch_tokens=65536", "sampling.max_context_tokens=65536",
            "engine.gpu_memory_utilization=0.85", "engine.max_position_embeddings=65536")
    config = _launch(*seed)
    work, plan = _plan(config)
    assert not plan.fits
    together = suggestions(config, work)[-1]
    assert together.strip().startswith("together: lora.enabled: true") and together.endswith("(fits)")
    assert "engine.gpu_memory_utilization" in together and "at most" in together
    assert _plan(_launch(*seed, *_followed(together)))[1].fits


def _dry_run(*arguments: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["train", "grpo", "--dry-run", *arguments], env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_the_dry_run_prints_the_plan_of_the_launch_config_and_exits_0() -> None:
    code, output = _dry_run("--config", str(LAUNCH))
    assert "8,190,735,360 parameters" in output and "LoRA r=32" in output
    for item in ("weights: frozen base", "optimizer states", "activations: layer inputs (checkpointing)",
                 "loss: vocabulary-wide tensors", "vLLM (gpu_memory_utilization × card)"):
        assert item in output
    if torch.cuda.is_available():  # the plan is for the visible card
        assert code == (0 if "fits:" in output else 1)
    else:
        assert "card 80.0 GiB (preflight.gpu_memory_gib" in output
        assert code == 0 and "fits:" in output


def test_the_dry_run_of_full_weights_exits_1_and_says_what_to_change() -> None:
    code, output = _dry_run("--config", str(LAUNCH), "--set", "lora.enabled=false")
    assert code == 1
    assert "does not fit" in output and "lora.enabled: true" in output


def test_a_dry_run_without_a_config_json_names_the_setting(tmp_path: Path) -> None:
    config = tmp_path / "grpo.yaml"
    config.write_text(f"tasks: {tmp_path}\nmodel: {tmp_path / 'not-yet'}\nout: {tmp_path / 'out'}\n")
    code, output = _dry_run("--config", str(config))
    assert code == 2 and "preflight.architecture" in output


@pytest.mark.gpu
def test_a_cuda_run_that_cannot_fit_stops_before_loading_weights(tmp_path: Path) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device: the preflight runs at the start of CUDA runs only")
    from toolgym.train.grpo.trainer import GRPOError
    from toolgym.train.grpo.trainer import run_grpo as run

    card_gib = torch.cuda.get_device_properties(0).total_memory / GIB
    tokens = int(card_gib * GIB / 1e4)  # the tiny model's ~4000-entry vocabulary alone takes > 1 card
    config = toy_config(tmp_path, tmp_path / "run", engine={"device": "cuda"},
                        optim={"batch_tokens": tokens, "precision": "bf16"})
    with pytest.raises(GRPOError, match=r"does not fit(.|\n)*optim\.batch_tokens"):
        run(config)
    assert not (tmp_path / "run" / "checkpoints").exists()
