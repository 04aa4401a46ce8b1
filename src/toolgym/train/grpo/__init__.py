"""GRPO for multi-turn tool use: losses, group advantages, curriculum, the in-process rollout policy, the trainer.

Import from the modules (`toolgym.train.grpo.trainer.run_grpo`, `.config.load_grpo_config`, `.losses`, …):
the small ones (losses, advantages, curriculum) load without a model or transformers.
"""
