"""Verification: declarative checks with partial credit, and sandboxed Python verifiers."""

from toolgym.verify.checks import evaluate_check, evaluate_checks, normalize_text
from toolgym.verify.task import verify_task

__all__ = ["evaluate_check", "evaluate_checks", "normalize_text", "verify_task"]
