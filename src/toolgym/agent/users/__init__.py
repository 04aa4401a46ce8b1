"""User simulators for dual-control tasks: a deterministic scripted customer and a model-played one.

Both follow the UserSimulator protocol of `toolgym.agent.user` and make one session per episode
(`for_episode(task, env)`), because they act on that episode's environment with caller "user".
"""

from toolgym.agent.users.llm import LLMUserSession, LLMUserSimulator, user_system_prompt
from toolgym.agent.users.scripted import (
    ScriptedUserSession,
    ScriptedUserSimulator,
    UserSimulatorError,
    goal_met,
)
from toolgym.envs.user_actions import app_user_actions, instruction_for, parse_instructions
from toolgym.policy.instructing_oracle import InstructingOraclePolicy

__all__ = [
    "InstructingOraclePolicy",
    "LLMUserSession",
    "LLMUserSimulator",
    "ScriptedUserSession",
    "ScriptedUserSimulator",
    "UserSimulatorError",
    "app_user_actions",
    "goal_met",
    "instruction_for",
    "parse_instructions",
    "user_system_prompt",
]
