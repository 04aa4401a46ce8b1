"""Trajectory data between rollout and training: validate results/SFT rows, convert runs to SFT rows.

SFT rows are the shape prime-rl and TRL read: `{messages, tools, …provenance}` with OpenAI chat
messages (assistant `tool_calls` as `{id, type: "function", function: {name, arguments}}`), plus the
sampler's exact `token_samples` when the run was token-in/token-out.
"""
