"""Run a task's Fleet-form Python verifier in an isolated subprocess and turn what it returns into a Verdict.

Task-supplied code never runs in this process, and the boundary around it never depends on its
cooperation. The seed and current databases of every app are written into a fresh temporary
directory; a child `python -I -S` (see `sandbox_child.py`) runs inside a bubblewrap sandbox set up
before any task code starts (see `isolation.py`: no network, its own PID namespace, an
unprivileged uid without capabilities, an empty environment, a read-only filesystem but for a
small tmpfs, no new processes, kernel limits on memory, CPU and file size). Where that sandbox
cannot be had, verifier code is refused unless the user accepted the risk (`--trust-verifiers`).

Rules are decided where the verifier cannot reach them. A forbidden system call is killed by
the seccomp filter (SIGSYS); a rule the audit hook sees ends the process with VIOLATION_EXIT
before control returns to the verifier (`sandbox_rules.py`); loading a blocked native module
opens a stand-in file the kernel reports to this process (`module_watch.py`). A result is read
only from a child that exited 0 on its own with no blocked module loaded: one JSON object on its
stdout, parsed strictly (`sandbox_result.py`). The child controls that output, so a "valid 1" is
worth only what the isolation makes it: whatever the code did, it could do nothing outside, and
it broke no rule. Anything else (a broken rule, a non-zero exit, a signal, a timeout, a malformed
or oversized result, a crash, a memory blow-up, a syntax error, no `validate_task`, a return value
that is not a score) becomes `Verdict.failure(...)` with its cause, never a reward of 0.
"""

from __future__ import annotations

import contextlib
import functools
import json
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
from toolgym.schema import Verdict
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
from toolgym.verify.module_watch import ModuleWatch
from toolgym.verify.sandbox_result import verdict_from_result, verdict_from_return
from toolgym.verify.sandbox_rules import VIOLATION_EXIT, VIOLATION_MARKER

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
RULES_FILE = "sandbox_rules.py"  # the audit hook, loaded by the child from its own folder
FILE_LIMIT_MB = 16  # the most a verifier may write: per file, and its whole scratch tmpfs
MAX_RESULT_BYTES = 1024 * 1024  # the child's one JSON line; anything larger is an error
_TAIL = 600


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
        for name in (RULES_FILE, *FLEET_API_FILES):
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


def _launch(bwrap: Bwrap | None, inputs: Path, binds: list[str], out: Any, err: Any) -> subprocess.Popen[bytes]:
    """bwrap around the child (strong), or the child with only its audit hook (weak, and only when trusted)."""
    common: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": out, "stderr": err, "start_new_session": True}
    if bwrap is None:
        child = str(inputs / CHILD_SCRIPT.name)
        command = [*network_isolation_prefix(), sys.executable, "-I", "-S", child, str(inputs), str(inputs)]
        child_env = {"PATH": os.defpath, "HOME": str(inputs), "TMPDIR": str(inputs), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        return subprocess.Popen(command, cwd=inputs, env=child_env, close_fds=True, **common)
    fd = seccomp_fd()
    try:
        command = bwrap_command(bwrap, inputs, CHILD_SCRIPT.name, FILE_LIMIT_MB, fd, binds)
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


def _rule_broken(stderr_path: Path) -> str:
    """The rule the hook named on its last line before it ended the process (text only: the exit status decided)."""
    lines = [line for line in _tail(stderr_path).splitlines() if line.startswith(VIOLATION_MARKER)]
    return lines[-1][len(VIOLATION_MARKER):].strip() if lines else "(the rule's name was not written)"


def _exit_verdict(returncode: int, bwrap: Bwrap | None, stderr_path: Path, limits: tuple[float, int], elapsed: float) -> Verdict | None:
    """The verdict a non-zero exit gives, or None for an exit 0: only then is a result read."""
    timeout_s, memory_mb = limits
    if returncode == 0:
        return None
    if returncode == VIOLATION_EXIT:
        return Verdict.failure(f"verifier broke a sandbox rule: {_rule_broken(stderr_path)}")
    if returncode in (-signal.SIGSYS, 128 + signal.SIGSYS):  # under bwrap a signal N comes back as 128 + N
        return Verdict.failure(f"verifier broke a sandbox rule: a forbidden system call (the seccomp filter killed it after {elapsed:.2f}s)")
    if returncode < 0:
        return _died(_signal_name(-returncode), timeout_s, memory_mb, elapsed)
    if bwrap is not None and returncode > 128:  # bwrap reports a child killed by signal N as 128 + N
        return _died(_signal_name(returncode - 128), timeout_s, memory_mb, elapsed)
    stderr = _tail(stderr_path)
    if "MemoryError" in stderr:
        return Verdict.failure(f"verifier exceeded its memory limit of {memory_mb} MB")
    return Verdict.failure(f"verifier process exited with code {returncode} and no result: {stderr or '(no output)'}")


def _read_result(stdout_path: Path, stderr_path: Path, memory_mb: int) -> Verdict:
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
    return verdict_from_result(result, memory_mb)


def _run_child(bwrap: Bwrap | None, scratch: Path, inputs: Path, timeout_s: float, memory_mb: int) -> Verdict:
    if bwrap is None:
        return _supervise(None, None, scratch, inputs, (timeout_s, memory_mb))
    try:
        watch = ModuleWatch(scratch / "stubs")  # outside the sandbox's view, like the output files
    except OSError as exc:
        return Verdict.failure(f"verifier sandbox could not watch its blocked modules: {exc}")
    with watch:
        verdict = _supervise(bwrap, watch, scratch, inputs, (timeout_s, memory_mb))
        loaded = watch.opened()  # read after the child is gone: every open it made is queued by now
    if loaded:
        return Verdict.failure(f"verifier broke a sandbox rule: it loaded the blocked module {', '.join(loaded)}")
    return verdict


def _supervise(bwrap: Bwrap | None, watch: ModuleWatch | None, scratch: Path, inputs: Path, limits: tuple[float, int]) -> Verdict:
    """Start the child, wait for it within its time limit, and judge how it ended."""
    timeout_s, memory_mb = limits
    stdout_path, stderr_path = scratch / "child.stdout", scratch / "child.stderr"  # outside the sandbox's view
    started = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            process = _launch(bwrap, inputs, [] if watch is None else watch.bind_args(), out, err)
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
    ended = _exit_verdict(returncode, bwrap, stderr_path, limits, time.monotonic() - started)
    return ended if ended is not None else _read_result(stdout_path, stderr_path, memory_mb)
