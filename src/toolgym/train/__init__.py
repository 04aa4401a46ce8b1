"""Training stages: SFT (full / LoRA), rejection sampling (RFT), and the pieces every trainer shares.

Shared, trainer-agnostic modules (GRPO builds on these too):
- `batching`: length-bucketed micro-batches of TrainingSamples, planned up front (resume-exact), `collate`;
- `loss`: log-probs / NLL at trained positions only (the LM head runs only there);
- `optim`: AdamW parameter groups and transformers' warmup + cosine/linear/constant schedules;
- `checkpoint`: atomic accelerate checkpoints (LoRA: adapter only), exports of loadable models;
- `metrics`: metrics.jsonl plus optional TensorBoard / W&B through accelerate;
- `runtime`: device, bf16 policy, model/tokenizer loading, LoRA wrapping;
- `architecture`: a decoder's shape and parameter counts from its config.json alone;
- `memory_plan`: a run's per-GPU memory from that shape, before any weight loads.
Stages: `sft_data` (rows → samples), `sft` (the SFT loop), `rft` (sample → select → convert → SFT).
"""
