"""Run a task's Fleet-form Python verifier in a sandboxed subprocess and turn what it returns into a Verdict.

Task-supplied code never runs in this process. The seed and current databases of every app are
written into a fresh temporary directory; a child `python -I -S` (see `sandbox_child.py`) gets
an `env` whose `db("seed")` / `db("current")` read those files, under kernel limits (address
space, CPU, file size, no child processes), in a new network namespace when `unshare` is
permitted, and behind an audit hook that refuses sockets, processes, native code and writes
outside the directory. Whatever goes wrong — a crash, a timeout, a memory blow-up, a syntax
error, no `validate_task`, a return value that is not a score — becomes `Verdict.failure(...)`
with the cause, never a reward of 0.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from toolgym.envs.environment import Environment
from toolgym.schema import CheckResult, Verdict

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
FILE_LIMIT_MB = 16  # the most a verifier may write into its directory
_TAIL = 600


@functools.cache
def network_isolation_prefix() -> tuple[str, ...]:
    """The `unshare` command line that gives the child an empty network namespace, or () where not permitted."""
    binary = shutil.which("unshare")
    if binary is None:
        return ()
    for option in (("--net",), ("--map-root-user", "--net")):
        command = (binary, *option)
        try:
            probe = subprocess.run([*command, "true"], capture_output=True, timeout=5, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if probe.returncode == 0:
            return command
    return ()


def _write_databases(env: Environment, workdir: Path) -> dict[str, dict[str, str]]:
    """One seed and one current file per app, from `sqlite3` `serialize()` of the live connections."""
    paths: dict[str, dict[str, str]] = {}
    for app in env.apps:
        entry = {}
        for which in ("seed", "current"):
            path = workdir / f"{app.name}.{which}.sqlite"
            path.write_bytes(env.db(which, app.name).serialize())
            entry[which] = str(path)
        paths[app.name] = entry
    return paths


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _tail(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-_TAIL:].strip()
    except OSError:
        return ""


def _count(value: Any, name: str) -> int:
    if isinstance(value, list | tuple):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"'{name}' must be a count or a list, got {value!r}")


def _check(passed: bool, detail: str) -> CheckResult:
    return CheckResult(kind="python_verifier", label="validate_task", passed=passed, weight=1.0, detail=detail)


def _score_verdict(number: Any, printed: str) -> Verdict:
    if not isinstance(number, int | float) or not math.isfinite(number) or not 0.0 <= number <= 1.0:
        return Verdict.failure(f"verifier returned {number!r}; a score must be a number in [0, 1]")
    reward = 1.0 if number >= 1.0 else 0.0
    return Verdict(reward=reward, partial_score=float(number), checks=[_check(reward >= 1.0, f"validate_task returned {number!r}{printed}")])


def verdict_from_return(value: dict[str, Any], stdout: str = "") -> Verdict:
    """The rules for what a verifier may return.

    int 0/1 or bool → reward 0/1. A float in [0, 1], or a dict with `score`, is a partial score
    (reward 1 only at 1.0). A dict with `successes` / `errors` (counts or lists) is Fleet's
    partial-credit form: partial_score = successes / (successes + errors), reward 1 iff no errors.
    """
    kind = value.get("type")
    printed = f"; printed: {stdout[-200:].strip()!r}" if stdout.strip() else ""
    if kind in ("bool", "int"):
        number = value["value"]
        if number not in (0, 1):
            return Verdict.failure(f"verifier returned {number!r}; an int score must be 0 or 1")
        reward = float(number)
        return Verdict(reward=reward, partial_score=reward, checks=[_check(bool(number), f"validate_task returned {number!r}{printed}")])
    if kind == "dict":
        body = value["value"]
        if "successes" in body or "errors" in body:
            try:
                successes = _count(body.get("successes", 0), "successes")
                errors = _count(body.get("errors", 0), "errors")
            except ValueError as exc:
                return Verdict.failure(f"verifier returned a bad partial-credit dict: {exc}")
            if successes + errors == 0:
                return Verdict.failure("verifier returned a partial-credit dict with no successes and no errors")
            partial = successes / (successes + errors)
            listed = body.get("errors") if isinstance(body.get("errors"), list) else []
            detail = f"{successes} of {successes + errors} verifier checks passed"
            if listed:
                detail += "; errors: " + "; ".join(str(e) for e in listed[:5])
            return Verdict(reward=1.0 if errors == 0 else 0.0, partial_score=partial, checks=[_check(errors == 0, detail + printed)])
        if "score" in body:
            score = body["score"]
            if isinstance(score, bool) or not isinstance(score, int | float):
                return Verdict.failure(f"verifier returned score {score!r}; want a number in [0, 1]")
            return _score_verdict(float(score), printed)
        return Verdict.failure(f"verifier returned a dict without 'score' or 'successes'/'errors': keys {sorted(body)}")
    if kind == "float":
        return _score_verdict(value["value"], printed)
    if kind == "none":
        return Verdict.failure("verifier returned None; validate_task must return 1/0, a score in [0, 1] or {successes, errors}")
    return Verdict.failure(f"verifier returned a {kind} ({value.get('repr', '')}); want int 0/1, bool, float in [0, 1] or a dict")


def _verdict_from_result(result: dict[str, Any], memory_mb: int) -> Verdict:
    violations = result.get("violations") or []
    if violations:
        return Verdict.failure("verifier tried a blocked operation: " + "; ".join(violations[:3]))
    if result.get("status") == "ok":
        return verdict_from_return(result["value"], result.get("stdout") or "")
    kind = result.get("kind")
    line = f" at verifier line {result['line']}" if result.get("line") else ""
    message = result.get("message", "")
    if kind == "syntax":
        return Verdict.failure(f"verifier has a syntax error: {message}")
    if kind == "missing_function":
        return Verdict.failure(f"verifier error: {message}")
    if kind == "memory":
        return Verdict.failure(f"verifier exceeded its memory limit of {memory_mb} MB{line}")
    if kind == "assertion":
        # Fleet's diff helpers signal a failed invariant by raising AssertionError: that is a
        # verdict about the episode (reward 0), not a broken verifier.
        detail = f"assertion failed{line}: {message}"[:1500]
        return Verdict(reward=0.0, partial_score=0.0, checks=[_check(False, detail)])
    if kind == "setup":
        return Verdict.failure(f"verifier sandbox failed to start: {result.get('exception')}: {message}")
    if kind in ("bad_signature", "bad_return"):
        return Verdict.failure(f"verifier error: {message}")
    stage = {"load": " while loading", "call": ""}.get(result.get("stage", ""), "")
    return Verdict.failure(f"verifier crashed{stage}{line}: {result.get('exception', 'Exception')}: {message}"[:2000])


def run_python_verifier(
    code: str,
    env: Environment,
    final_answer: str | None,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
) -> Verdict:
    """Run `def validate_task(env, final_answer=None)` from `code` against `env`'s seed and current state."""
    if not isinstance(code, str) or not code.strip():
        return Verdict.failure("verifier error: the verifier code is empty")
    try:
        workdir = Path(tempfile.mkdtemp(prefix="toolgym-verifier-"))
    except OSError as exc:
        return Verdict.failure(f"verifier sandbox could not create its directory: {exc}")
    try:
        try:
            databases = _write_databases(env, workdir)
        except Exception as exc:  # the env itself is broken: not the verifier's fault, still no reward
            return Verdict.failure(f"verifier sandbox could not snapshot the databases: {type(exc).__name__}: {exc}")
        (workdir / "verifier.py").write_text(code, encoding="utf-8")
        spec = {
            "code_file": "verifier.py",
            "final_answer": final_answer,
            "databases": databases,
            "env_variables": dict(env.context.variables),
            "timeout_s": timeout_s,
            "memory_mb": memory_mb,
            "file_mb": FILE_LIMIT_MB,
        }
        (workdir / "input.json").write_text(json.dumps(spec), encoding="utf-8")
        return _run_child(workdir, timeout_s, memory_mb)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run_child(workdir: Path, timeout_s: float, memory_mb: int) -> Verdict:
    command = [*network_isolation_prefix(), sys.executable, "-I", "-S", str(CHILD_SCRIPT), str(workdir)]
    child_env = {"PATH": os.defpath, "HOME": str(workdir), "TMPDIR": str(workdir), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    stdout_path, stderr_path = workdir / "child.stdout", workdir / "child.stderr"
    started = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            process = subprocess.Popen(
                command, cwd=workdir, env=child_env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                start_new_session=True, close_fds=True,
            )
        except OSError as exc:
            return Verdict.failure(f"verifier sandbox could not start python: {exc}")
        try:
            returncode = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.wait()
            return Verdict.failure(f"verifier timed out after {timeout_s:g}s (its process group was killed)")
        finally:
            _kill_group(process)  # nothing the verifier started may outlive it
    elapsed = time.monotonic() - started
    result_path = workdir / "result.json"
    if returncode != 0 or not result_path.exists():
        if returncode < 0:
            name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
            cause = {
                "SIGXCPU": f"ran out of CPU time ({timeout_s:g}s)",
                "SIGKILL": f"was killed (likely its memory limit of {memory_mb} MB)",
                "SIGSEGV": f"crashed with SIGSEGV (likely its memory limit of {memory_mb} MB or unbounded recursion)",
            }.get(name, f"died with signal {name}")
            return Verdict.failure(f"verifier process {cause} after {elapsed:.2f}s")
        stderr = _tail(stderr_path)
        if "MemoryError" in stderr:
            return Verdict.failure(f"verifier exceeded its memory limit of {memory_mb} MB")
        return Verdict.failure(f"verifier process exited with code {returncode} and no result: {stderr or '(no output)'}")
    try:
        result = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return Verdict.failure(f"verifier sandbox returned an unreadable result: {exc}")
    if not isinstance(result, dict):
        return Verdict.failure("verifier sandbox returned a result that is not an object")
    return _verdict_from_result(result, memory_mb)
