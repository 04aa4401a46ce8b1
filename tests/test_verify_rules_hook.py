"""The sandbox's audit hook cannot be changed, found, traced or talked past by the code it watches.

The hook runs in the verifier's own process, so its worth rests on holding nothing that code can
reach. These tests attack it directly: in a plain child process handed the hook itself, and in
the real bubblewrap sandbox where the verifier has to find it first. A broken rule must end the
process with VIOLATION_EXIT, whatever the verifier tried first.
"""

from __future__ import annotations

import dis
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from toolgym.envs import Environment
from toolgym.envs.examples.toy import APP
from toolgym.schema import Verdict
from toolgym.verify import isolation, sandbox_rules
from toolgym.verify.sandbox import run_python_verifier
from toolgym.verify.sandbox_rules import VIOLATION_EXIT, VIOLATION_MARKER, make_hook

STRONG, PROBLEM = isolation.strong_isolation()
needs_bwrap = pytest.mark.skipif(STRONG is None, reason=f"no strong isolation on this machine: {PROBLEM}")

# ---------------------------------------------------------------------------------------------
#  The hook as an object: nothing in it to change
# ---------------------------------------------------------------------------------------------


def test_the_hook_reads_no_global_builtin_or_closure() -> None:
    """Every name it uses is a local or a default: a patched builtin or module cannot change what it does."""
    hook = make_hook("/sandbox/work")
    loads = {ins.opname for ins in dis.get_instructions(hook)}
    assert not loads & {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE", "STORE_GLOBAL"}
    assert hook.__closure__ is None and hook.__globals__ == {"__builtins__": {}}
    assert hook.__kwdefaults__ is None


def test_the_hooks_defaults_are_all_immutable() -> None:
    immutable = (str, int, bool, tuple, frozenset, type, types.BuiltinFunctionType, types.MethodDescriptorType,
                 types.CodeType, type(None))
    hook = make_hook("/sandbox/work")

    def check(value: object) -> None:
        assert isinstance(value, immutable), type(value)
        if isinstance(value, tuple | frozenset):
            for item in value:
                check(item)

    for value in hook.__defaults__ or ():
        check(value)
    assert hook.__code__ in hook.__defaults__  # how it recognises an attempt to change it


def run_hooked(attack: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    """A plain `python -I -S` with the hook installed on `workdir`, handed the hook as `hook`, running `attack`."""
    script = textwrap.dedent(f"""
        import importlib.util, os, sys
        spec = importlib.util.spec_from_file_location("sandbox_rules", {sandbox_rules.__file__!r})
        rules = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(rules)
        os.chdir({str(workdir)!r})
        hook = rules.make_hook({str(workdir)!r})
        sys.addaudithook(hook)
    """) + textwrap.dedent(attack) + "\nprint('survived')\n"
    return subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, timeout=30, check=False)


def assert_ended(done: subprocess.CompletedProcess[str], rule: str) -> None:
    assert done.returncode == VIOLATION_EXIT and "survived" not in done.stdout, (done.returncode, done.stdout, done.stderr)
    named = [line for line in done.stderr.splitlines() if line.startswith(VIOLATION_MARKER)]
    assert len(named) == 1 and rule in named[0], done.stderr


@pytest.mark.parametrize(
    ("attack", "rule"),
    [
        ("hook.__code__ = (lambda event, args: None).__code__", "changing the sandbox's audit hook"),
        ("hook.__defaults__ = None", "changing the sandbox's audit hook"),
        ("del hook.__defaults__", "changing the sandbox's audit hook"),
        ("hook.__kwdefaults__ = {}", "changing the sandbox's audit hook"),
        ("hook.__cantrace__ = True\nsys.settrace(lambda *args: None)", "sys.settrace"),
        ("sys.setprofile(lambda *args: None)", "sys.setprofile"),
        ("import gc\ngc.get_referrers(hook)", "gc.get_referrers"),
        ("import gc\ngc.get_referents(hook)", "gc.get_referents"),
        ("import gc\ngc.get_objects()", "gc.get_objects"),
    ],
)
def test_changing_finding_or_tracing_the_hook_ends_the_process(attack: str, rule: str, tmp_path: Path) -> None:
    assert_ended(run_hooked(attack, tmp_path), rule)


@pytest.mark.parametrize(
    ("attack", "rule"),
    [
        # A str subclass would run its own methods inside the hook.
        ("class S(str):\n    def split(self, *a):\n        return ['json']\n__import__(S('socket'))",
         "an import by a name that is not a plain str"),
        # A module path hides the blocked name in a later component.
        ("import _imp, importlib.machinery as m, importlib.util as u\n"
         "path = u.find_spec('_socket').origin\n"
         "_imp.create_dynamic(m.ModuleSpec('pkg._socket', m.ExtensionFileLoader('pkg._socket', path), origin=path))",
         "import of 'pkg._socket'"),
        # Native code copied into the one writable place, then loaded.
        ("import _imp, shutil, importlib.machinery as m, importlib.util as u\n"
         "shutil.copyfile(u.find_spec('_json').origin, 'mine.so')\n"
         "_imp.create_dynamic(m.ModuleSpec('_json', m.ExtensionFileLoader('_json', 'mine.so'), origin=os.path.abspath('mine.so')))",
         "loading native code written during the run"),
        # open() and os.* convert a path object before the event: the hook sees the text the kernel gets.
        ("import pathlib\npathlib.PurePath.__fspath__ = lambda self: '/outside.txt'\nopen(pathlib.Path('inside.txt'), 'w')",
         "open('/outside.txt') for writing outside the work directory"),
        ("import pathlib\npathlib.PurePath.__fspath__ = lambda self: '/outside'\nos.mkdir(pathlib.Path('inside'))",
         "os.mkdir('/outside') outside the work directory"),
        # A Python-level event passes the object itself, whose own code the hook will not run.
        ("import pathlib, shutil\nclass P(pathlib.PosixPath):\n    pass\nshutil.rmtree(P('inside'))",
         "shutil.rmtree of a path object the sandbox will not call into"),
        ("open('../escape.txt', 'w')", "for writing outside the work directory"),
        ("os.mkdir(b'/escape')", "os.mkdir('/escape') outside the work directory"),
        ("import _xxsubinterpreters", "import of '_xxsubinterpreters'"),
    ],
)
def test_talking_past_the_hook_ends_the_process(attack: str, rule: str, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    assert_ended(run_hooked(attack, workdir), rule)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_path_objects_and_scratch_files_in_the_work_directory_are_fine(tmp_path: Path) -> None:
    done = run_hooked("""
        import pathlib
        pathlib.Path('a.txt').write_text('x')
        pathlib.Path('sub').mkdir()
        os.rename('a.txt', 'sub/b.txt')
        assert pathlib.Path('sub/b.txt').read_text() == 'x'
        open(os.path.join(os.getcwd(), 'c.txt'), 'wb').close()
        os.remove(b'c.txt')
        import json, sqlite3, re, datetime, decimal
    """, tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "survived", done.stderr


def test_install_refuses_when_a_blocked_module_is_already_loaded(tmp_path: Path) -> None:
    """Importing a loaded module raises no event, so the hook could never see it."""
    script = textwrap.dedent(f"""
        import importlib.util, socket
        spec = importlib.util.spec_from_file_location("sandbox_rules", {sandbox_rules.__file__!r})
        rules = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(rules)
        rules.install({str(tmp_path)!r})
    """)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1 and "blocked modules were imported before the verifier started: ['_socket', 'socket']" in done.stderr


# ---------------------------------------------------------------------------------------------
#  In the real sandbox: the verifier has to find the hook first, and cannot
# ---------------------------------------------------------------------------------------------


def run(code: str) -> Verdict:
    env = Environment([APP])
    env.reset({"LOGGED_IN_USER": "ana", "CURRENT_DATE": "2026-06-15"})
    return run_python_verifier(textwrap.dedent(code), env, "done")


@needs_bwrap
@pytest.mark.parametrize(
    ("attack", "rule"),
    [
        ("import gc\nhooks = [o for o in gc.get_objects() if getattr(o, '__name__', '') == 'sandbox_rules']", "gc.get_objects"),
        ("import sys\nsys.settrace(lambda *args: None)", "sys.settrace"),
        ("import _xxsubinterpreters as i\ni.run_string(i.create(), 'import socket')", "import of '_xxsubinterpreters'"),
        ("import _imp, importlib.machinery as m\n"
         "_imp.create_dynamic(m.ModuleSpec('x._socket', None, origin='/nowhere'))", "import of 'x._socket'"),
    ],
)
def test_in_the_sandbox_the_hook_cannot_be_found_or_bypassed(attack: str, rule: str, private_tempdir: Path) -> None:
    verdict = run(f"def validate_task(env, final_answer=None):\n    try:\n{textwrap.indent(attack, ' ' * 8)}\n"
                  "    except BaseException:\n        pass\n    return 1\n")
    assert verdict.error is not None and not verdict.passed
    assert verdict.error.startswith("verifier broke a sandbox rule: ") and rule in verdict.error, verdict.error


@needs_bwrap
def test_a_verifier_printing_the_marker_gains_nothing(private_tempdir: Path) -> None:
    """The rule's name is read from stderr only after the exit status said a rule was broken."""
    verdict = run(f"""
        import os
        def validate_task(env, final_answer=None):
            os.write(2, b"{VIOLATION_MARKER}made up")
            print("{VIOLATION_MARKER}made up")
            return 1
    """)
    assert verdict.error is None and verdict.passed


def test_the_violation_exit_is_no_status_bwrap_or_a_signal_gives() -> None:
    assert VIOLATION_EXIT not in (0, 1, 2) and VIOLATION_EXIT < 128
    assert os.WEXITSTATUS(VIOLATION_EXIT << 8) == VIOLATION_EXIT
