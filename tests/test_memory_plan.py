"""The memory plan's arithmetic: parameter counts from config.json against real models, the plan's lines, and its
activation formula against the bytes a real forward saves for the backward."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from test_rollout_support import tiny_model_dir
from toolgym.train.architecture import Architecture, UnknownArchitecture
from toolgym.train.memory_plan import GIB, Workload, layer_activation_bytes, plan_memory

ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
QWEN3_8B: dict[str, Any] = {  # Qwen/Qwen3-8B's published config.json (the fields that decide its shape)
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False, "head_dim": 128,
    "hidden_size": 4096, "intermediate_size": 12288, "max_position_embeddings": 40960, "num_attention_heads": 32,
    "num_hidden_layers": 36, "num_key_value_heads": 8, "tie_word_embeddings": False, "vocab_size": 151936,
}
SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96,
         "vocab_size": 300}
FAMILIES = [  # each family's own biases, norms, GQA and head_dim
    {"model_type": "qwen3", "num_key_value_heads": 2, "head_dim": 24, "attention_bias": True,
     "tie_word_embeddings": False},
    {"model_type": "qwen2", "num_key_value_heads": 2, "tie_word_embeddings": False},
    {"model_type": "qwen2", "num_key_value_heads": 4, "tie_word_embeddings": True},
    {"model_type": "llama", "num_key_value_heads": 1, "attention_bias": True, "mlp_bias": True,
     "tie_word_embeddings": False},
    {"model_type": "mistral", "num_key_value_heads": 2, "head_dim": 32, "tie_word_embeddings": False},
]


def _trainable(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def test_the_parameter_count_of_the_tiny_model_is_exact() -> None:
    folder = tiny_model_dir()
    model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True)
    architecture = Architecture.from_file(folder)
    assert architecture.tied  # the tiny model ties lm_head to the embedding: counted once
    assert architecture.parameters() == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("fields", FAMILIES, ids=lambda f: f"{f['model_type']}-kv{f['num_key_value_heads']}")
def test_the_parameter_and_lora_counts_of_each_family_are_exact(fields: dict[str, Any]) -> None:
    from peft import LoraConfig, get_peft_model

    config = AutoConfig.for_model(**{**SMALL, **fields})
    model = AutoModelForCausalLM.from_config(config)
    architecture = Architecture.from_config(config.to_dict())
    assert architecture.parameters() == sum(p.numel() for p in model.parameters())
    targets = ["q_proj", "k_proj", "down_proj"]
    adapted = get_peft_model(model, LoraConfig(r=3, target_modules=targets))
    assert architecture.lora_parameters(3, targets) == _trainable(adapted)


def test_qwen3_8b_from_its_config_json_has_8_19b_parameters(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_8B))
    architecture = Architecture.from_file(tmp_path)
    assert architecture.parameters() == 8_190_735_360  # Qwen3-8B: 8.19B
    # 2 × 36 layers × 8 KV heads × 128 × 2 bytes
    assert architecture.kv_bytes_per_token(2) == 147_456


def test_unknown_shapes_are_said_not_guessed() -> None:
    with pytest.raises(UnknownArchitecture, match="qwen3_moe"):
        Architecture.from_config({**QWEN3_8B, "model_type": "qwen3_moe", "num_experts": 128})
    with pytest.raises(UnknownArchitecture, match="lm_head"):
        Architecture.from_config(QWEN3_8B).lora_parameters(8, ["q_proj", "lm_head"])


def _lines(work: Workload) -> dict[str, int]:
    return {line.item: line.bytes for line in plan_memory(work).lines}


def test_full_weights_keep_fp32_masters_gradients_and_adamw_states() -> None:
    arch = Architecture.from_config(QWEN3_8B)
    n = arch.parameters()
    work = Workload(architecture=arch, card_bytes=80 * GIB, micro_batch_tokens=4096, gradient_checkpointing=True,
                    reference="gpu", frozen_bytes=2)
    lines = _lines(work)
    assert lines["weights: trained, fp32 master"] == 4 * n
    assert lines["weights: bf16 copies for the backward (autocast)"] == 2 * n
    assert lines["gradients (fp32)"] == 4 * n
    assert lines["optimizer states"] == 8 * n  # AdamW's m and v
    assert lines["KL reference: frozen copy"] == 2 * n
    offloaded = _lines(replace(work, reference="cpu"))
    assert offloaded["KL reference: on CPU, one module at a time here"] == 2 * arch.vocab_size * arch.hidden_size
    assert not any(item.startswith("KL") for item in _lines(replace(work, reference="none")))


def test_lora_trains_only_the_adapters_and_ddp_adds_buckets_and_full_logits() -> None:
    arch = Architecture.from_config(QWEN3_8B)
    adapters = arch.lora_parameters(32, ALL_LINEAR)
    assert adapters == 87_293_952  # 36 layers × 32 × Σ(in + out) of the seven projections
    work = Workload(architecture=arch, card_bytes=80 * GIB, micro_batch_tokens=8192, lora_rank=32,
                    lora_targets=ALL_LINEAR, reference="adapter_off")
    lines = _lines(work)
    assert lines["weights: frozen base"] == 2 * arch.parameters()
    assert lines["gradients (fp32)"] == 4 * adapters and lines["optimizer states"] == 8 * adapters
    assert "DDP all-reduce buckets" not in lines
    ddp = _lines(replace(work, processes=8))
    assert ddp["DDP all-reduce buckets"] == 4 * adapters
    assert ddp["logits at every position (DDP forward)"] == 8192 * arch.vocab_size * 2


def test_checkpointing_keeps_one_input_per_layer_and_recomputes_one_layer() -> None:
    arch = Architecture.from_config(QWEN3_8B)
    tokens = 16384
    plain = Workload(architecture=arch, card_bytes=80 * GIB, micro_batch_tokens=tokens, lora_rank=32,
                     lora_targets=ALL_LINEAR)
    per_layer = layer_activation_bytes(arch, residual_bytes=2, compute_bytes=2)
    assert per_layer == 4096 * (4 * 2 + 12 * 2) + 12288 * 4 * 2
    assert _lines(plain)["activations"] == tokens * 36 * per_layer
    checkpointed = _lines(replace(plain, gradient_checkpointing=True))
    assert checkpointed["activations: layer inputs (checkpointing)"] == tokens * 36 * 2 * 4096
    assert checkpointed["activations: one layer recomputed"] == tokens * per_layer


def test_the_peak_adds_the_larger_phase_or_both_when_they_overlap() -> None:
    arch = Architecture.from_config(QWEN3_8B)
    work = Workload(architecture=arch, card_bytes=80 * GIB, micro_batch_tokens=1024, lora_rank=8,
                    lora_targets=ALL_LINEAR, hf_sampling_rows=4, hf_sampling_tokens=16384)
    plan = plan_memory(work)
    resident, update, sampling = (plan.phase_bytes(p) for p in ("resident", "update", "sampling"))
    assert sampling == 4 * 16384 * arch.kv_bytes_per_token(2)
    assert plan.total_bytes == resident + max(update, sampling)
    overlapping = plan_memory(replace(work, off_policy=True))
    snapshot = 2 * arch.parameters()  # the off-policy sampler's copy of the (bf16 base) weights
    assert overlapping.total_bytes == resident + snapshot + update + sampling


def test_vllm_needs_its_weights_and_one_full_sequence_of_kv_to_start() -> None:
    arch = Architecture.from_config(QWEN3_8B)
    work = Workload(architecture=arch, card_bytes=80 * GIB, micro_batch_tokens=1024, lora_rank=8,
                    lora_targets=ALL_LINEAR, vllm_utilization=0.2, vllm_max_model_len=40960)
    plan = plan_memory(work)
    assert plan.vllm_floor_bytes == 2 * arch.parameters() + 40960 * 147_456 + 2 * GIB
    assert plan.total_bytes < work.card_bytes and not plan.fits  # 16 GiB is less than its 22.9 GiB floor
    assert "vLLM's share" in plan.problems()[0]
    assert plan_memory(replace(work, vllm_utilization=0.3)).fits


def _saved_bytes(model: Any, input_ids: torch.Tensor) -> int:
    """Bytes the forward keeps for the backward (distinct storages, parameters left out)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), torch.autocast("cpu", dtype=torch.bfloat16):
        model.model(input_ids=input_ids, use_cache=False)
    return sum(saved.values())


@pytest.mark.parametrize("lora", [False, True], ids=["fp32-masters", "bf16-base-lora"])
def test_the_activation_formula_bounds_what_a_qwen3_layer_saves_per_token(lora: bool) -> None:
    """The formula was fitted on this shape (attention width H, KV width H/4): it must stay an upper bound within
    5% of what one layer saves per token. One layer: a 2-layer model less a 1-layer one; per token: the slope
    between two lengths (what does not grow with tokens, the bf16 copies of fp32 weights, is its own line)."""
    from peft import LoraConfig, get_peft_model

    fields = {"model_type": "qwen3", "hidden_size": 512, "intermediate_size": 1536, "num_attention_heads": 8,
              "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 512, "tie_word_embeddings": False}
    per_layer = []
    for tokens in (512, 1024):
        input_ids = torch.randint(0, 512, (1, tokens), generator=torch.Generator().manual_seed(0))
        saved = []
        for layers in (1, 2):
            config = AutoConfig.for_model(**fields, num_hidden_layers=layers, attn_implementation="sdpa")
            model = AutoModelForCausalLM.from_config(config)
            if lora:
                model = get_peft_model(model.to(torch.bfloat16),
                                       LoraConfig(r=8, lora_dropout=0.0, target_modules=list(ALL_LINEAR)))
                model = model.get_base_model()
            saved.append(_saved_bytes(model.train(), input_ids))
        per_layer.append(saved[1] - saved[0])
    measured = (per_layer[1] - per_layer[0]) / 512
    arch = Architecture.from_config({**fields, "num_hidden_layers": 1})
    formula = layer_activation_bytes(arch, residual_bytes=2 if lora else 4, compute_bytes=2)
    assert measured <= formula <= 1.05 * measured
