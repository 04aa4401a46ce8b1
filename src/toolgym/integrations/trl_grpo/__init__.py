"""GRPO trained by TRL's GRPOTrainer on toolgym's episodes (`grpo.settings.backend: trl`).

TRL's `rollout_func` is the extension point: it alone lets toolgym play whole episodes (user simulator, its
parser, budgets and format feedback) and return the exact sampled ids; `environment_factory` runs TRL's own
tool loop. TRL is an optional extra: this package imports it only inside `run_trl_grpo`.
"""
