"""Blocked native modules, replaced inside the sandbox by empty files that this process watches.

The audit hook that names a blocked import runs in the verifier's own process. The kernel gives
a second witness the verifier cannot silence: inside the sandbox each blocked extension module
of the interpreter (`_socket`, `_ctypes`, `_posixsubprocess`, ...) is covered by an empty file of
ours, watched here with inotify. Loading the module means opening that file; the kernel queues
the open for this process before the verifier's code sees the result, and nothing the verifier
does afterwards (catching the ImportError, exiting 0 with a forged result) takes it back.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import os
import struct
import sys
import sysconfig
import threading
from pathlib import Path

from toolgym.verify.sandbox_rules import BLOCKED_IMPORTS

# The blocked modules that carry a capability of their own (sockets, processes, calls into native
# code, other interpreters, raw memory); the others only wrap these or are harmless unimported.
WATCHED = frozenset(
    {"_socket", "_ssl", "_posixsubprocess", "_multiprocessing", "_ctypes", "_xxsubinterpreters", "_interpreters",
     "_testcapi", "_testinternalcapi"}
)
_IN_OPEN = 0x00000020
_IN_Q_OVERFLOW = 0x00004000
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name


class WatchUnavailable(OSError):
    """inotify could not be set up, so a blocked module could be loaded unseen."""


@functools.cache
def blocked_extensions() -> dict[str, str]:
    """Watched module name → its extension file in this interpreter's lib-dynload (built-in ones have none)."""
    prefixes = {"installed_platbase": sys.base_exec_prefix, "platbase": sys.base_exec_prefix, "base": sys.base_prefix,
                "installed_base": sys.base_prefix}
    directory = Path(sysconfig.get_path("platstdlib", vars=prefixes)) / "lib-dynload"
    found = {}
    for name in sorted(WATCHED & BLOCKED_IMPORTS):
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = directory / f"{name}{suffix}"
            if path.is_file():
                found[name] = os.path.realpath(path)
                break
    return found


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


class ModuleWatch:
    """Empty stand-ins for the blocked extension modules, under `directory`, each watched for opens."""

    def __init__(self, directory: Path) -> None:
        self.fd = -1
        self.by_descriptor: dict[int, str] = {}
        self.stubs: dict[str, Path] = {}
        directory.mkdir()
        libc = _libc()
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise WatchUnavailable(ctypes.get_errno(), f"inotify_init1: {os.strerror(ctypes.get_errno())}")
        try:
            for name, target in blocked_extensions().items():
                stub = directory / name
                stub.write_bytes(b"")
                descriptor = libc.inotify_add_watch(self.fd, os.fsencode(stub), _IN_OPEN)
                if descriptor < 0:
                    raise WatchUnavailable(ctypes.get_errno(), f"inotify_add_watch: {os.strerror(ctypes.get_errno())}")
                self.by_descriptor[descriptor] = name
                self.stubs[target] = stub
        except BaseException:
            self.close()
            raise

    def bind_args(self) -> list[str]:
        """bwrap options laying each stub over its module's file, read-only."""
        args: list[str] = []
        for target, stub in self.stubs.items():
            args += ["--ro-bind", str(stub), target]
        return args

    def opened(self) -> list[str]:
        """The blocked modules whose file was opened since the watch began (all of them on a lost event)."""
        names: set[str] = set()
        while True:
            try:
                data = os.read(self.fd, 64 * 1024)
            except BlockingIOError:
                break
            if not data:
                break
            offset = 0
            while offset + _EVENT.size <= len(data):
                descriptor, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:
                    names.update(self.by_descriptor.values())
                elif mask & _IN_OPEN and descriptor in self.by_descriptor:
                    names.add(self.by_descriptor[descriptor])
        return sorted(names)

    def close(self) -> None:
        """Release the watch. The kernel makes closing an inotify instance wait out its marks' teardown
        (tens of milliseconds), so the close happens on a thread of its own: nothing waits for it."""
        if self.fd >= 0:
            threading.Thread(target=os.close, args=(self.fd,), name="toolgym-watch-close", daemon=True).start()
            self.fd = -1

    def __enter__(self) -> ModuleWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
