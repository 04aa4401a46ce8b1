"""Bring your own agent: run any agent harness on toolgym's tasks, score it, and record its exact tokens.

Per episode, toolgym serves the task's environment over MCP and a policy over an OpenAI-compatible API, both
on loopback under a per-episode token (`gateway.py`), runs the harness command against them (`process.py`),
scores the state it leaves with the task's checks (`episode.py`), and appends a `toolgym rollout` row
(`runner.py`). The policy endpoint (`policy_endpoint.py`) records every request at the inference boundary:
the messages, the prompt ids continued token-in/token-out, the sampled ids and log-probs, the parsed calls
(`recording.py`), so the rows train SFT through `data convert` and GRPO on the exact sampled tokens.
"""

from toolgym.harness.episode import HarnessCommand, HarnessEpisode, run_harness_episode
from toolgym.harness.gateway import Gateway
from toolgym.harness.policy_endpoint import MODEL_NAME, PolicyEndpoint
from toolgym.harness.recording import Recording
from toolgym.harness.runner import HarnessError, run_harness

__all__ = ["MODEL_NAME", "Gateway", "HarnessCommand", "HarnessEpisode", "HarnessError", "PolicyEndpoint",
           "Recording", "run_harness", "run_harness_episode"]
