"""A copy (induction) circuit planted in a fresh Qwen3 model's initial weights.

Content-based copying — a token seen before predicts what followed it — is the skill every tool call
needs (an argument copies a value from the request or a tool result). From random init it did not form
within the pre-training budget (chunk copies at random distances stayed at uniform loss for 600
steps). The architecture stays plain Qwen3; only the starting weights change:
  residual dims [0, E): token embedding (unit norm);  [E, E+K), [E+K, E+2K): codes of the previous
  token and the one before;  last dim: a constant.
  layer 0: head 0 attends 1 back and head 2 attends 2 back (RoPE phases aligned from the constant
  dim, high-frequency planes); each writes the attended token's K-dim code.
  layer 1, head 0: scores each position by (its previous token = this token) and (the token two back
  = this token's predecessor), in the lowest-frequency RoPE planes, which barely rotate over the
  context; it copies the attended token's embedding, so the tied LM head raises that token's logit.
Every other weight keeps the default random init; training adjusts all of them.
"""

from __future__ import annotations

import math
from typing import Any

import torch

E, K = 128, 20  # embedding dims; dims of a token's code (previous-token and the one before)
POS_PLANES = range(0, 8)  # high-frequency RoPE planes: the previous-token heads
MATCH_PLANES = range(22, 32)  # lowest-frequency planes: current token vs the previous-token code
CONTEXT_PLANES = range(12, 22)  # next-lowest: previous token vs the code of the token before that
ROPE_THETA = 10_000_000.0  # low-frequency planes nearly position-free over a 4k context


def _positional_head(attn: Any, q_head: int, kv_head: int, distance: int, const: int, hd: int,
                     freqs: list[float]) -> None:
    """q and k from the constant dim, RoPE phases aligned so the score peaks `distance` back."""
    half = hd // 2
    q, k = attn.q_proj.weight, attn.k_proj.weight
    for j in POS_PLANES:
        q[q_head * hd + j, const] = 1.0
        k[kv_head * hd + j, const] = math.cos(distance * freqs[j])
        k[kv_head * hd + j + half, const] = math.sin(distance * freqs[j])


def plant_copy_circuit(model: Any, *, r: float = 1.0, c: float = 1.0, pos_gain: float = 6.0,
          match_gain: float = 3.0, copy_gain: float = 5.0, context_weight: float = 0.6, seed: int = 0) -> None:
    """Overwrite the embedding and layers 0-1's attention of `model` (4 heads, 2 kv heads) in place."""
    config = model.config
    hidden, hd = config.hidden_size, config.head_dim
    theta = config.rope_parameters["rope_theta"]
    half = hd // 2
    freqs = [theta ** (-2 * j / hd) for j in range(half)]
    g = torch.Generator().manual_seed(seed)
    const = hidden - 1
    code1, code2 = slice(E, E + K), slice(E + K, E + 2 * K)
    if config.num_attention_heads != 4 or config.num_key_value_heads != 2 or hd < 64 or const <= E + 2 * K:
        raise ValueError("the planted copy circuit needs 4 attention heads, 2 kv heads, head_dim >= 64 and hidden >= 170")
    if config.num_hidden_layers < 2:
        raise ValueError("the planted copy circuit needs at least 2 layers")
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
