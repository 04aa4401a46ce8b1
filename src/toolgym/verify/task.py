"""Verify a finished episode's state against its task: declarative checks and/or a Python verifier."""

from __future__ import annotations

from toolgym.envs.environment import Environment
from toolgym.schema import CheckResult, Task, Verdict
from toolgym.verify.checks import evaluate_checks
from toolgym.verify.sandbox import run_python_verifier


def verify_task(task: Task, env: Environment, final_answer: str | None) -> Verdict:
    """Checks give partial credit; a Fleet-style `verifier_code` runs in the sandbox as one more check.

    Any verifier failure (crash, timeout, memory) returns a Verdict with `error` set, never a 0.
    """
    verdict = evaluate_checks(task.checks, env, final_answer) if task.checks else None
    if verdict is not None and verdict.error:
        return verdict
    if task.verifier_code is None:
        return verdict if verdict is not None else Verdict.failure(f"task {task.id} has no checks and no verifier")
    code_verdict = run_python_verifier(task.verifier_code, env, final_answer)
    if code_verdict.error or verdict is None:
        return code_verdict
    isolation = next((c.detail[c.detail.rfind(" [isolation:"):] for c in code_verdict.checks if "[isolation:" in c.detail), "")
    merged = [*list(verdict.checks), CheckResult(kind="python_verifier", label="validate_task", passed=code_verdict.reward >= 1.0, weight=1.0, detail=f"validate_task returned {code_verdict.reward:g}{isolation}")]
    return Verdict.from_results(merged)
