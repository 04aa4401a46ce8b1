"""Running one harness command: `sh -c CMD` in its own process group, bounded by a wall clock.

The group is killed when the command outlives its timeout, when the run is cancelled, and after the command
exits (a child it left behind must not reach the episode's endpoints while it is scored). Its output goes to
temporary files, never to pipes a silent reader could let fill; the row keeps the tails.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO

TAIL_CHARS = 2000
TERM_GRACE_S = 3.0  # between SIGTERM and SIGKILL of a group that outlived its timeout
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class ProcessOutcome:
    """How a harness command ended."""

    exit_code: int | None  # None: it was killed on its timeout
    timed_out: bool
    seconds: float
    stdout_tail: str
    stderr_tail: str

    @property
    def signal_name(self) -> str | None:
        """The signal that ended the command (a shell reports it as exit code 128 + N, Python as -N)."""
        code = self.exit_code
        number = -code if code is not None and code < 0 else (code - 128 if code is not None and code > 128 else None)
        if number is None:
            return None
        with contextlib.suppress(ValueError):
            return signal.Signals(number).name
        return None

    def describe(self) -> str:
        """How it ended, in words: exit code, signal, or timeout."""
        if self.timed_out:
            return f"still running after {self.seconds:.0f}s"
        name = self.signal_name
        return f"exited with code {self.exit_code}" + (f" (killed by {name})" if name else "")


def check_env_variables(variables: Mapping[str, str]) -> None:
    """Refuse variables a process environment cannot carry (a task's env_variables are data), naming the first."""
    for key, value in variables.items():
        if not ENV_NAME.fullmatch(key):
            raise ValueError(f"env variable name {key!r} cannot be passed to a process (letters, digits, _)")
        if "\0" in value:
            raise ValueError(f"env variable {key} holds a NUL character, which a process environment cannot carry")


def _tail(handle: IO[bytes]) -> str:
    handle.flush()
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - TAIL_CHARS * 4))
    return handle.read().decode("utf-8", errors="replace")[-TAIL_CHARS:].strip()


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def run_command(command: str, env: Mapping[str, str], timeout_s: float, cwd: str | None = None) -> ProcessOutcome:
    """Run `command` with exactly `env` as its environment; never raises for what the command does."""
    began = time.perf_counter()
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        process = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command, stdin=asyncio.subprocess.DEVNULL, stdout=stdout, stderr=stderr,
            env=dict(env), cwd=cwd, start_new_session=True,
        )
        timed_out = False
        try:
            try:
                await asyncio.wait_for(process.wait(), timeout_s)
            except TimeoutError:
                timed_out = True
                _kill_group(process.pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), TERM_GRACE_S)
                except TimeoutError:
                    _kill_group(process.pid, signal.SIGKILL)
                    await process.wait()
        finally:
            _kill_group(process.pid, signal.SIGKILL)  # whatever it left behind, and everything if cancelled
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.shield(process.wait())
        return ProcessOutcome(
            exit_code=None if timed_out else process.returncode, timed_out=timed_out,
            seconds=time.perf_counter() - began, stdout_tail=_tail(stdout), stderr_tail=_tail(stderr),
        )
