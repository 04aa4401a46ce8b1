"""SFT on the tiny model: batching plan, masked loss, a full run, resume after SIGKILL, LoRA + serving it."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
import torch.nn.functional as F

from test_rollout_support import policy_server, subprocess_env, tiny_model_dir
from test_train_sft_support import read_jsonl, toy_sft_rows
from toolgym.schema import TrainingSample
from toolgym.train.batching import IGNORE_INDEX, collate, micro_batches, plan_steps
from toolgym.train.loss import nll_sum, token_logprobs
from toolgym.train.metrics import read_metrics
from toolgym.train.sft import SFTConfig, run_sft, split_eval
from toolgym.train.sft_data import SFTExample

pytestmark = pytest.mark.slow


def small_config(out: Path, **overrides: Any) -> SFTConfig:
    fields: dict[str, Any] = {
        "data": str(toy_sft_rows()), "model": str(tiny_model_dir()), "out": str(out), "lr": 5e-3,
        "max_steps": 8, "save_every": 4, "batch_tokens": 1400, "max_rows": 2, "threads": 1, "eval_fraction": 0.2,
        "warmup_steps": 1,
    }
    fields.update(overrides)
    return SFTConfig(**fields)


# -- batching --------------------------------------------------------------------------------------


def _sample(ids: list[int], mask: list[int]) -> TrainingSample:
    logprobs = [-0.5 * i if m else 0.0 for i, m in enumerate(mask)]
    return TrainingSample(input_ids=ids, loss_mask=mask, sampler_logprobs=logprobs)


def test_collate_shifts_targets_to_the_trained_next_tokens() -> None:
    batch = collate([_sample([5, 6, 7, 8], [0, 0, 1, 1]), _sample([9, 10], [0, 1])], pad_id=0)
    assert batch.sampler_logprobs.tolist() == [[0.0, -1.0, -1.5, 0.0], [-0.5, 0.0, 0.0, 0.0]]
    assert batch.input_ids.tolist() == [[5, 6, 7, 8], [9, 10, 0, 0]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1], [1, 1, 0, 0]]
    ignore = IGNORE_INDEX
    assert batch.targets.tolist() == [[ignore, 7, 8, ignore], [10, ignore, ignore, ignore]]
    assert (batch.tokens, batch.supervised) == (6, 3)


def test_micro_batches_respect_the_token_budget_and_keep_every_sample() -> None:
    lengths = [10, 300, 40, 45, 800, 12, 2000, 50]
    batches = micro_batches(lengths, list(range(len(lengths))), token_budget=400)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) * max(lengths[i] for i in batch) <= 400 or len(batch) == 1


def test_micro_batches_keep_samples_with_one_system_prompt_together() -> None:
    from toolgym.train.batching import PREFIX_KEY_TOKENS, prefix_keys

    one, other = [1] * PREFIX_KEY_TOKENS, [2] * PREFIX_KEY_TOKENS
    samples = [_sample([*one, i], [0] * PREFIX_KEY_TOKENS + [1]) if i % 2 else _sample([*other, i, i], [0] * PREFIX_KEY_TOKENS + [1, 1])
               for i in range(10)]
    keys = prefix_keys(samples)
    assert keys == [0, 1] * 5  # distinct openings, in order of first appearance
    batches = micro_batches([len(s.input_ids) for s in samples], list(range(10)), token_budget=10_000, keys=keys)
    assert sorted(map(sorted, batches)) == [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]


def test_the_plan_is_a_function_of_lengths_and_seed() -> None:
    lengths = [20 + (i * 37) % 300 for i in range(50)]
    plan = plan_steps(lengths, token_budget=600, grad_accum=2, seed=3, epochs=2)
    assert plan == plan_steps(lengths, token_budget=600, grad_accum=2, seed=3, epochs=2)
    assert plan != plan_steps(lengths, token_budget=600, grad_accum=2, seed=4, epochs=2)
    seen = [i for step in plan for batch in step for i in batch]
    assert sorted(seen) == sorted(list(range(50)) * 2)  # every sample once per epoch
    assert all(1 <= len(step) <= 2 for step in plan)
    long = plan_steps(lengths, token_budget=600, seed=3, max_steps=len(plan) * 3)
    assert len(long) == len(plan) * 3  # max_steps runs as many epochs as it needs


def test_eval_split_holds_out_whole_task_groups() -> None:
    examples = [SFTExample(line=i, group=f"task{i // 3}", samples=[], source="rendered") for i in range(30)]
    train, held = split_eval(examples, 0.2, seed=0)
    assert len({e.group for e in held}) == 2 and not {e.group for e in held} & {e.group for e in train}
    assert split_eval(examples, 0.0, seed=0) == (examples, [])


# -- loss ------------------------------------------------------------------------------------------


def test_the_head_only_at_trained_positions_equals_the_full_forward() -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir()))
    batch = collate([_sample(list(range(3, 40)), [0] * 20 + [1] * 17), _sample(list(range(50, 70)), [0] * 15 + [1] * 5)],
                    pad_id=0)
    with torch.no_grad():
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
        selected = batch.targets != IGNORE_INDEX
        expected = F.log_softmax(logits[selected].float(), -1).gather(-1, batch.targets[selected][:, None]).squeeze(-1)
        assert token_logprobs(model, batch) == pytest.approx(expected, abs=1e-5)
        assert float(nll_sum(model, batch)) == pytest.approx(-float(expected.sum()), rel=1e-5)
    assert expected.numel() == 17 + 5  # every trained token, each predicted from the position before it


def test_a_shared_prefix_runs_once_and_gives_the_same_logprobs_and_gradients() -> None:
    from transformers import AutoModelForCausalLM

    from toolgym.train import loss as loss_module

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir()))
    prefix = list(range(5, 45))  # 40 shared ids, then rows of different lengths (right padding)
    samples = [_sample(prefix + list(range(60 + n, 60 + 2 * n)), [0] * 40 + [0, 1] * (n // 2) + [1] * (n % 2))
               for n in (9, 4, 13)]
    batch = collate(samples, pad_id=0)
    assert loss_module.shared_prefix_length(batch.input_ids, batch.attention_mask) == 40

    def run(min_prefix: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        model.zero_grad()
        original = loss_module.MIN_SHARED_PREFIX
        loss_module.MIN_SHARED_PREFIX = min_prefix
        try:
            values = token_logprobs(model, batch)
        finally:
            loss_module.MIN_SHARED_PREFIX = original
        values.sum().backward()
        return values.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    shared, shared_grads = run(min_prefix=32)
    plain, plain_grads = run(min_prefix=10_000)
    assert shared == pytest.approx(plain, abs=1e-5)
    assert shared_grads.keys() == plain_grads.keys() and len(plain_grads) > 10
    for name, grad in plain_grads.items():
        assert torch.allclose(shared_grads[name], grad, atol=1e-5, rtol=1e-4), name


def test_rows_that_differ_early_share_no_prefix() -> None:
    from toolgym.train.loss import shared_prefix_length

    batch = collate([_sample([1, 2, 3, 4], [0, 0, 1, 1]), _sample([1, 2, 9, 4, 5], [0, 0, 1, 1, 1])], pad_id=0)
    assert shared_prefix_length(batch.input_ids, batch.attention_mask) == 2
    same = collate([_sample([1, 2, 3], [0, 1, 1]), _sample([1, 2, 3, 4], [0, 1, 1, 1])], pad_id=0)
    assert shared_prefix_length(same.input_ids, same.attention_mask) == 2  # the shorter row keeps a token
    assert shared_prefix_length(same.input_ids[:1], same.attention_mask[:1]) == 0


# -- a full run ------------------------------------------------------------------------------------


def test_full_sft_learns_checkpoints_and_exports_loadable_models(tmp_path: Path) -> None:
    from toolgym.policy.hf import HFPolicy

    result = run_sft(small_config(tmp_path / "run", max_steps=10, save_every=5, save_total_limit=1))
    assert result.steps == result.total_steps == 10
    metrics = read_metrics(tmp_path / "run")
    train = [r for r in metrics if r["kind"] == "train"]
    evals = [r for r in metrics if r["kind"] == "eval"]
    assert [r["step"] for r in train] == list(range(1, 11)) and [r["step"] for r in evals] == [5, 10]
    assert train[-1]["loss"] < train[0]["loss"] - 1.0
    assert evals[-1]["eval_loss"] < evals[0]["eval_loss"]
    assert all(r["supervised_tokens"] > 0 for r in train)
    assert train[0]["lr"] == 0.0 and train[1]["lr"] == pytest.approx(5e-3)  # one warmup step, then cosine decay
    assert all(a["lr"] >= b["lr"] for a, b in itertools.pairwise(train[1:]))
    assert result.best_eval_loss == min(r["eval_loss"] for r in evals)
    # save_total_limit=1 keeps the last checkpoint only
    assert sorted(p.name for p in (tmp_path / "run/checkpoints").iterdir()) == ["step-00000010"]
    best = json.loads((tmp_path / "run/best/best.json").read_text())
    assert best["step"] == result.best_step
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["data_sha256"] and manifest["prompt_style"] == "compact"
    policy = HFPolicy(tmp_path / "run/final")  # a model folder the rollout can load as hf:PATH
    assert (tmp_path / "run/final/toolgym.json").is_file() and policy.tokenizer is not None
    # Re-running a finished run trains nothing more.
    again = run_sft(small_config(tmp_path / "run", max_steps=10, save_every=5, save_total_limit=1))
    assert again.resumed_from_step == 10 and len(read_metrics(tmp_path / "run")) == len(metrics)


def _sft_command(out: Path) -> list[str]:
    return [sys.executable, "-m", "toolgym.cli.main", "train", "sft", "--data", str(toy_sft_rows()),
            "--model", str(tiny_model_dir()), "--out", str(out), "--lr", "5e-3", "--max-steps", "40",
            "--save-every", "5", "--batch-tokens", "700", "--threads", "1", "--eval-fraction", "0.2",
            "--no-progress", "--seed", "0"]


def test_a_run_killed_mid_training_resumes_with_the_same_data_order_and_loss_curve(tmp_path: Path) -> None:
    reference = run_sft(SFTConfig(data=str(toy_sft_rows()), model=str(tiny_model_dir()), out=str(tmp_path / "ref"),
                                  lr=5e-3, max_steps=40, save_every=5, batch_tokens=700, threads=1, eval_fraction=0.2))
    assert reference.steps == 40
    out = tmp_path / "killed"
    log = open(tmp_path / "killed.log", "w")  # noqa: SIM115
    process = subprocess.Popen(_sft_command(out), stdout=log, stderr=subprocess.STDOUT, env=subprocess_env())
    deadline = time.monotonic() + 300
    steps_before_kill = 0
    while time.monotonic() < deadline and process.poll() is None:
        rows = [r for r in read_metrics(out) if r.get("kind") == "train"] if (out / "metrics.jsonl").exists() else []
        if rows and rows[-1]["step"] >= 12:
            process.send_signal(signal.SIGKILL)
            steps_before_kill = rows[-1]["step"]
            break
        time.sleep(0.02)
    process.wait(timeout=60)
    log.close()
    assert process.returncode == -signal.SIGKILL, (tmp_path / "killed.log").read_text()[-2000:]
    assert 12 <= steps_before_kill < 40
    resumed = subprocess.run(_sft_command(out), capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "resumed from step" in resumed.stdout
    curve = read_metrics(out)
    expected = read_metrics(tmp_path / "ref")
    assert [(r["kind"], r["step"]) for r in curve] == [(r["kind"], r["step"]) for r in expected]
    for got, want in zip(curve, expected, strict=True):
        key = "loss" if got["kind"] == "train" else "eval_loss"
        assert got[key] == pytest.approx(want[key], rel=1e-6, abs=1e-7), (got, want)
        if got["kind"] == "train":
            assert (got["supervised_tokens"], got["lr"]) == (want["supervised_tokens"], want["lr"])
    assert [r["elapsed_s"] for r in curve if r["kind"] == "train"] == sorted(
        r["elapsed_s"] for r in curve if r["kind"] == "train")  # the clock continues too


def test_trackers_are_used_only_when_installed_and_asked() -> None:
    from accelerate.utils import is_tensorboard_available

    from toolgym.train.metrics import check_trackers

    assert check_trackers([]) == []
    with pytest.raises(ValueError, match="unknown tracker"):
        check_trackers(["mlflow"])
    if is_tensorboard_available():
        assert check_trackers(["tensorboard"]) == ["tensorboard"]
    else:
        with pytest.raises(ValueError, match="not installed"):
            check_trackers(["tensorboard"])


def test_resuming_with_other_settings_is_refused(tmp_path: Path) -> None:
    from toolgym.train.sft import SFTError

    run_sft(small_config(tmp_path / "run", max_steps=4))
    with pytest.raises(SFTError, match="different resume_config"):
        run_sft(small_config(tmp_path / "run", max_steps=4, lr=1e-3))


# -- LoRA ------------------------------------------------------------------------------------------


def _greedy(model: Any, prompt: list[int], steps: int, stop: set[int]) -> list[int]:
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(steps):
            token = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
            ids.append(token)
            if token in stop:
                break
    return ids[len(prompt):]


def test_lora_adapter_loads_with_peft_merges_exactly_and_is_served(tmp_path: Path) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    result = run_sft(small_config(tmp_path / "run", lora=True, lora_rank=8, lora_alpha=16, lr=2e-2, max_steps=6,
                                  merge=True, target_modules=["q_proj", "v_proj", "up_proj"]))
    adapter = Path(result.final_dir or "")
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["r"] == 8 and sorted(config["target_modules"]) == ["q_proj", "up_proj", "v_proj"]
    # checkpoints hold the adapter, not another copy of the base weights
    checkpoint = tmp_path / "run/checkpoints/step-00000006"
    assert (checkpoint / "adapter/adapter_model.safetensors").is_file() and not (checkpoint / "model.safetensors").exists()

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir()))
    row = read_jsonl(toy_sft_rows())[0]
    text = tokenizer.apply_chat_template(row["messages"][:2], tokenize=False, add_generation_prompt=True)
    prompt = tokenizer(text, add_special_tokens=False)["input_ids"]
    stop = {tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.convert_tokens_to_ids("<|endoftext|>")}
    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir())).eval()
    with torch.no_grad():
        base_logits = base(input_ids=torch.tensor([prompt])).logits[0, -1].clone()
    unmerged = PeftModel.from_pretrained(base, str(adapter)).eval()
    with torch.no_grad():
        adapted_logits = unmerged(input_ids=torch.tensor([prompt])).logits[0, -1]
    assert (adapted_logits - base_logits).abs().max() > 1e-3  # the adapter changes the model
    merged = AutoModelForCausalLM.from_pretrained(str(result.merged_dir)).eval()
    unmerged_ids = _greedy(unmerged, prompt, 16, stop)
    assert _greedy(merged, prompt, 16, stop) == unmerged_ids

    with policy_server(tiny_model_dir(), "--lora", str(adapter)) as server:
        response = httpx.post(f"{server.url}/completions", timeout=120, json={
            "model": server.model, "prompt": [prompt], "max_tokens": 16, "temperature": 0.0})
        assert response.status_code == 200, response.text
        served = response.json()["choices"][0]["token_ids"]
    assert served == unmerged_ids
