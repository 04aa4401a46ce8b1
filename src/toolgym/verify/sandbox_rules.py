"""The verifier sandbox's audit hook: the first rule a verifier breaks ends its process on the spot.

Standard library only: it is copied into the sandbox beside `sandbox_child.py`, and the parent
reads VIOLATION_EXIT, VIOLATION_MARKER and BLOCKED_IMPORTS from here. Nothing is recorded for
later, since code in the verifier's process could rewrite any record: the hook writes one line
naming the rule to stderr and calls `os._exit(VIOLATION_EXIT)` before control returns, and the
parent trusts only that exit status. The hook holds no state the verifier could reach (no
globals, closure or builtins; immutable defaults only) and never runs code the verifier could
have replaced. Changing the hook, finding it through `gc`, tracing, and starting a
sub-interpreter (which would run without it) are rules too.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from typing import Any

VIOLATION_EXIT = 86  # the exit status of a process the hook ended; never 0, and not bwrap's 1 or 128 + N
VIOLATION_MARKER = "toolgym-sandbox-rule: "  # prefixes the line on stderr naming the rule

# Modules whose import is a broken rule: networking, processes, native code, interpreter internals
# and sub-interpreters. Any dotted component counts, so `x._socket` is caught as well as `_socket`.
BLOCKED_IMPORTS = frozenset(
    {
        "socket", "_socket", "ssl", "_ssl", "subprocess", "_posixsubprocess", "multiprocessing",
        "_multiprocessing", "ctypes", "_ctypes", "pty", "asyncio", "_asyncio", "concurrent",
        "_xxsubinterpreters", "_xxinterpchannels", "_interpreters", "_interpchannels", "_interpqueues",
        "_testcapi", "_testinternalcapi", "_testbuffer", "_testmultiphase", "_testsinglephase",
        "_testimportmultiple", "_testclinic", "_ctypes_test", "_xxtestfuzz",
    }
)
# Events that break a rule whatever their arguments (prefix match on the event name).
BLOCKED_EVENTS = (
    "socket.", "ctypes.", "subprocess.", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork",
    "os.kill", "os.startfile", "pty.", "signal.pthread_kill", "resource.setrlimit", "resource.prlimit",
    "sqlite3.enable_load_extension", "sqlite3.load_extension", "urllib.Request", "webbrowser.open",
    "sys.remote_exec",
)
# Exact events that do too: links could point a later write outside, changing directory would
# move the base of relative paths, a new SQLite connection could ATTACH or VACUUM INTO any file,
# gc could find the hook, a tracer could rewrite its locals, and a sub-interpreter has no hook.
REFUSED_EVENTS = frozenset(
    {
        "os.symlink", "os.link", "os.chdir", "sqlite3.connect", "gc.get_objects", "gc.get_referrers",
        "gc.get_referents", "sys.settrace", "sys.setprofile", "cpython.PyInterpreterState_New",
    }
)
# Filesystem-changing events: (name, positions of path arguments, positions of dir_fd arguments).
# Every path must lie inside the work directory; dir_fd-relative forms are refused outright.
PATH_EVENTS = (
    ("os.remove", (0,), (1,)),
    ("os.rmdir", (0,), (1,)),
    ("os.mkdir", (0,), (2,)),
    ("os.rename", (0, 1), (2, 3)),
    ("os.truncate", (0,), ()),
    ("os.chmod", (0,), (2,)),
    ("os.chown", (0,), (3,)),
    ("os.utime", (0,), (3,)),
    ("os.chflags", (0,), ()),
    ("os.lchflags", (0,), ()),
    ("os.setxattr", (0,), ()),
    ("os.removexattr", (0,), ()),
    ("shutil.rmtree", (0,), (1,)),
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _hook(  # one function on purpose: it may call nothing the verifier could replace
    event: str,
    args: tuple[Any, ...],
    _roots: tuple[str, ...] = (),
    _cwd: str = "/",
    _blocked: frozenset[str] = BLOCKED_IMPORTS,
    _blocked_events: tuple[str, ...] = BLOCKED_EVENTS,
    _refused: frozenset[str] = REFUSED_EVENTS,
    _path_events: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = PATH_EVENTS,
    _path_event_names: frozenset[str] = frozenset(name for name, _, _ in PATH_EVENTS),
    _write_flags: int = _WRITE_FLAGS,
    _type: Any = type,
    _len: Any = len,
    _repr: Any = repr,
    _str: type = str,
    _bytes: type = bytes,
    _int: type = int,
    _function: type = types.FunctionType,
    _split: Any = str.split,
    _join: Any = str.join,
    _startswith: Any = str.startswith,
    _decode: Any = bytes.decode,
    _encode: Any = str.encode,
    _stat: Any = os.stat,
    _write: Any = os.write,
    _exit: Any = os._exit,
    _error: type = BaseException,
    _exit_code: int = VIOLATION_EXIT,
    _marker: str = VIOLATION_MARKER,
    _code: Any = None,
) -> None:
    """Decide one audit event; a broken rule never returns. Every name used here is a local or a default."""
    rule = None
    checked: list[tuple[str, Any]] = []  # (role, path): "write" must lie inside, "library" outside, "read" no outside dir
    try:
        if event == "open":
            path, mode, flags = args[0], args[1], args[2]
            if _type(path) is _int:
                return None  # an existing descriptor
            writing = (_type(mode) is _str and ("w" in mode or "a" in mode or "x" in mode or "+" in mode)) or (
                _type(flags) is _int and flags & _write_flags
            )
            checked.append(("write" if writing else "read", path))
        elif event == "import":
            name = args[0]
            if _type(name) is not _str:
                rule = "an import by a name that is not a plain str"
            else:
                for part in _split(name, "."):
                    if part in _blocked:
                        rule = "import of " + _repr(name) + " (no network, processes, native code or sub-interpreters)"
                        break
            if rule is None and _len(args) > 1 and args[1] is not None:
                checked.append(("library", args[1]))  # native code: never from a file the verifier wrote
        elif event in _refused or _startswith(event, _blocked_events):
            rule = event
            if event == "sqlite3.connect":
                rule = "sqlite3.connect (read the task's databases through env.db(...); no other connection is allowed)"
        elif event in _path_event_names:
            for name, paths, descriptors in _path_events:
                if name != event:
                    continue
                for position in descriptors:
                    descriptor = args[position] if position < _len(args) else None
                    if _type(descriptor) is _int and descriptor >= 0:  # None / -1 mean "no dir_fd"
                        rule = event + " relative to a directory descriptor"
                for position in paths:
                    value = args[position] if position < _len(args) else None
                    if _type(value) is _int and event == "os.truncate":
                        continue  # truncating needs a descriptor opened for writing, which was checked
                    if value is None or _type(value) is _int:
                        rule = event + "(" + _repr(value) + ") outside the work directory"
                    checked.append(("write", value))
        elif event == "object.__setattr__" or event == "object.__delattr__":
            target = args[0]
            if _type(target) is _function and target.__code__ is _code:
                rule = "changing the sandbox's audit hook"
        else:
            return None

        for role, path in checked:
            if rule is not None:
                break
            kind = _type(path)
            if kind is _str:
                text = path
            elif kind is _bytes:
                text = _decode(path, "utf-8", "surrogateescape")
            else:  # os.* and open() pass the text they converted; only Python-level events pass the object
                rule = event + " of a path object the sandbox will not call into (pass a str)"
                break
            if not _startswith(text, "/"):
                text = _cwd + "/" + text  # relative to the work directory, which cannot change
            parts: list[str] = []
            for part in _split(text, "/"):
                if part == "" or part == ".":
                    continue
                if part == "..":
                    if parts:
                        parts.pop()
                    continue
                parts.append(part)
            normal = "/" + _join("/", parts)
            inside = False
            for root in _roots:
                if normal == root or _startswith(normal, root + "/"):
                    inside = True
            if role == "write" and not inside:
                where = "open(" + _repr(normal) + ") for writing" if event == "open" else event + "(" + _repr(normal) + ")"
                rule = where + " outside the work directory"
            elif role == "library" and inside:
                rule = "loading native code written during the run (" + _repr(normal) + ")"
            elif role == "read" and not inside:
                try:
                    if (_stat(normal).st_mode & 0o170000) == 0o040000:
                        rule = "open(" + _repr(normal) + ") of a directory outside the work directory"
                except _error:
                    pass
    except _error:
        rule = "an operation the sandbox could not check (" + event + ")"
    if rule is None:
        return None
    try:
        _write(2, _encode("\n" + _marker + rule[:500] + "\n", "utf-8", "backslashreplace"))
    finally:
        _exit(_exit_code)
    return None


def make_hook(workdir: str) -> Callable[[str, tuple[Any, ...]], None]:
    """The hook for a verifier whose only writable place (and current directory) is `workdir`.

    A fresh function over `_hook`'s code with empty globals and builtins, whose defaults hold the
    work directory and its own code object (to recognise attempts to change it)."""
    real = os.path.realpath(workdir)
    roots = tuple(dict.fromkeys(root.rstrip("/") or "/" for root in (real, os.path.abspath(workdir))))
    names = _hook.__code__.co_varnames[2 : _hook.__code__.co_argcount]
    defaults = dict(zip(names, _hook.__defaults__ or (), strict=True))
    defaults.update(_roots=roots, _cwd=real, _code=_hook.__code__)
    hook = types.FunctionType(_hook.__code__, {"__builtins__": {}}, "sandbox_rules", tuple(defaults.values()))
    return hook


def install(workdir: str) -> None:
    """Make every later audit event go through the hook; refuse to start if a blocked module is already loaded
    (importing it again would raise no event)."""
    loaded = sorted(name for name in sys.modules if set(name.split(".")) & BLOCKED_IMPORTS)
    if loaded:
        raise RuntimeError(f"blocked modules were imported before the verifier started: {loaded}")
    sys.dont_write_bytecode = True  # the import system's own cache writes would be writes outside
    sys.addaudithook(make_hook(workdir))
