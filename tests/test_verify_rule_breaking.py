"""A verifier that breaks a sandbox rule is an error naming the rule, whatever it does next.

Each case breaks one rule (a blocked module, a forbidden system call, a write outside its
directory, a blocked operation), swallows the consequence, and then tries to be scored anyway:
it returns 1 or 0, empties what the sandbox recorded, patches the serializer its result goes
through, or writes a passing result straight to the result channel and exits 0. Everything runs
for real: bubblewrap, seccomp, the child process and its audit hook.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from toolgym.envs import Environment
from toolgym.envs.examples.toy import APP
from toolgym.schema import Verdict
from toolgym.verify import isolation
from toolgym.verify.sandbox import run_python_verifier

STRONG, PROBLEM = isolation.strong_isolation()
needs_bwrap = pytest.mark.skipif(STRONG is None, reason=f"no strong isolation on this machine: {PROBLEM}")

OK_1 = json.dumps({"status": "ok", "value": {"type": "int", "value": 1}}) + "\n"

# Ways to hide a broken rule. Each is written against where a sandbox could keep its record.
CLEAR_RECORD = """
import gc
for _obj in gc.get_objects():
    if hasattr(type(_obj), "hook") and isinstance(getattr(_obj, "violations", None), list):
        _obj.violations.clear()
        _obj.active = False
"""
PATCH_SERIALIZER = f"""
import json as _json
_json.dumps = lambda *args, **kwargs: {OK_1.strip()!r}
"""
FORGE_AND_EXIT = f"""
import os as _os
for _fd in range(3, 64):
    try:
        _os.write(_fd, {OK_1!r}.encode())
    except OSError:
        pass
_os._exit(0)
"""
HIDE = {"record": CLEAR_RECORD, "serializer": PATCH_SERIALIZER, "forge": FORGE_AND_EXIT, "none": ""}

# (case, the rule broken inside a try, text the error must hold)
BREAKS = [
    ("import socket", "import socket", "socket"),
    ("import _ctypes", "import _ctypes", "_ctypes"),
    ("import_module subprocess", "import importlib\nimportlib.import_module('subprocess')", "subprocess"),
    ("__import__ multiprocessing", "__import__('multiprocessing')", "multiprocessing"),
    ("os.fork", "import os\nos.fork()", "os.fork"),
    ("os.system", "import os\nif os.system('true') != 0:\n    raise OSError('refused')", "os.system"),
    ("os.execv", "import os\nos.execv('/bin/true', ['true'])", "os.exec"),
    ("os.kill", "import os, signal\nos.kill(os.getpid(), 0)", "os.kill"),
    ("memfd_create", "import os\nos.memfd_create('hoard')", "forbidden system call"),
    ("pidfd_open", "import os\nos.pidfd_open(os.getpid())", "forbidden system call"),
    ("thread", "import threading\nthreading.Thread(target=print).start()", "forbidden system call"),
    ("mkfifo", "import os\nos.mkfifo('/sandbox/in/fifo')", "forbidden system call"),
    ("write outside", "open('/sandbox/in/escape', 'w').write('x')", "outside the work directory"),
    ("pathlib write outside", "import pathlib\npathlib.Path('/sandbox/in/escape').write_text('x')", "outside the work directory"),
    ("symlink", "import os\nos.symlink('/etc', 'link')", "os.symlink"),
    ("chdir", "import os\nos.chdir('/')", "os.chdir"),
    ("sqlite3.connect", "import sqlite3\nsqlite3.connect(':memory:')", "sqlite3.connect"),
    ("setrlimit", "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (1, 1))", "resource.setrlimit"),
]
CASES = [
    pytest.param(rule, hide, returns, cause, id=f"{case}-{hide}-returns-{returns}")
    for case, rule, cause in BREAKS
    for hide, returns in (("none", "1"), ("none", "0"), ("record", "1.0"), ("serializer", "1"), ("forge", "1"))
]


pytestmark = pytest.mark.usefixtures("private_tempdir")  # tests/conftest.py


def rule_breaker(rule: str, hide: str, returns: str) -> str:
    """A verifier that breaks `rule`, swallows whatever follows, hides it with `hide`, and returns `returns`."""
    return (
        "def validate_task(env, final_answer=None):\n"
        + "    try:\n" + textwrap.indent(rule, " " * 8) + "\n"
        + "    except BaseException:\n        pass\n"
        + textwrap.indent(HIDE[hide].strip(), "    ") + "\n"
        + f"    return {returns}\n"
    )


def toy_env() -> Environment:
    env = Environment([APP])
    env.reset({"LOGGED_IN_USER": "ana", "CURRENT_DATE": "2026-06-15"})
    return env


def run(code: str) -> Verdict:
    return run_python_verifier(code, toy_env(), "done", timeout_s=5.0)


@needs_bwrap
@pytest.mark.parametrize(("rule", "hide", "returns", "cause"), CASES)
def test_a_broken_rule_is_an_error_naming_it_however_it_is_hidden(rule: str, hide: str, returns: str, cause: str) -> None:
    verdict = run(rule_breaker(rule, hide, returns))
    assert verdict.error is not None, verdict
    assert verdict.reward == 0.0 and verdict.partial_score == 0.0 and not verdict.passed
    assert cause in verdict.error, verdict.error


@needs_bwrap
@pytest.mark.parametrize("hide", ["none", "serializer", "forge"])
def test_the_same_verifier_without_the_broken_rule_is_scored(hide: str) -> None:
    """The control: hiding alone breaks no rule, and gains only what returning 1 gives."""
    verdict = run(rule_breaker("pass", hide, "1"))
    assert verdict.error is None and verdict.passed, verdict
