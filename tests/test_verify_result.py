"""The parent reads the sandbox's result strictly: every malformed one is an error verdict naming its cause.

The result is written by a process running untrusted code, so it may hold anything JSON can: a
field of the wrong type, an unknown field or kind, a number too large for a float. None of them
may make the parent raise, and none may become a 0 or a 1.
"""

from __future__ import annotations

import itertools
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from toolgym.envs import Environment
from toolgym.envs.examples.toy import APP
from toolgym.verify import isolation
from toolgym.verify.sandbox import run_python_verifier
from toolgym.verify.sandbox_result import verdict_from_result, verdict_from_return

STRONG, PROBLEM = isolation.strong_isolation()
needs_bwrap = pytest.mark.skipif(STRONG is None, reason=f"no strong isolation on this machine: {PROBLEM}")

HUGE = 10**400  # valid JSON, and past what a float can hold
OK_1 = {"status": "ok", "value": {"type": "int", "value": 1}}

# (result, text the error must hold)
MALFORMED: list[tuple[Any, str]] = [
    ({"status": "error", "kind": []}, "field 'kind' must be str, got list"),
    ({"status": "error", "kind": {}}, "field 'kind' must be str, got dict"),
    ({"status": "error", "kind": None}, "field 'kind' must be str, got NoneType"),
    ({"status": "error", "kind": "exploded"}, "unknown error kind 'exploded'"),
    ({"status": "error"}, "an error result without a kind"),
    ({"status": "error", "kind": "exception", "message": 5}, "field 'message' must be str, got int"),
    ({"status": "error", "kind": "exception", "exception": ["x"]}, "field 'exception' must be str, got list"),
    ({"status": "error", "kind": "exception", "line": "3"}, "field 'line' must be int or null, got str"),
    ({"status": "error", "kind": "exception", "line": True}, "field 'line' must be int or null, got bool"),
    ({"status": "error", "kind": "exception", "stage": []}, "field 'stage' must be str, got list"),
    ({"status": "error", "kind": "exception", "traceback": {}}, "field 'traceback' must be str, got dict"),
    ({"status": [], "value": {}}, "field 'status' must be str, got list"),
    ({"status": {"ok": 1}}, "field 'status' must be str, got dict"),
    ({"status": "fine"}, "unknown status 'fine'"),
    ({}, "no status"),
    ({"status": "ok"}, "an ok result without a value"),
    ({"status": "ok", "value": 1}, "field 'value' must be dict, got int"),
    ({**OK_1, "stdout": []}, "field 'stdout' must be str, got list"),
    ({**OK_1, "violations": []}, "unknown field 'violations'"),
    ({**OK_1, "kind": "exception"}, "field 'kind' in an ok result"),
    ({"status": "ok", "value": {"type": []}}, "the value has no type"),
    ({"status": "ok", "value": {"type": "int", "value": 1, "extra": 2}}, "unknown field 'extra' in a int value"),
    ({"status": "ok", "value": {"type": "int", "value": "1"}}, "an int that is not an integer"),
    ({"status": "ok", "value": {"type": "bool", "value": 1}}, "a bool that is not true/false"),
    ({"status": "ok", "value": {"type": "dict", "value": [1]}}, "a dict value that is not an object"),
    ({"status": "ok", "value": {"type": "str", "repr": ["x"]}}, "'repr' is not a string"),
    ({"status": "ok", "value": {"type": "float", "value": HUGE}}, "a score must be a number in [0, 1]"),
    ({"status": "ok", "value": {"type": "float", "value": -HUGE}}, "a score must be a number in [0, 1]"),
    ({"status": "ok", "value": {"type": "dict", "value": {"score": HUGE}}}, "a score must be a number in [0, 1]"),
    ({"status": "ok", "value": {"type": "int", "value": HUGE}}, "an int score must be 0 or 1"),
    ({"status": "ok", "value": {"type": "dict", "value": {"successes": 1, "errors": "2"}}}, "'errors' must be a count or a list"),
    ([OK_1], "not an object"),
    ("ok", "not an object"),
]


@pytest.mark.parametrize(("result", "cause"), MALFORMED)
def test_every_malformed_result_is_an_error_naming_its_cause(result: Any, cause: str) -> None:
    verdict = verdict_from_result(result, memory_mb=64)
    assert verdict.error is not None and cause in verdict.error, verdict.error
    assert not verdict.passed and verdict.reward == 0.0


def test_a_well_formed_result_still_scores() -> None:
    assert verdict_from_result(OK_1, 64).passed
    assert verdict_from_result({**OK_1, "stdout": "hi"}, 64).checks[0].detail.endswith("printed: 'hi'")
    partial = verdict_from_result({"status": "ok", "value": {"type": "dict", "value": {"successes": HUGE, "errors": 1}}}, 64)
    assert partial.error is None and partial.reward == 0.0 and partial.partial_score == 1.0  # exact, no overflow
    crash = verdict_from_result({"status": "error", "kind": "exception", "exception": "KeyError", "message": "x", "line": 3}, 64)
    assert crash.error == "verifier crashed at verifier line 3: KeyError: x"
    assertion = verdict_from_result({"status": "error", "kind": "assertion", "message": "no row"}, 64)
    assert assertion.error is None and assertion.reward == 0.0  # a failed diff is a verdict on the episode


# Every JSON shape a field could be given, beside the one it should have.
SHAPES: list[Any] = [None, True, 0, -1, HUGE, 1.5, float("nan"), "", "x", [], [1], {}, {"a": 1}]


@pytest.mark.parametrize("field", ["status", "value", "stdout", "kind", "stage", "exception", "message", "line", "traceback"])
def test_any_shape_in_any_field_never_raises(field: str) -> None:
    for base, shape in itertools.product(
        (OK_1, {"status": "error", "kind": "exception", "message": "m"}), SHAPES
    ):
        verdict = verdict_from_result({**base, field: shape}, 64)
        assert verdict.error is not None or verdict.reward in (0.0, 1.0)
    for shape, inner in itertools.product(SHAPES, ("value", "score", "successes", "errors", "type", "repr")):
        for kind in ("int", "bool", "float", "dict", "none", "str"):
            body = {"type": kind, "value": {inner: shape}} if kind == "dict" else {"type": kind, inner: shape}
            verdict = verdict_from_return(body)
            assert verdict.error is not None or verdict.reward in (0.0, 1.0)


# ---------------------------------------------------------------------------------------------
#  The same results, written by a verifier straight to the result channel
# ---------------------------------------------------------------------------------------------

WRITE_AND_EXIT = """
import os
def validate_task(env, final_answer=None):
    for fd in range(3, 64):
        try:
            os.write(fd, RESULT.encode())
        except OSError:
            pass
    os._exit(0)
"""


@needs_bwrap
@pytest.mark.parametrize(
    "result",
    [
        {"status": "error", "kind": []},
        {"status": "error", "kind": {"a": 1}},
        {"status": "ok", "value": {"type": "float", "value": HUGE}},
        {"status": "ok", "value": {"type": "dict", "value": {"score": HUGE}}},
        {"status": "ok", "value": {"type": "int", "value": 1}, "stdout": ["x"]},
    ],
)
def test_a_malformed_result_on_the_channel_is_an_error_not_an_exception(result: Any, private_tempdir: Path) -> None:
    env = Environment([APP])
    env.reset({"LOGGED_IN_USER": "ana", "CURRENT_DATE": "2026-06-15"})
    code = f"RESULT = {json.dumps(result) + chr(10)!r}\n" + textwrap.dedent(WRITE_AND_EXIT)
    verdict = run_python_verifier(code, env, "done")
    assert verdict.error is not None and not verdict.passed, verdict
    assert "malformed result" in verdict.error or "a score must be a number in [0, 1]" in verdict.error, verdict.error
