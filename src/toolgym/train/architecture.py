"""A dense decoder's shape from its config.json alone: parameter counts (whole model, LoRA adapters, largest
module) and KV-cache bytes, so memory can be planned before any weight is loaded.

Known families and what sets them apart (transformers' modelling code): llama/mistral put
`attention_bias` on q, k, v and o and `mlp_bias` on the MLP; qwen2 always has a bias on q, k and v (never
on o); qwen3 puts `attention_bias` on q, k, v and o and adds an RMSNorm of head_dim to q and k. Every
layer has two RMSNorms of the hidden size, the model a final one; lm_head is the embedding when tied.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolgym.schema.documents import read_json

FAMILIES = ("llama", "mistral", "qwen2", "qwen3")
LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class UnknownArchitecture(ValueError):
    """The config.json is not one of the dense decoder families whose shape is known here."""


@dataclass(frozen=True)
class Architecture:
    """What the parameter count and the memory plan read from a config.json."""

    model_type: str
    hidden_size: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied: bool
    max_position_embeddings: int
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Architecture:
        """The shape of a config.json's contents (a multimodal config's `text_config` is not read)."""
        model_type = str(config.get("model_type", ""))
        if model_type not in FAMILIES or config.get("num_experts") or config.get("num_local_experts"):
            raise UnknownArchitecture(f"model_type {model_type!r}: the memory plan knows the dense decoders "
                                      f"{', '.join(FAMILIES)}")
        hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
        attention_bias = bool(config.get("attention_bias", False))
        return cls(
            model_type=model_type, hidden_size=hidden, layers=int(config["num_hidden_layers"]), heads=heads,
            kv_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(config.get("head_dim") or hidden // heads),
            intermediate_size=int(config["intermediate_size"]), vocab_size=int(config["vocab_size"]),
            tied=bool(config.get("tie_word_embeddings", False)),
            max_position_embeddings=int(config.get("max_position_embeddings") or 0),
            qkv_bias=True if model_type == "qwen2" else attention_bias,
            o_bias=attention_bias and model_type != "qwen2",
            mlp_bias=bool(config.get("mlp_bias", False)),
            qk_norm=model_type == "qwen3",
        )

    @classmethod
    def from_file(cls, path: str | Path) -> Architecture:
        """The shape of a config.json file, or of the one in a model folder."""
        path = Path(path)
        if path.is_dir():
            path = path / "config.json"
        return cls.from_config(read_json(path))

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of each linear layer of one decoder layer, by module name."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        hidden, inner = self.hidden_size, self.intermediate_size
        return {"q_proj": (hidden, q), "k_proj": (hidden, kv), "v_proj": (hidden, kv), "o_proj": (q, hidden),
                "gate_proj": (hidden, inner), "up_proj": (hidden, inner), "down_proj": (inner, hidden)}

    def layer_parameters(self) -> int:
        """Parameters of one decoder layer: its linear layers, their biases and its norms."""
        shapes = self.linear_shapes()
        weights = sum(i * o for i, o in shapes.values())
        biases = sum(shapes[n][1] for n in ("q_proj", "k_proj", "v_proj")) * self.qkv_bias
        biases += self.hidden_size * self.o_bias
        biases += (2 * self.intermediate_size + self.hidden_size) * self.mlp_bias
        norms = 2 * self.hidden_size + 2 * self.head_dim * self.qk_norm
        return weights + biases + norms

    def embedding_parameters(self) -> int:
        return self.vocab_size * self.hidden_size

    def parameters(self) -> int:
        """Every parameter: embeddings, layers, final norm, and lm_head unless tied."""
        head = 0 if self.tied else self.embedding_parameters()
        return self.embedding_parameters() + self.layers * self.layer_parameters() + self.hidden_size + head

    def largest_module_parameters(self) -> int:
        """Parameters of the biggest module a layer-by-layer offload moves at once (a layer or the embedding)."""
        return max(self.embedding_parameters(), self.layer_parameters())

    def lora_parameters(self, rank: int, targets: list[str] | tuple[str, ...]) -> int:
        """Adapter parameters of LoRA at `rank` on the named linear layers: rank × (in + out) each, every layer."""
        shapes = self.linear_shapes()
        unknown = [t for t in targets if t not in shapes]
        if unknown:
            raise UnknownArchitecture(f"LoRA target modules {', '.join(unknown)}: the memory plan knows "
                                      f"{', '.join(LINEAR_MODULES)}")
        return self.layers * sum(rank * sum(shapes[t]) for t in set(targets))

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        """KV-cache bytes one token takes: a key and a value per layer and KV head."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes
