"""The planted copy circuit: an untrained Qwen3 that already copies, and stays a plain Qwen3."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, Qwen3Config, Qwen3ForCausalLM

from toolgym.model.pretrain.plant import ROPE_THETA, plant_copy_circuit
from toolgym.model.pretrain.train import chunk_copy_batch


def _model(**overrides: int) -> Qwen3ForCausalLM:
    shape = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
             "head_dim": 64} | overrides
    config = Qwen3Config(vocab_size=1000, intermediate_size=768, max_position_embeddings=4096,
                         rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA},
                         tie_word_embeddings=True, **shape)
    torch.manual_seed(0)
    return Qwen3ForCausalLM(config).eval()


def _copy_accuracy(model: Qwen3ForCausalLM) -> float:
    ids, targets = chunk_copy_batch(0, 5, rows=4, length=256, vocab_low=10, vocab_high=1000)
    with torch.no_grad():
        predicted = model(ids).logits.argmax(-1)
    selected = targets != -100
    return float((predicted[selected] == targets[selected]).float().mean())


def test_an_untrained_planted_model_copies_earlier_stretches() -> None:
    random_init = _model()
    assert _copy_accuracy(random_init) < 0.05
    planted = _model()
    plant_copy_circuit(planted, seed=0)
    assert _copy_accuracy(planted) > 0.9  # measured 0.97 on 4000-token vocabularies


def test_the_planted_model_saves_and_loads_as_plain_qwen3(tmp_path) -> None:
    planted = _model()
    plant_copy_circuit(planted, seed=0)
    planted.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert type(loaded).__name__ == "Qwen3ForCausalLM"
    ids = torch.arange(10, 60)[None]
    with torch.no_grad():
        assert torch.allclose(loaded(ids).logits, planted(ids).logits, atol=1e-5)


def test_shapes_it_cannot_plant_into_are_refused() -> None:
    with pytest.raises(ValueError, match="4 attention heads"):
        plant_copy_circuit(_model(num_attention_heads=8, head_dim=32))
