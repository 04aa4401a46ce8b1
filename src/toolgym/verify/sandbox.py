"""Run a task's Fleet-form Python verifier in an isolated subprocess and turn what it returns into a Verdict.

Task-supplied code never runs in this process, and the boundary around it never depends on its
cooperation. The seed and current databases of every app are written into a fresh temporary
directory; a child `python -I -S` (see `sandbox_child.py`) runs inside a bubblewrap sandbox set up
before any task code starts (see `isolation.py`: no network, its own PID namespace, an
unprivileged uid without capabilities, an empty environment, a read-only filesystem but for a
small tmpfs, no new processes, kernel limits on memory, CPU and file size). Where that sandbox
cannot be had, verifier code is refused unless the user accepted the risk (`--trust-verifiers`).

The verdict is read here, outside the child, from what it printed on stdout: one JSON object,
parsed strictly. The child controls its own output, so a "valid 1" is worth only what the
isolation makes it: whatever the code did, it could do nothing outside. Anything else — a
non-zero exit, a signal, a timeout, a malformed or oversized result, a crash, a memory blow-up,
a syntax error, no `validate_task`, a return value that is not a score — becomes
`Verdict.failure(...)` with its cause, never a reward of 0.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import select
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
from toolgym.verify.fleet_api import FLEET_API_FILES
from toolgym.verify.isolation import (
    TRUST_ENV,
    TRUST_OPTION,
    Bwrap,
    IsolationUnavailable,
    bwrap_command,
    bwrap_env,
    require_isolation,
    scrub,
    seccomp_fd,
    select_isolation,
    trust_verifiers,
    verifiers_trusted,
)

__all__ = [
    "CHILD_SCRIPT",
    "FILE_LIMIT_MB",
    "TRUST_ENV",
    "TRUST_OPTION",
    "IsolationUnavailable",
    "require_isolation",
    "run_python_verifier",
    "trust_verifiers",
    "verdict_from_return",
    "verifiers_trusted",
]

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
FILE_LIMIT_MB = 16  # the most a verifier may write: per file, and its whole scratch tmpfs
MAX_RESULT_BYTES = 1024 * 1024  # the child's one JSON line; anything larger is an error
_TAIL = 600
_ERROR_KINDS = frozenset(
    {"syntax", "missing_function", "memory", "assertion", "setup", "bad_signature", "bad_return", "exception"}
)


@functools.cache
def network_isolation_prefix() -> tuple[str, ...]:
    """Weak mode only: the `unshare` command line that gives the child an empty network namespace, or ()."""
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
            name = f"{app.name}.{which}.sqlite"
            (workdir / name).write_bytes(env.db(which, app.name).serialize())
            entry[which] = name  # relative: the child sees the directory under another path
        paths[app.name] = entry
    return paths


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def processes_holding(root: Path) -> list[int]:
    """PIDs with an open file under `root`: the sandbox's processes still dying after a kill."""
    holders = []
    prefix = str(root)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd).startswith(prefix):
                        holders.append(int(entry.name))
                        break
    return holders


def _await_exit(scratch: Path, limit_s: float = 10.0) -> None:
    """After a kill, the PID namespace's processes die after bwrap itself: wait until none holds a file here."""
    deadline = time.monotonic() + limit_s
    clear = 0
    while clear < 3 and time.monotonic() < deadline:  # a dying process can miss one scan: three clear in a row
        clear = 0 if set(processes_holding(scratch)) - {os.getpid()} else clear + 1  # this process writes there
        time.sleep(0.02)


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 4 * _TAIL))
            return handle.read().decode("utf-8", errors="replace")[-_TAIL:].strip()
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
    if (
        isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(number)
        or not 0.0 <= number <= 1.0
    ):
        return Verdict.failure(f"verifier returned {number!r}; a score must be a number in [0, 1]")
    reward = 1.0 if number >= 1.0 else 0.0
    return Verdict(reward=reward, partial_score=float(number), checks=[_check(reward >= 1.0, f"validate_task returned {number!r}{printed}")])


def verdict_from_return(value: dict[str, Any], stdout: str = "") -> Verdict:
    """The rules for what a verifier may return.

    int 0/1 or bool → reward 0/1. A float in [0, 1], or a dict with `score`, is a partial score
    (reward 1 only at 1.0). A dict with `successes` / `errors` (counts or lists) is Fleet's
    partial-credit form: partial_score = successes / (successes + errors), reward 1 iff no errors.
    """
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return Verdict.failure("verifier sandbox returned a malformed result: the value has no type")
    kind = value["type"]
    printed = f"; printed: {stdout[-200:].strip()!r}" if isinstance(stdout, str) and stdout.strip() else ""
    if kind in ("bool", "int"):
        number = value.get("value")
        if kind == "bool" and not isinstance(number, bool):
            return Verdict.failure("verifier sandbox returned a malformed result: a bool that is not true/false")
        if kind == "int" and (isinstance(number, bool) or not isinstance(number, int)):
            return Verdict.failure("verifier sandbox returned a malformed result: an int that is not an integer")
        if number not in (0, 1):
            return Verdict.failure(f"verifier returned {number!r}; an int score must be 0 or 1")
        reward = float(number)
        return Verdict(reward=reward, partial_score=reward, checks=[_check(bool(number), f"validate_task returned {number!r}{printed}")])
    if kind == "dict":
        body = value.get("value")
        if not isinstance(body, dict):
            return Verdict.failure("verifier sandbox returned a malformed result: a dict value that is not an object")
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
            return Verdict(reward=1.0 if errors == 0 else 0.0, partial_score=partial, checks=[_check(errors == 0, detail[:2000] + printed)])
        if "score" in body:
            score = body["score"]
            if isinstance(score, bool) or not isinstance(score, int | float):
                return Verdict.failure(f"verifier returned score {score!r}; want a number in [0, 1]")
            return _score_verdict(float(score), printed)
        return Verdict.failure(f"verifier returned a dict without 'score' or 'successes'/'errors': keys {sorted(body)[:20]}")
    if kind == "float":
        return _score_verdict(value.get("value"), printed)
    if kind == "none":
        return Verdict.failure("verifier returned None; validate_task must return 1/0, a score in [0, 1] or {successes, errors}")
    return Verdict.failure(f"verifier returned a {kind[:80]} ({str(value.get('repr', ''))[:300]}); want int 0/1, bool, float in [0, 1] or a dict")


def _text(value: Any, limit: int = 2000) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _verdict_from_result(result: dict[str, Any], memory_mb: int) -> Verdict:
    """Strictly read the child's one JSON object. It reports blocked operations too: trusting a report that can
    only turn a verdict into an error is safe; what it says of a success is worth only what the isolation makes it."""
    violations = result.get("violations") or []
    if not isinstance(violations, list):
        return Verdict.failure("verifier sandbox returned a malformed result: 'violations' is not a list")
    if violations:
        return Verdict.failure("verifier tried a blocked operation: " + "; ".join(_text(v, 300) for v in violations[:3]))
    status = result.get("status")
    if status == "ok":
        return verdict_from_return(result.get("value"), _text(result.get("stdout")))  # type: ignore[arg-type]
    if status != "error" or result.get("kind") not in _ERROR_KINDS:
        return Verdict.failure("verifier sandbox returned a malformed result: unknown status or error kind")
    kind = result["kind"]
    line = result.get("line")
    where = f" at verifier line {line}" if isinstance(line, int) and not isinstance(line, bool) and line > 0 else ""
    message = _text(result.get("message"))
    exception = _text(result.get("exception"), 200) or "Exception"
    if kind == "syntax":
        return Verdict.failure(f"verifier has a syntax error: {message}")
    if kind == "missing_function":
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
    if kind in ("bad_signature", "bad_return"):
        return Verdict.failure(f"verifier error: {message}")
    stage = {"load": " while loading", "call": ""}.get(_text(result.get("stage"), 20), "")
    return Verdict.failure(f"verifier crashed{stage}{where}: {exception}: {message}"[:2000])


def _signal_name(number: int) -> str:
    return signal.Signals(number).name if number in signal.valid_signals() else str(number)


def _died(name: str, timeout_s: float, memory_mb: int, elapsed: float) -> Verdict:
    cause = {
        "SIGXCPU": f"ran out of CPU time ({timeout_s:g}s)",
        "SIGKILL": f"was killed (likely its memory limit of {memory_mb} MB)",
        "SIGSEGV": f"crashed with SIGSEGV (likely its memory limit of {memory_mb} MB or unbounded recursion)",
        "SIGXFSZ": f"wrote past its file size limit of {FILE_LIMIT_MB} MB",
    }.get(name, f"died with signal {name}")
    return Verdict.failure(f"verifier process {cause} after {elapsed:.2f}s")


def _finish(verdict: Verdict, isolation: str) -> Verdict:
    """Scrub secret-looking values from every text, and record which isolation ran the code."""
    checks = [
        check.model_copy(update={"detail": f"{scrub(check.detail)} [isolation: {isolation}]"}) for check in verdict.checks
    ]
    return verdict.model_copy(update={"error": scrub(verdict.error), "checks": checks})


def run_python_verifier(
    code: str,
    env: Environment,
    final_answer: str | None,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
) -> Verdict:
    """Run `def validate_task(env, final_answer=None)` from `code` against `env`'s seed and current state.

    Refused (an error verdict naming --trust-verifiers) where strong isolation is unavailable and
    the risk was not accepted; commands check `require_isolation()` first so they stop before running.
    """
    if not isinstance(code, str) or not code.strip():
        return Verdict.failure("verifier error: the verifier code is empty")
    try:
        isolation, bwrap = select_isolation()
    except IsolationUnavailable as exc:
        return Verdict.failure(str(exc))
    try:
        scratch = Path(tempfile.mkdtemp(prefix="toolgym-verifier-"))
    except OSError as exc:
        return Verdict.failure(f"verifier sandbox could not create its directory: {exc}")
    try:
        inputs = scratch / "in"
        inputs.mkdir()
        try:
            databases = _write_databases(env, inputs)
        except Exception as exc:  # the env itself is broken: not the verifier's fault, still no reward
            return Verdict.failure(scrub(f"verifier sandbox could not snapshot the databases: {type(exc).__name__}: {exc}") or "")
        (inputs / "verifier.py").write_text(code, encoding="utf-8")
        shutil.copyfile(CHILD_SCRIPT, inputs / CHILD_SCRIPT.name)  # the child loads the API from its own folder
        for name in FLEET_API_FILES:
            shutil.copyfile(CHILD_SCRIPT.with_name(name), inputs / name)
        spec = {
            "code_file": "verifier.py",
            "final_answer": final_answer,
            "databases": databases,
            "env_variables": dict(env.context.variables),
            "timeout_s": timeout_s,
            "memory_mb": memory_mb,
            "file_mb": FILE_LIMIT_MB,
        }
        (inputs / "input.json").write_text(json.dumps(spec), encoding="utf-8")
        verdict = _run_child(bwrap, scratch, inputs, timeout_s, memory_mb)
        return _finish(verdict, isolation)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _launch(bwrap: Bwrap | None, inputs: Path, out: Any, err: Any) -> subprocess.Popen[bytes]:
    """bwrap around the child (strong), or the child with the weak in-process hook (only when trusted)."""
    common: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": out, "stderr": err, "start_new_session": True}
    if bwrap is None:
        child = str(inputs / CHILD_SCRIPT.name)
        command = [*network_isolation_prefix(), sys.executable, "-I", "-S", child, str(inputs), str(inputs)]
        child_env = {"PATH": os.defpath, "HOME": str(inputs), "TMPDIR": str(inputs), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        return subprocess.Popen(command, cwd=inputs, env=child_env, close_fds=True, **common)
    fd = seccomp_fd()
    try:
        command = bwrap_command(bwrap, inputs, CHILD_SCRIPT.name, FILE_LIMIT_MB, fd)
        return subprocess.Popen(
            command, cwd="/", env=bwrap_env(), close_fds=True, pass_fds=() if fd is None else (fd,), **common
        )
    finally:
        if fd is not None:
            os.close(fd)


def _wait(process: subprocess.Popen[bytes], timeout_s: float) -> int:
    """Wait for exit, woken by a pidfd the moment it happens (`Popen.wait(timeout)` polls in steps up to 50 ms)."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        return process.wait(timeout=timeout_s)
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout_s)
    finally:
        os.close(pidfd)
    if not ready:
        raise subprocess.TimeoutExpired(process.args, timeout_s)
    return process.wait()


def _run_child(bwrap: Bwrap | None, scratch: Path, inputs: Path, timeout_s: float, memory_mb: int) -> Verdict:
    stdout_path, stderr_path = scratch / "child.stdout", scratch / "child.stderr"  # outside the sandbox's view
    started = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            process = _launch(bwrap, inputs, out, err)
        except OSError as exc:
            return Verdict.failure(f"verifier sandbox could not start: {exc}")
        try:
            returncode = _wait(process, timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)  # bwrap's death takes down its PID namespace (--die-with-parent)
            process.wait()
            _await_exit(scratch)
            return Verdict.failure(f"verifier timed out after {timeout_s:g}s (its process group was killed)")
        finally:
            _kill_group(process)  # nothing the verifier started may outlive it
    elapsed = time.monotonic() - started
    if returncode < 0:
        return _died(_signal_name(-returncode), timeout_s, memory_mb, elapsed)
    if bwrap is not None and returncode > 128:  # bwrap reports a child killed by signal N as 128 + N
        return _died(_signal_name(returncode - 128), timeout_s, memory_mb, elapsed)
    if returncode != 0:
        stderr = _tail(stderr_path)
        if "MemoryError" in stderr:
            return Verdict.failure(f"verifier exceeded its memory limit of {memory_mb} MB")
        return Verdict.failure(f"verifier process exited with code {returncode} and no result: {stderr or '(no output)'}")
    try:
        size = stdout_path.stat().st_size
        if size > MAX_RESULT_BYTES:
            return Verdict.failure(f"verifier sandbox returned an oversized result ({size:,} bytes; at most {MAX_RESULT_BYTES:,})")
        raw = stdout_path.read_bytes()
    except OSError as exc:
        return Verdict.failure(f"verifier sandbox returned an unreadable result: {exc}")
    if not raw.strip():
        return Verdict.failure(f"verifier process exited without a result: {_tail(stderr_path) or '(no output)'}")
    try:
        result = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return Verdict.failure(f"verifier sandbox returned a malformed result (one JSON object expected): {exc}"[:500])
    if not isinstance(result, dict):
        return Verdict.failure("verifier sandbox returned a result that is not an object")
    return _verdict_from_result(result, memory_mb)
