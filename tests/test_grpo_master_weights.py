"""GRPO's weights on bf16 checkpoints: the optimizer steps float32 master weights (an lr 1e-6 AdamW step rounds
away on bf16-stored weights), and the KL reference is a frozen engine-dtype copy only where one is needed, on
the trainer's device or streamed from the CPU."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from test_grpo_support import run_toy, toy_config
from test_grpo_trainer import train_rows
from test_rollout_support import tiny_model_dir
from toolgym.schema import TrainingSample
from toolgym.train.batching import Batch, collate
from toolgym.train.grpo.model_setup import load_model_for_grpo
from toolgym.train.grpo.reference import build_reference
from toolgym.train.loss import token_logprobs
from toolgym.train.optim import build_optimizer

LR = 1e-6


def bf16_checkpoint(root: Path) -> Path:
    """The tiny model saved in bfloat16, as a Qwen3-8B checkpoint is."""
    folder = root / "tiny-bf16"
    shutil.copytree(tiny_model_dir(), folder)
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.bfloat16, local_files_only=True)
    model.save_pretrained(folder)
    return folder


def _adamw_steps(model: torch.nn.Module, steps: int) -> dict[str, torch.Tensor]:
    """`steps` AdamW steps at LR with every gradient 1; returns the weights after, as float32."""
    optimizer = build_optimizer(model, LR)
    for _ in range(steps):
        for parameter in model.parameters():
            parameter.grad = torch.ones_like(parameter)
        optimizer.step()
    return {name: p.detach().float().clone() for name, p in model.named_parameters()}


def test_an_lr_1e6_step_rounds_away_on_bf16_weights_and_moves_the_fp32_masters(tmp_path: Path) -> None:
    folder = bf16_checkpoint(tmp_path)
    config = toy_config(tmp_path, tmp_path / "run", model=str(folder), engine={"dtype": "bfloat16"},
                        optim={"lr": LR})
    masters = load_model_for_grpo(config)
    stored = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.bfloat16, local_files_only=True)
    start = {name: p.detach().float().clone() for name, p in stored.named_parameters()}
    assert all(p.dtype == torch.float32 for p in masters.parameters())
    assert all(torch.equal(p.detach(), start[name]) for name, p in masters.named_parameters())  # the same values
    steps = 40
    in_bf16, in_fp32 = _adamw_steps(stored, steps), _adamw_steps(masters, steps)
    checked = 0
    for name, before in start.items():
        big = before.abs() >= 0.01  # bf16 spacing there is ≥ 2^-14: half of it (3e-5) swallows a 1e-6 step
        assert torch.equal(in_bf16[name][big], before[big]), name  # before the fix: 40 updates, nothing moved
        # AdamW, gradient 1: each step moves a weight by lr / (1 + eps); each float32 subtraction rounds by at
        # most half a float32 spacing, 2^-25 for |w| ≤ 1
        assert before.abs().max() <= 1.0
        moved = before - in_fp32[name]
        assert (moved - steps * LR / (1 + 1e-8)).abs().max() <= steps * 2.0**-25, name
        band = (before.abs() >= 2.0**-7) & (before.abs() < 2.0**-6)  # bf16 half-spacing 2^-15 ≈ 3.05e-5 < 4e-5
        served = in_fp32[name][band].bfloat16().float()  # what a bf16 engine is sent
        assert (served != before[band]).all(), name
        checked += int(band.sum())
    assert checked > 1000


def test_lora_keeps_the_base_in_bf16_and_trains_fp32_adapters(tmp_path: Path) -> None:
    config = toy_config(tmp_path, tmp_path / "run", model=str(bf16_checkpoint(tmp_path)),
                        engine={"dtype": "bfloat16"}, lora={"enabled": True, "rank": 4, "alpha": 8})
    model = load_model_for_grpo(config)
    trained = [p for p in model.parameters() if p.requires_grad]
    frozen = [p for p in model.parameters() if not p.requires_grad]
    assert trained and all(p.dtype == torch.float32 for p in trained)
    assert frozen and all(p.dtype == torch.bfloat16 for p in frozen)


def _batch() -> Batch:
    ids = list(range(5, 85))  # rows share 60 ids: the reference forward takes the shared-prefix path too
    return collate([TrainingSample(input_ids=ids, loss_mask=[0] * 40 + [1] * 40, sampler_logprobs=[0.0] * 80),
                    TrainingSample(input_ids=ids[:70], loss_mask=[0] * 40 + [1] * 30, sampler_logprobs=[0.0] * 70)],
                   pad_id=0)


def test_a_reference_copy_exists_only_for_full_weights_with_kl(tmp_path: Path) -> None:
    folder = str(bf16_checkpoint(tmp_path))
    plain = toy_config(tmp_path, tmp_path / "run", model=folder, engine={"dtype": "bfloat16"})
    model = load_model_for_grpo(plain)
    assert build_reference(model, plain, "cpu") is None  # kl_coef 0: no copy
    lora = plain.model_copy(update={"lora": plain.lora.model_copy(update={"enabled": True}),
                                    "loss": plain.loss.model_copy(update={"kl_coef": 0.1})})
    assert build_reference(model, lora, "cpu") is None  # LoRA: the adapter switched off is the reference
    with_kl = plain.model_copy(update={"loss": plain.loss.model_copy(update={"kl_coef": 0.1})})
    reference = build_reference(model, with_kl, "cpu")
    assert reference is not None and not reference.training
    assert all(p.dtype == torch.bfloat16 and not p.requires_grad for p in reference.parameters())
    with torch.no_grad():
        next(model.parameters()).add_(1.0)  # the trainer's weights move; the reference stays the start
    before = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16, local_files_only=True)
    assert all(torch.equal(a, b) for a, b in zip(reference.parameters(), before.parameters(), strict=True))


def test_a_cpu_reference_streams_its_modules_and_gives_the_same_logprobs(tmp_path: Path) -> None:
    config = toy_config(tmp_path, tmp_path / "run", model=str(bf16_checkpoint(tmp_path)),
                        engine={"dtype": "bfloat16"}, loss={"kl_coef": 0.1})
    model = load_model_for_grpo(config)
    same = build_reference(model, config, "cpu")
    streamed = build_reference(model, config.model_copy(update={"loss": config.loss.model_copy(
        update={"reference_device": "cpu"})}), "cpu")
    assert {p.device.type for p in streamed.parameters()} == {"meta"}  # weights held by the offload hooks
    batch = _batch()
    with torch.no_grad():
        assert torch.equal(token_logprobs(streamed, batch), token_logprobs(same, batch))


@pytest.mark.gpu
def test_a_cpu_reference_leaves_the_gpu_memory_to_the_trainer(tmp_path: Path) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device: on CPU the reference's execution device is the CPU itself")
    config = toy_config(tmp_path, tmp_path / "run", model=str(bf16_checkpoint(tmp_path)),
                        engine={"dtype": "bfloat16", "device": "cuda"}, loss={"kl_coef": 0.1})
    model = load_model_for_grpo(config)
    size = sum(p.numel() * 2 for p in model.parameters())
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated()
    same = build_reference(model, config, "cuda")
    assert torch.cuda.memory_allocated() - held >= size
    held = torch.cuda.memory_allocated()
    streamed = build_reference(model, config.model_copy(update={"loss": config.loss.model_copy(
        update={"reference_device": "cpu"})}), "cuda")
    assert torch.cuda.memory_allocated() - held < size / 2
    batch = _batch().to("cuda")
    with torch.no_grad():
        assert torch.equal(token_logprobs(streamed, batch), token_logprobs(same, batch))


@pytest.mark.slow
def test_a_grpo_run_at_lr_1e6_moves_bf16_checkpoint_weights(tmp_path: Path) -> None:
    folder = bf16_checkpoint(tmp_path)
    config = toy_config(tmp_path, tmp_path / "run", model=str(folder), steps=2, engine={"dtype": "bfloat16"},
                        optim={"lr": LR}, loss={"kl_coef": 0.01, "reference_device": "cpu"}, eval={"enabled": False})
    result = run_toy(config)
    rows = train_rows(tmp_path / "run")
    updates = sum(1 for row in rows if row["updated"])
    assert updates >= 1 and all(row["kl"] is not None for row in rows if row["updated"])
    start = load_file(str(folder / "model.safetensors"))
    final = load_file(str(Path(result.final_dir) / "model.safetensors"))
    moved = 0
    for name, before in start.items():
        after = final[name]
        assert after.dtype == torch.float32, name  # the master weights are what the run saves
        delta = (after - before.float()).abs()
        # AdamW's first two steps move a weight by at most lr·1.0014 each (step 1: |m̂/√v̂| = |g|/(|g|+eps) ≤ 1;
        # step 2: Cauchy-Schwarz on its bias-corrected averages), plus float32 rounding (|w| ≤ 2: 2^-24 a step)
        assert updates <= 2 and delta.max() <= updates * (1.0014 * LR + 2.0**-24), name
        moved += int((delta[before.float().abs() >= 0.01] > 0).sum())
    assert moved > 1000  # in bf16 every one of these would have stayed put
