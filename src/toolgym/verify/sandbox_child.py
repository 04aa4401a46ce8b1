"""The verifier sandbox's child process: resource limits, the audit hook, then `validate_task`.

Run by `toolgym.verify.sandbox` as `python -I -S sandbox_child.py INPUT_DIR WORK_DIR`, normally
inside bubblewrap (standard library only; nothing from toolgym is importable here). It reads
INPUT_DIR/input.json, runs the task's verifier against read-only copies of the seed and current
databases with WORK_DIR as its scratch space, and writes one JSON object (what the verifier
returned, or why it failed) to its original stdout, kept away from the verifier's own prints.
Nothing here decides that a rule was broken: the hook (`sandbox_rules.py`) and the kernel end the
process when one is, and the parent reads that from its exit status.
"""

from __future__ import annotations

import importlib
import io
import json
import linecache
import math
import os
import resource
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any

VERIFIER_FILENAME = "<verifier>"
FLEET_PACKAGE = "toolgym_fleet"  # the name this folder is imported under, for the fleet_*.py files

def set_limits(memory_mb: int, timeout_s: float, file_mb: int) -> None:
    """Kernel limits, set before any task code runs and never raisable by it (no capabilities, hard = soft):
    address space, CPU seconds (a backstop to the parent's timer), file size, no children (the
    seccomp filter holds that where the sandbox's uid is root outside, as RLIMIT_NPROC then does not)."""
    memory = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = math.ceil(timeout_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    size = file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


def load_sibling(name: str) -> types.ModuleType:
    """One of toolgym's modules copied beside this script (the Fleet API, the sandbox's rules).

    toolgym itself is not importable here, so this folder stands in as a package named FLEET_PACKAGE:
    fleet_api.py's relative imports of its sibling files resolve inside it."""
    if FLEET_PACKAGE not in sys.modules:
        package = types.ModuleType(FLEET_PACKAGE)
        package.__path__ = [os.path.dirname(os.path.abspath(__file__))]
        sys.modules[FLEET_PACKAGE] = package
    return importlib.import_module(f"{FLEET_PACKAGE}.{name}")


def verifier_decorator(*args: Any, **kwargs: Any) -> Any:
    """fleet's `@verifier(key=...)` (or bare `@verifier`): locally the function runs as it is."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda func: func


def install_fleet_modules(api: types.ModuleType, env_type: type) -> dict[str, Any]:
    """`import fleet` / `from fleet.verifiers import ...` resolve to toolgym's API; returns the helper names."""
    helpers: dict[str, Any] = {
        "TASK_SUCCESSFUL_SCORE": api.TASK_SUCCESSFUL_SCORE,
        "TASK_FAILED_SCORE": api.TASK_FAILED_SCORE,
        "normalized_contains": api.normalized_contains,
        "normalized_string_comparison": api.normalized_string_comparison,
        "extract_numbers": api.extract_numbers,
        "contains_number": api.contains_number,
        "DatabaseSnapshot": api.DatabaseSnapshot,
        "IgnoreConfig": api.IgnoreConfig,
        "SnapshotDiff": api.SnapshotDiff,
        "Environment": env_type,
        "verifier": verifier_decorator,
    }
    names = ("fleet", "fleet.verifiers", "fleet.verifiers.db", "fleet.verifiers.code", "fleet.verifiers.local_executor")
    modules = {name: types.ModuleType(name) for name in names}
    for name, module in modules.items():
        module.__dict__.update(helpers)
        sys.modules[name] = module
    modules["fleet"].verifiers = modules["fleet.verifiers"]  # type: ignore[attr-defined]
    modules["fleet.verifiers"].db = modules["fleet.verifiers.db"]  # type: ignore[attr-defined]
    modules["fleet.verifiers"].code = modules["fleet.verifiers.code"]  # type: ignore[attr-defined]
    return helpers


def pick_function(namespace: dict[str, Any]) -> Callable[..., Any] | None:
    """`validate_task`, else (as Fleet's local executor does) the one function taking `env` first."""
    candidate = namespace.get("validate_task")
    if callable(candidate):
        return candidate
    own = [
        value for value in namespace.values()
        if isinstance(value, types.FunctionType)
        and value.__code__.co_filename == VERIFIER_FILENAME
        and value.__code__.co_argcount >= 1
        and value.__code__.co_varnames[0] == "env"
    ]
    return own[0] if len(own) == 1 else None


def describe_value(value: Any) -> dict[str, Any]:
    """The verifier's return value as JSON the parent interprets (the parent owns the rules)."""
    if isinstance(value, bool):
        return {"type": "bool", "value": value}
    if isinstance(value, int):
        return {"type": "int", "value": int(value)}
    if isinstance(value, float):
        return {"type": "float", "value": value if math.isfinite(value) else repr(value)}
    if isinstance(value, dict):
        return {"type": "dict", "value": json.loads(json.dumps(value, default=repr))}
    if value is None:
        return {"type": "none"}
    return {"type": type(value).__name__, "repr": repr(value)[:300]}


def verifier_line(exc: BaseException) -> int | None:
    """The line of the verifier's own code where the exception passed last."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == VERIFIER_FILENAME:
            line = frame.lineno
    return line


def error_result(kind: str, exc: BaseException, stage: str) -> dict[str, Any]:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {
        "status": "error",
        "kind": kind,
        "stage": stage,
        "exception": type(exc).__name__,
        "message": str(exc)[:2000],
        "line": verifier_line(exc),
        "traceback": text[-3000:],
    }


def run(input_dir: str, workdir: str) -> dict[str, Any]:
    with open(os.path.join(input_dir, "input.json"), encoding="utf-8") as handle:
        spec = json.load(handle)
    with open(os.path.join(input_dir, spec["code_file"]), encoding="utf-8") as handle:
        code = handle.read()
    databases = {
        app: {which: os.path.join(input_dir, name) for which, name in files.items()}
        for app, files in spec["databases"].items()
    }
    api = load_sibling("fleet_api")
    rules = load_sibling("sandbox_rules")
    env = api.VerifierEnv(databases, spec.get("env_variables") or {})
    helpers = install_fleet_modules(api, type(env))
    set_limits(int(spec["memory_mb"]), float(spec["timeout_s"]), int(spec["file_mb"]))

    env.open_all()  # before the hook: afterwards no SQLite connection may be opened
    rules.install(workdir)
    captured = io.StringIO()
    real_stdout, real_stderr = sys.stdout, sys.stderr
    stage = "compile"
    try:
        compiled = compile(code, VERIFIER_FILENAME, "exec")
        linecache.cache[VERIFIER_FILENAME] = (len(code), None, code.splitlines(True), VERIFIER_FILENAME)
        namespace: dict[str, Any] = {"__name__": "verifier", "__builtins__": __builtins__, "json": json, **helpers}
        for module_name in ("re", "string"):
            namespace[module_name] = sys.modules[module_name]
        sys.stdout = sys.stderr = captured
        stage = "load"
        exec(compiled, namespace)
        function = pick_function(namespace)
        if function is None:
            defined = sorted(
                k for k, v in namespace.items()
                if isinstance(v, types.FunctionType) and v.__code__.co_filename == VERIFIER_FILENAME
            )
            return {
                "status": "error",
                "kind": "missing_function",
                "message": "no function validate_task(env, final_answer=None) defined"
                + (f" (found: {', '.join(defined)})" if defined else " (the code defines no function)"),
            }
        stage = "call"
        argcount = function.__code__.co_argcount if isinstance(function, types.FunctionType) else 2
        takes_varargs = isinstance(function, types.FunctionType) and bool(function.__code__.co_flags & 0x04)
        if argcount >= 2 or takes_varargs:
            value = function(env, spec.get("final_answer"))
        elif argcount == 1:
            value = function(env)
        else:
            return {"status": "error", "kind": "bad_signature", "message": "validate_task must take env (and final_answer)"}
        if isinstance(value, types.CoroutineType):
            value.close()
            return {"status": "error", "kind": "bad_return", "message": "async verifiers are not supported; define a plain def"}
        return {"status": "ok", "value": describe_value(value)}
    except SyntaxError as exc:
        return {
            "status": "error",
            "kind": "syntax",
            "message": f"{exc.msg} (verifier line {exc.lineno}, column {exc.offset})",
            "line": exc.lineno,
        }
    except MemoryError as exc:
        return {"status": "error", "kind": "memory", "message": f"MemoryError at stage {stage}", "line": verifier_line(exc)}
    except AssertionError as exc:
        return error_result("assertion", exc, stage)
    except BaseException as exc:  # the verifier's bug, reported with its line
        return error_result("exception", exc, stage)
    finally:
        sys.stdout, sys.stderr = real_stdout, real_stderr
        env.close()
        ANNEX["stdout"] = captured.getvalue()[-2000:]


ANNEX: dict[str, Any] = {}


def main() -> int:
    input_dir, workdir = sys.argv[1], sys.argv[2]
    os.chdir(workdir)
    # The result channel is a private copy of stdout; fd 1 itself now writes to stderr, so the
    # verifier's stray low-level writes cannot corrupt the one JSON object the parent reads.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        result = run(input_dir, workdir)
    except MemoryError:
        result = {"status": "error", "kind": "memory", "message": "MemoryError while setting up the verifier"}
    except BaseException as exc:
        result = error_result("setup", exc, "setup")
    result.update(ANNEX)
    data = (json.dumps(result, default=repr) + "\n").encode("utf-8")
    while data:
        data = data[os.write(result_fd, data):]
    return 0


if __name__ == "__main__":
    sys.exit(main())
