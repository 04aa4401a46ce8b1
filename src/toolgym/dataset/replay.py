"""Replay a task's reference solution in a fresh environment and verify the result."""

from __future__ import annotations

from dataclasses import dataclass

from toolgym.envs import EnvError, Environment, make_env
from toolgym.schema import Task, Verdict
from toolgym.verify import verify_task


@dataclass
class ReplayOutcome:
    task_id: str
    verdict: Verdict
    failed_calls: list[str]
    env_error: str | None = None  # a tool crashed: the environment broke, not the verifier

    @property
    def kept(self) -> bool:
        return self.verdict.error is None and self.verdict.reward >= 1.0 and not self.failed_calls

    @property
    def reason(self) -> str:
        if self.env_error:
            return f"env error: {self.env_error}"
        if self.verdict.error:
            return f"verifier error: {self.verdict.error}"
        if self.failed_calls:
            return "reference call failed: " + "; ".join(self.failed_calls)
        failed = [f"{c.label}: {c.detail}" for c in self.verdict.checks if not c.passed]
        return "checks failed: " + "; ".join(failed) if failed else "kept"


def user_tools(env: Environment) -> set[str]:
    """Names of the user-owned tools (dual control) of a local or remote environment."""
    return {spec.name for spec in env.tool_specs("user")}


def replay_task(task: Task, env: Environment | None = None) -> ReplayOutcome:
    """Every reference call must succeed and every check must pass for the task to be kept."""
    env = env if env is not None and env.name == task.env else make_env(task.env)
    env.reset(task.env_variables)
    failed: list[str] = []
    performed_by_user = user_tools(env)
    try:
        for call in task.reference_solution:
            # Dual control: a user-owned device tool in the reference is performed by the user.
            caller = "user" if call.name in performed_by_user else "agent"
            result = env.call_tool(call.name, call.arguments, caller=caller)
            if result.is_error:
                failed.append(f"{call.name}: {result.content}")
    except EnvError as exc:
        return ReplayOutcome(task.id, Verdict.failure(str(exc)), failed, env_error=str(exc))
    return ReplayOutcome(task.id, verify_task(task, env, task.expected_answer), failed)
