"""Plant an induction (copy) circuit in a fresh Qwen3 model's initial weights, then check it copies.

Content-based copying never formed from random init in 300-400 steps (sanity_induction2.py: chunk
copies at random distances stay at uniform loss), and it is the skill every tool call needs. The
architecture is fixed (Qwen3, loads with AutoModelForCausalLM), but the initial weights are ours:
  residual dims [0, E): token embedding u_v (norm r);  [E, E+K): previous-token code;  last dim: constant c.
  layer 0, head 0: previous-token head — q, k from the constant dim, RoPE phases aligned to peak at
    distance 1 (high-frequency planes); v = R u (K-dim code) written to [E, E+K).
  layer 1, head 0: induction head — q = R u(current token), k = previous-token code, in the lowest-
    frequency RoPE planes (rope_theta 1e6: nearly position-free up to ~2k tokens); v/o copy the
    attended token's embedding into [0, E), so the tied head raises that token's logit.
Everything else keeps the default random init. Training then starts from a model that already copies.

    python research/tiny_model/plant_induction.py BASE_DIR OUT_DIR
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import torch

E, K = 128, 20  # embedding dims; dims of a token's code (previous-token and the one before)
POS_PLANES = range(0, 8)  # high-frequency RoPE planes: the previous-token heads
MATCH_PLANES = range(22, 32)  # lowest-frequency planes: current token vs the previous-token code
CONTEXT_PLANES = range(12, 22)  # next-lowest: previous token vs the code of the token before that
ROPE_THETA = 10_000_000.0


def _positional_head(attn, q_head: int, kv_head: int, distance: int, const: int, hd: int,
                     freqs: list[float]) -> None:
    """q and k from the constant dim, RoPE phases aligned so the score peaks `distance` back."""
    half = hd // 2
    q, k = attn.q_proj.weight, attn.k_proj.weight
    for j in POS_PLANES:
        q[q_head * hd + j, const] = 1.0
        k[kv_head * hd + j, const] = math.cos(distance * freqs[j])
        k[kv_head * hd + j + half, const] = math.sin(distance * freqs[j])


def plant(model: torch.nn.Module, *, r: float = 1.0, c: float = 1.0, pos_gain: float = 6.0,
          match_gain: float = 3.0, copy_gain: float = 5.0, context_weight: float = 0.6, seed: int = 0) -> None:
    config = model.config
    hidden, hd = config.hidden_size, config.head_dim
    theta = config.rope_parameters["rope_theta"]
    half = hd // 2
    freqs = [theta ** (-2 * j / hd) for j in range(half)]
    g = torch.Generator().manual_seed(seed)
    const = hidden - 1
    code1, code2 = slice(E, E + K), slice(E + K, E + 2 * K)
    assert E + 2 * K < const and config.num_attention_heads == 4 and config.num_key_value_heads == 2
    with torch.no_grad():
        emb = model.model.embed_tokens.weight
        u = torch.randn(emb.shape[0], E, generator=g)
        u = u / u.norm(dim=1, keepdim=True) * r
        emb.zero_()
        emb[:, :E] = u
        emb[:, const] = c
        rms = math.sqrt((r * r + c * c) / hidden)  # every token's norm is the same: n(x) = x / rms
        R = torch.randn(K, E, generator=g) / math.sqrt(K)  # a token's code: R u (dot products ~ kept)

        # -- layer 0: head 0 looks 1 back, head 2 looks 2 back; each writes the token's code ----------
        attn0 = model.model.layers[0].self_attn
        model.model.layers[0].input_layernorm.weight.fill_(1.0)
        for weight in (attn0.q_proj.weight, attn0.k_proj.weight, attn0.v_proj.weight):
            weight.zero_()
        attn0.o_proj.weight.zero_()
        _positional_head(attn0, 0, 0, 1, const, hd, freqs)
        _positional_head(attn0, 2, 1, 2, const, hd, freqs)
        for norm in (attn0.q_norm.weight, attn0.k_norm.weight):
            norm.fill_(1.0)
            for j in POS_PLANES:
                norm[j] = norm[j + half] = pos_gain
        v, o = attn0.v_proj.weight, attn0.o_proj.weight
        v[:K, :E] = R * rms
        v[hd : hd + K, :E] = R * rms
        o[code1, :K] = torch.eye(K) * r
        o[code2, 2 * hd : 2 * hd + K] = torch.eye(K) * r

        # -- layer 1 head 0: induction on (previous token, token before it) --------------------------
        attn1 = model.model.layers[1].self_attn
        model.model.layers[1].input_layernorm.weight.fill_(1.0)
        q, k, v, o = attn1.q_proj.weight, attn1.k_proj.weight, attn1.v_proj.weight, attn1.o_proj.weight
        q[: 2 * hd].zero_()
        k[:hd].zero_()
        v[:hd].zero_()
        o[:, : 2 * hd].zero_()
        match = [d for j in MATCH_PLANES for d in (j, j + half)]
        context = [d for j in CONTEXT_PLANES for d in (j, j + half)]
        assert len(match) == len(context) == K
        for row in range(K):
            q[match[row], :E] = R[row]  # this token's code ...
            k[match[row], E + row] = 1.0  # ... against the code of the token before each position
            q[context[row], E + row] = context_weight  # the previous token's code ...
            k[context[row], E + K + row] = 1.0  # ... against the code of the token two before
        for norm in (attn1.q_norm.weight, attn1.k_norm.weight):
            norm.fill_(1.0)
            for d in match + context:
                norm[d] = match_gain
        V = torch.linalg.qr(torch.randn(E, hd, generator=g))[0].T  # hd × E, orthonormal rows
        v[:hd, :E] = V
        rms1 = math.sqrt((3 * r * r + c * c) / hidden)  # the residual now also holds two codes
        o[:E, :hd] = V.T * copy_gain * rms1  # adds ~copy_gain * (V^T V) u_s


def main() -> None:
    from transformers import AutoConfig, AutoModelForCausalLM

    base, out = Path(sys.argv[1]), Path(sys.argv[2])
    gains = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    config = AutoConfig.from_pretrained(base)
    config.rope_parameters = {"rope_type": "default", "rope_theta": ROPE_THETA}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    plant(model, **gains)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    for f in base.iterdir():
        if f.name.startswith("tokenizer") or f.name in ("chat_template.jinja", "toolgym.json", "generation_config.json"):
            shutil.copy(f, out / f.name)


if __name__ == "__main__":
    main()
