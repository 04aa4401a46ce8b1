"""Read the verifier sandbox's one JSON result into a Verdict, strictly.

The result comes from a process running untrusted code, so every field is checked for its type
and every value for its range before anything is read from it: a field of the wrong type, an
unknown field or an unknown kind is an error verdict naming it, and no result, however built,
makes this module raise. Only a child that exited 0 on its own gets here; whatever it reports
can make a verdict an error or say what the verifier returned, nothing more.
"""

from __future__ import annotations

import math
from typing import Any

from toolgym.schema import CheckResult, Verdict

ERROR_KINDS = frozenset(
    {"syntax", "missing_function", "memory", "assertion", "setup", "bad_signature", "bad_return", "exception"}
)
# Each field the child may send, with the types it may have. "ok" results carry only the first three.
_TEXT = (str,)
_FIELDS: dict[str, tuple[type, ...]] = {
    "status": _TEXT, "value": (dict,), "stdout": _TEXT,
    "kind": _TEXT, "stage": _TEXT, "exception": _TEXT, "message": _TEXT, "line": (int, type(None)), "traceback": _TEXT,
}
_OK_FIELDS = frozenset({"status", "value", "stdout"})
# What the child sends for each type of return value: its own fields besides "type".
_VALUE_FIELDS: dict[str, frozenset[str]] = {
    "bool": frozenset({"value"}), "int": frozenset({"value"}), "float": frozenset({"value"}),
    "dict": frozenset({"value"}), "none": frozenset(),
}


def malformed(cause: str) -> Verdict:
    return Verdict.failure(f"verifier sandbox returned a malformed result: {cause}"[:500])


def _check(passed: bool, detail: str) -> CheckResult:
    return CheckResult(kind="python_verifier", label="validate_task", passed=passed, weight=1.0, detail=detail)


def _shown(value: Any) -> str:
    """A value as the verdict text shows it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 100 else text[:97] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value: Any, name: str) -> int:
    if isinstance(value, list):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"'{name}' must be a count or a list, got {_shown(value)}")


def _score_verdict(number: Any, printed: str) -> Verdict:
    """A score in [0, 1]; compared before any conversion, so a huge integer is out of range, not an overflow."""
    if not _is_number(number) or (isinstance(number, float) and not math.isfinite(number)) or not 0 <= number <= 1:
        return Verdict.failure(f"verifier returned {_shown(number)}; a score must be a number in [0, 1]")
    score = float(number)
    reward = 1.0 if score >= 1.0 else 0.0
    return Verdict(reward=reward, partial_score=score, checks=[_check(reward >= 1.0, f"validate_task returned {_shown(number)}{printed}")])


def _partial_credit(body: dict[str, Any], printed: str) -> Verdict:
    try:
        successes = _count(body.get("successes", 0), "successes")
        errors = _count(body.get("errors", 0), "errors")
    except ValueError as exc:
        return Verdict.failure(f"verifier returned a bad partial-credit dict: {exc}")
    if successes + errors == 0:
        return Verdict.failure("verifier returned a partial-credit dict with no successes and no errors")
    partial = successes / (successes + errors)  # exact for any size: both are ints
    listed = body.get("errors") if isinstance(body.get("errors"), list) else []
    detail = f"{successes} of {successes + errors} verifier checks passed"
    if listed:
        detail += "; errors: " + "; ".join(str(e)[:400] for e in listed[:5])
    return Verdict(reward=1.0 if errors == 0 else 0.0, partial_score=partial, checks=[_check(errors == 0, detail[:2000] + printed)])


def verdict_from_return(value: Any, stdout: str = "") -> Verdict:
    """The rules for what a verifier may return.

    int 0/1 or bool → reward 0/1. A float in [0, 1], or a dict with `score`, is a partial score
    (reward 1 only at 1.0). A dict with `successes` / `errors` (counts or lists) is Fleet's
    partial-credit form: partial_score = successes / (successes + errors), reward 1 iff no errors.
    """
    try:
        return _verdict_from_return(value, stdout)
    except Exception as exc:  # untrusted input: whatever slips past the checks is still an error, never a crash
        return malformed(f"its value could not be read ({type(exc).__name__})")


def _verdict_from_return(value: Any, stdout: str) -> Verdict:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return malformed("the value has no type")
    kind = value["type"]
    extra = set(value) - {"type"} - _VALUE_FIELDS.get(kind, frozenset({"repr"}))
    if extra:
        return malformed(f"unknown field {sorted(extra)[0][:80]!r} in a {kind[:80]} value")
    printed = f"; printed: {stdout[-200:].strip()!r}" if isinstance(stdout, str) and stdout.strip() else ""
    if kind in ("bool", "int"):
        number = value.get("value")
        if kind == "bool" and not isinstance(number, bool):
            return malformed("a bool that is not true/false")
        if kind == "int" and (isinstance(number, bool) or not isinstance(number, int)):
            return malformed("an int that is not an integer")
        if number not in (0, 1):
            return Verdict.failure(f"verifier returned {_shown(number)}; an int score must be 0 or 1")
        reward = float(number)
        return Verdict(reward=reward, partial_score=reward, checks=[_check(bool(number), f"validate_task returned {_shown(number)}{printed}")])
    if kind == "dict":
        body = value.get("value")
        if not isinstance(body, dict):
            return malformed("a dict value that is not an object")
        if "successes" in body or "errors" in body:
            return _partial_credit(body, printed)
        if "score" in body:
            score = body["score"]
            if not _is_number(score):
                return Verdict.failure(f"verifier returned score {_shown(score)}; want a number in [0, 1]")
            return _score_verdict(score, printed)
        return Verdict.failure(f"verifier returned a dict without 'score' or 'successes'/'errors': keys {sorted(body)[:20]}")
    if kind == "float":
        return _score_verdict(value.get("value"), printed)
    if kind == "none":
        return Verdict.failure("verifier returned None; validate_task must return 1/0, a score in [0, 1] or {successes, errors}")
    shown = value.get("repr", "")
    if not isinstance(shown, str):
        return malformed("'repr' is not a string")
    return Verdict.failure(f"verifier returned a {kind[:80]} ({shown[:300]}); want int 0/1, bool, float in [0, 1] or a dict")


def _field_error(result: dict[str, Any]) -> str | None:
    """What is wrong with the result's fields, or None: names the first unknown or mistyped one."""
    for name, field in result.items():
        allowed = _FIELDS.get(name) if isinstance(name, str) else None
        if allowed is None:
            return f"unknown field {str(name)[:80]!r}"
        if not isinstance(field, allowed) or (name == "line" and isinstance(field, bool)):
            want = " or ".join("null" if kind is type(None) else kind.__name__ for kind in allowed)
            return f"field {name!r} must be {want}, got {type(field).__name__}"
    status = result.get("status")
    if status not in ("ok", "error"):
        return f"unknown status {str(status)[:80]!r}" if "status" in result else "no status"
    if status == "ok":
        extra = sorted(set(result) - _OK_FIELDS)
        if extra:
            return f"field {extra[0]!r} in an ok result"
        if "value" not in result:
            return "an ok result without a value"
    elif result.get("kind") not in ERROR_KINDS:
        return f"unknown error kind {str(result.get('kind'))[:80]!r}" if "kind" in result else "an error result without a kind"
    return None


def verdict_from_result(result: Any, memory_mb: int) -> Verdict:
    """The verdict for the child's one JSON object; every malformed one is an error naming the cause."""
    try:
        if not isinstance(result, dict):
            return malformed("not an object")
        problem = _field_error(result)
        if problem is not None:
            return malformed(problem)
        return _verdict_from_fields(result, memory_mb)
    except Exception as exc:  # untrusted input: whatever slips past the checks is still an error, never a crash
        return malformed(f"it could not be read ({type(exc).__name__})")


def _verdict_from_fields(result: dict[str, Any], memory_mb: int) -> Verdict:
    stdout = result.get("stdout", "")
    if result["status"] == "ok":
        return verdict_from_return(result["value"], stdout[-2000:])
    kind = result["kind"]
    line = result.get("line")
    where = f" at verifier line {line}" if isinstance(line, int) and line > 0 else ""
    message = result.get("message", "")[:2000]
    exception = result.get("exception", "")[:200] or "Exception"
    if kind == "syntax":
        return Verdict.failure(f"verifier has a syntax error: {message}")
    if kind in ("missing_function", "bad_signature", "bad_return"):
        return Verdict.failure(f"verifier error: {message}")
    if kind == "memory":
        return Verdict.failure(f"verifier exceeded its memory limit of {memory_mb} MB{where}")
    if kind == "assertion":
        # Fleet's diff helpers signal a failed invariant by raising AssertionError: that is a
        # verdict about the episode (reward 0), not a broken verifier.
        detail = f"assertion failed{where}: {message}"[:1500]
        return Verdict(reward=0.0, partial_score=0.0, checks=[_check(False, detail)])
    if kind == "setup":
        return Verdict.failure(f"verifier sandbox failed to start: {exception}: {message}")
    stage = {"load": " while loading", "call": ""}.get(result.get("stage", ""), "")
    return Verdict.failure(f"verifier crashed{stage}{where}: {exception}: {message}"[:2000])
