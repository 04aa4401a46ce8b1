"""Policies: one interface over in-process models, OpenAI-compatible servers and oracle replay.

Import the concrete policies from their modules (`toolgym.policy.hf`, `.openai_policy`, `.oracle`)
so that using one does not load the others' dependencies; `make_policy` builds one from a spec.
"""
