"""Per-GPU memory of a training run, planned from the model's shape alone (no weights loaded), so a plan
that cannot fit stops before minutes of loading and not in an out-of-memory error an hour in.

What is counted, per process (DDP: every rank holds the whole model):

- weights: those the optimizer steps are float32 master weights (4 B each; under bf16 autocast their bf16
  copies, 2 B each, are held from the forward to the backward); frozen ones (the LoRA base, the KL
  reference) are stored in the engine dtype; LoRA adapters are float32;
- gradients (4 B per trained parameter; DDP adds its all-reduce buckets, 4 B more) and optimizer states
  (AdamW: m and v, 8 B; SGD: 4 B with momentum, else 0);
- activations per token and decoder layer, every one kept: H·(4·r + 12·c) + I·4·c bytes, r the residual
  stream's bytes (4 under float32 master weights, else the frozen dtype's), c the compute bytes (2 under
  bf16 autocast, else r). Measured (tests/test_memory_plan.py) on Qwen3-shaped layers (attention width H,
  KV width H/4, SDPA attention) under bf16 autocast: float32 masters save 38.7·H + 8.0·I per token, a
  bf16 base with LoRA 30.4·H + 8.0·I; the formula gives 40·H + 8·I and 32·H + 8·I. With gradient
  checkpointing each layer keeps only its input (r·H per token) and one layer is recomputed at a time
  during the backward;
- the loss at trained positions: log-softmax, its gradient and (sampler truncation matched) the sorted
  copy with its indices are vocabulary-wide float32 tensors: 14 B per trained token and vocabulary entry,
  34 B with top-p/top-k matching (measured), times the share of tokens trained;
- the rollout engine: vLLM takes gpu_memory_utilization × the card, and needs of that its own weights, the
  KV cache of one max_model_len sequence and ~2 GiB for activations and CUDA graphs to start; the
  in-process hf engine holds a KV cache of max_batch_size rows × the context while it samples (before
  or after an update; during it with off-policy rollouts, which also keep a snapshot copy of the weights);
- 1 GiB for the CUDA context.

The update and the hf engine's sampling take turns (unless off-policy), so the peak is what stays resident
plus the larger of the two. It is a rough plan: allocator fragmentation and kernel workspaces are not in
it, so a plan within a few GiB of the card is tight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from toolgym.train.architecture import Architecture

GIB = 1024**3
CUDA_CONTEXT_BYTES = GIB
VLLM_OVERHEAD_BYTES = 2 * GIB
LOSS_BYTES_PER_LOGIT = 14  # per trained token and vocabulary entry: log-softmax forward and backward
TRUNCATED_LOSS_BYTES_PER_LOGIT = 34  # with the sampler's top-p/top-k applied: sort values, indices, masks

Phase = Literal["resident", "update", "sampling"]
Reference = Literal["none", "adapter_off", "gpu", "cpu"]


@dataclass(frozen=True)
class Workload:
    """What decides a training process's GPU memory; sizes in tokens, bytes per element where named so."""

    architecture: Architecture
    card_bytes: int
    micro_batch_tokens: int
    trained_share: float = 1.0
    processes: int = 1
    lora_rank: int | None = None  # None: every weight is trained
    lora_targets: tuple[str, ...] = ()
    frozen_bytes: int = 2  # the stored dtype of weights the optimizer does not step
    bf16_compute: bool = True
    optimizer_state_bytes: int = 8  # per trained parameter
    gradient_checkpointing: bool = False
    truncated_logprobs: bool = False
    reference: Reference = "none"
    vllm_utilization: float | None = None  # None: no vLLM on this GPU
    vllm_max_model_len: int = 0
    hf_sampling_rows: int | None = None  # None: the in-process engine does not sample here
    hf_sampling_tokens: int = 0  # context of each sampled row
    off_policy: bool = False  # the hf engine samples during the update, from a snapshot copy


@dataclass(frozen=True)
class Line:
    """One item of the plan: its bytes, when they are held and how they were counted."""

    item: str
    bytes: int
    phase: Phase
    how: str


@dataclass(frozen=True)
class MemoryPlan:
    lines: tuple[Line, ...]
    workload: Workload
    vllm_floor_bytes: int | None  # what vLLM needs of its share to start

    def phase_bytes(self, phase: Phase) -> int:
        return sum(line.bytes for line in self.lines if line.phase == phase)

    @property
    def total_bytes(self) -> int:
        """The peak: what stays resident, plus the update and the hf engine's sampling (in turn, or together
        when they overlap)."""
        update, sampling = self.phase_bytes("update"), self.phase_bytes("sampling")
        busy = update + sampling if self.workload.off_policy else max(update, sampling)
        return self.phase_bytes("resident") + busy

    @property
    def vllm_bytes(self) -> int:
        return sum(line.bytes for line in self.lines if line.item.startswith("vLLM"))

    def problems(self) -> list[str]:
        """Why the plan cannot run (empty: it fits)."""
        card = self.workload.card_bytes
        found = []
        if self.total_bytes > card:
            found.append(f"needs {gib(self.total_bytes)} GiB of the card's {gib(card)} GiB")
        if self.vllm_floor_bytes is not None and self.vllm_bytes < self.vllm_floor_bytes:
            found.append(f"vLLM's share ({gib(self.vllm_bytes)} GiB) is below the {gib(self.vllm_floor_bytes)} GiB "
                         "it needs to start (its weights, the KV cache of one max_model_len sequence, ~2 GiB)")
        return found

    @property
    def fits(self) -> bool:
        return not self.problems()

    def render(self) -> str:
        """The plan as a table: item, GiB, when it is held, how it was counted; then the verdict."""
        busy = "update + sampling" if self.workload.off_policy else "the larger of update and sampling"
        header = ("item", "GiB", "when", "how")
        rows = [(line.item, gib(line.bytes), line.phase, line.how) for line in self.lines]
        peak = (f"peak (resident + {busy})", gib(self.total_bytes), "", f"card: {gib(self.workload.card_bytes)} GiB")
        widths = [max(len(row[i]) for row in (header, *rows, peak)) for i in range(4)]

        def text(row: tuple[str, str, str, str]) -> str:
            return f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}".rstrip()

        lines = [text(header), *map(text, rows), "  ".join("-" * w for w in widths), text(peak)]
        problems = self.problems()
        if problems:
            lines.append("does not fit: " + "; ".join(problems))
        else:
            free = self.workload.card_bytes - self.total_bytes
            lines.append(f"fits: {gib(self.total_bytes)} of {gib(self.workload.card_bytes)} GiB ({gib(free)} GiB free)")
        return "\n".join(lines)


def gib(size: float) -> str:
    return f"{size / GIB:.1f}"


def layer_activation_bytes(architecture: Architecture, residual_bytes: int, compute_bytes: int) -> int:
    """Bytes one token's activations take in one decoder layer, every one kept (the module docstring's formula)."""
    hidden, inner = architecture.hidden_size, architecture.intermediate_size
    return hidden * (4 * residual_bytes + 12 * compute_bytes) + inner * 4 * compute_bytes


def _count(n: float) -> str:
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= size:
            return f"{n / size:.2f}{suffix}"
    return str(int(n))


def plan_memory(work: Workload) -> MemoryPlan:
    """The plan of one training process (pure arithmetic on the workload)."""
    arch = work.architecture
    total = arch.parameters()
    lines: list[Line] = []
    trained = arch.lora_parameters(work.lora_rank, work.lora_targets) if work.lora_rank else total
    if work.lora_rank:
        lines.append(Line("weights: frozen base", total * work.frozen_bytes, "resident",
                          f"{_count(total)} × {work.frozen_bytes} B"))
        lines.append(Line(f"weights: LoRA adapters (r={work.lora_rank}, fp32)", trained * 4, "resident",
                          f"{_count(trained)} × 4 B"))
        residual = work.frozen_bytes
    else:
        lines.append(Line("weights: trained, fp32 master", total * 4, "resident", f"{_count(total)} × 4 B"))
        residual = 4
        if work.bf16_compute:
            lines.append(Line("weights: bf16 copies for the backward (autocast)", total * 2, "update",
                              f"{_count(total)} × 2 B"))
    compute = 2 if work.bf16_compute else residual
    lines.append(Line("gradients (fp32)", trained * 4, "update", f"{_count(trained)} × 4 B"))
    if work.processes > 1:
        lines.append(Line("DDP all-reduce buckets", trained * 4, "update", f"{_count(trained)} × 4 B"))
    if work.optimizer_state_bytes:
        lines.append(Line("optimizer states", trained * work.optimizer_state_bytes, "resident",
                          f"{_count(trained)} × {work.optimizer_state_bytes} B"))
    if work.reference == "gpu":
        lines.append(Line("KL reference: frozen copy", total * work.frozen_bytes, "resident",
                          f"{_count(total)} × {work.frozen_bytes} B"))
    elif work.reference == "cpu":
        largest = arch.largest_module_parameters()
        lines.append(Line("KL reference: on CPU, one module at a time here", largest * work.frozen_bytes, "update",
                          f"{_count(largest)} × {work.frozen_bytes} B"))
    tokens = work.micro_batch_tokens
    per_layer = layer_activation_bytes(arch, residual, compute)
    if work.gradient_checkpointing:
        kept = tokens * arch.layers * residual * arch.hidden_size
        lines.append(Line("activations: layer inputs (checkpointing)", kept, "update",
                          f"{tokens} tokens × {arch.layers} layers × {residual}·H"))
        lines.append(Line("activations: one layer recomputed", tokens * per_layer, "update",
                          f"{tokens} tokens × {per_layer} B"))
    else:
        lines.append(Line("activations", tokens * arch.layers * per_layer, "update",
                          f"{tokens} tokens × {arch.layers} layers × {per_layer} B"))
    trained_tokens = math.ceil(tokens * work.trained_share)
    per_logit = TRUNCATED_LOSS_BYTES_PER_LOGIT if work.truncated_logprobs else LOSS_BYTES_PER_LOGIT
    lines.append(Line("loss: vocabulary-wide tensors", trained_tokens * arch.vocab_size * per_logit, "update",
                      f"{trained_tokens} trained tokens × {arch.vocab_size} × {per_logit} B"))
    if work.processes > 1:  # DDP runs the whole forward: logits at every position, not only the trained ones
        lines.append(Line("logits at every position (DDP forward)", tokens * arch.vocab_size * compute, "update",
                          f"{tokens} tokens × {arch.vocab_size} × {compute} B"))
    if work.off_policy and work.hf_sampling_rows is not None:
        weights = total * work.frozen_bytes if work.lora_rank else total * 4
        lines.append(Line("off-policy snapshot of the weights", weights, "resident", "a copy of the weights"))
    if work.hf_sampling_rows is not None:
        kv = arch.kv_bytes_per_token(compute)
        lines.append(Line("hf engine: KV cache while sampling", work.hf_sampling_rows * work.hf_sampling_tokens * kv,
                          "sampling", f"{work.hf_sampling_rows} rows × {work.hf_sampling_tokens} tokens × {kv} B"))
    lines.append(Line("CUDA context", CUDA_CONTEXT_BYTES, "resident", "about 1 GiB per process"))
    floor = None
    if work.vllm_utilization is not None:
        share = int(work.vllm_utilization * work.card_bytes)
        floor = (total * work.frozen_bytes + work.vllm_max_model_len * arch.kv_bytes_per_token(work.frozen_bytes)
                 + VLLM_OVERHEAD_BYTES)
        lines.append(Line("vLLM (gpu_memory_utilization × card)", share, "resident",
                          f"{work.vllm_utilization:g} × {gib(work.card_bytes)} GiB; it needs {gib(floor)} to start"))
    return MemoryPlan(tuple(lines), work, floor)
