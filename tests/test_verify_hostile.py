"""Hostile verifiers, most of them run with the in-process audit hook left out, trying to escape.

What holds them then is the kernel sandbox set up before their code starts (bubblewrap:
namespaces, an unprivileged uid, seccomp that kills, rlimits, an empty environment, a read-only
filesystem, blocked native modules replaced by files the parent watches). Every test uses real
processes, real sockets on 127.0.0.1 and real files, and checks the host side: the server never
got a connection, no file appeared at the target, no secret reached the verdict.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import sysconfig
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgym.cli.main import app
from toolgym.envs import Environment, registry
from toolgym.envs.examples.toy import APP
from toolgym.schema import Task, ToolCall
from toolgym.schema.jsonl import dumps
from toolgym.verify import isolation, module_watch, sandbox, sandbox_rules
from toolgym.verify.fleet_api import FLEET_API_FILES
from toolgym.verify.sandbox import processes_holding, run_python_verifier

STRONG, PROBLEM = isolation.strong_isolation()
needs_bwrap = pytest.mark.skipif(STRONG is None, reason=f"no strong isolation on this machine: {PROBLEM}")


pytestmark = pytest.mark.usefixtures("private_tempdir")  # tests/conftest.py



def hostile(body: str) -> str:
    """A verifier that runs `body`; an OSError from the kernel becomes a crash naming it."""
    indented = textwrap.indent(textwrap.dedent(body).strip(), " " * 8)
    return (
        "def validate_task(env, final_answer=None):\n    try:\n"
        + indented
        + "\n    except OSError as exc:\n        raise RuntimeError(f'kernel refused: {exc}') from exc\n    return 1\n"
    )


def toy_env() -> Environment:
    env = Environment([APP])
    env.reset({"LOGGED_IN_USER": "ana", "CURRENT_DATE": "2026-06-15"})
    return env


def run(code: str, **limits: float):  # type: ignore[no-untyped-def]
    return run_python_verifier(code, toy_env(), "done", **limits)


KERNEL = ("kernel refused", "a forbidden system call", "loaded the blocked module")


def assert_kernel_refused(verdict) -> None:  # type: ignore[no-untyped-def]
    """The escape failed in the kernel (an error, a seccomp kill, a watched module file), not at the hook."""
    assert not verdict.passed
    assert verdict.error is not None and any(cause in verdict.error for cause in KERNEL), verdict
    assert "toolgym-sandbox-rule" not in verdict.error and "import of" not in verdict.error


@pytest.fixture
def with_hook() -> None:
    """Requested by the tests that keep the child's audit hook in."""


@pytest.fixture(autouse=True)
def no_hook(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's files with the audit hook left out, so each test sees what the kernel holds on its own
    (unless the test requests `with_hook`)."""
    if "with_hook" in request.fixturenames:
        return
    folder = tmp_path_factory.mktemp("child")  # not under tmp_path, which tests check is left empty
    for name in (sandbox.CHILD_SCRIPT.name, sandbox.RULES_FILE, *FLEET_API_FILES):
        shutil.copyfile(sandbox.CHILD_SCRIPT.with_name(name), folder / name)
    rules = folder / sandbox.RULES_FILE
    text = rules.read_text()
    assert "    sys.addaudithook(make_hook(workdir))\n" in text
    rules.write_text(text.replace("    sys.addaudithook(make_hook(workdir))\n", "    make_hook(workdir)\n"))
    monkeypatch.setattr(sandbox, "CHILD_SCRIPT", folder / sandbox.CHILD_SCRIPT.name)


@pytest.fixture(params=["seccomp", "namespaces only"])
def layers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Network escapes are tried with the seccomp filter and without it: each layer holds on its own."""
    if request.param == "namespaces only":
        monkeypatch.setattr(isolation, "seccomp_program", lambda machine=None: None)
    return str(request.param)


class Listener:
    """A real server on the host that records every connection or datagram it receives."""

    def __init__(self, family: int, kind: int, address: object) -> None:
        self.sock = socket.socket(family, kind)
        self.sock.bind(address)  # type: ignore[arg-type]
        if kind == socket.SOCK_STREAM:
            self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.received: list[object] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            with contextlib.suppress(OSError):
                if self.sock.type == socket.SOCK_STREAM:
                    self.received.append(self.sock.accept())
                else:
                    self.received.append(self.sock.recvfrom(4096))

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.sock.close()


@contextlib.contextmanager
def listening(family: int, kind: int, address: object) -> Iterator[Listener]:
    listener = Listener(family, kind, address)
    try:
        yield listener
    finally:
        listener.close()


# ---------------------------------------------------------------------------------------------
#  No network of any kind
# ---------------------------------------------------------------------------------------------


@needs_bwrap
def test_tcp_to_a_listening_host_port_never_connects(layers: str) -> None:
    with listening(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0)) as server:
        port = server.sock.getsockname()[1]
        verdict = run(hostile(f"""
            import socket
            socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"escaped")
        """))
    assert_kernel_refused(verdict)
    assert server.received == []


@needs_bwrap
def test_udp_to_a_host_port_never_arrives(layers: str) -> None:
    with listening(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0)) as server:
        port = server.sock.getsockname()[1]
        verdict = run(hostile(f"""
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for _ in range(5):
                s.sendto(b"escaped", ("127.0.0.1", {port}))
        """))
    if layers == "seccomp":
        assert_kernel_refused(verdict)
    # Without seccomp the datagram leaves happily — into the sandbox's own loopback, where nobody listens.
    assert server.received == []


@needs_bwrap
def test_a_host_unix_socket_cannot_be_reached(tmp_path: Path, layers: str) -> None:
    path = tmp_path / "host.sock"
    with listening(socket.AF_UNIX, socket.SOCK_STREAM, str(path)) as server:
        verdict = run(hostile(f"""
            import socket
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect({str(path)!r})
            s.sendall(b"escaped")
        """))
    assert_kernel_refused(verdict)
    assert server.received == []


@needs_bwrap
def test_an_abstract_unix_socket_cannot_be_reached(layers: str) -> None:
    name = "\0toolgym-hostile-" + uuid.uuid4().hex
    with listening(socket.AF_UNIX, socket.SOCK_STREAM, name) as server:
        verdict = run(hostile(f"""
            import socket
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect({name!r})
            s.sendall(b"escaped")
        """))
    assert_kernel_refused(verdict)
    assert server.received == []


# ---------------------------------------------------------------------------------------------
#  The filesystem: nothing of the host to write, and little to read
# ---------------------------------------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize(
    "attempt",
    [
        "open(TARGET, 'w').write('escaped')",
        "os.mkfifo(TARGET)",
        "os.symlink('/etc/passwd', TARGET)",
        "os.mkdir(TARGET)",
        "fd = os.open(os.path.dirname(TARGET), os.O_RDONLY)\nos.open('escape', os.O_WRONLY | os.O_CREAT, dir_fd=fd)",
    ],
)
def test_nothing_appears_on_the_host_filesystem(tmp_path: Path, attempt: str) -> None:
    target = tmp_path / "escape"
    verdict = run(hostile(f"import os\nTARGET = {str(target)!r}\n{attempt}"))
    assert_kernel_refused(verdict)
    assert not os.path.lexists(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sandboxes"]


@needs_bwrap
def test_its_inputs_and_the_system_are_read_only() -> None:
    site_packages = sysconfig.get_path("purelib", vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    targets = ("/sandbox/in/verifier.py", "/sandbox/in/toy.current.sqlite", "/usr/escape", "/escape", "/dev/shm/x",
               f"{sys.base_prefix}/escape", f"{site_packages}/escape.pth")
    for target in targets:
        verdict = run(hostile(f"open({target!r}, 'a').write('escaped')"))
        assert_kernel_refused(verdict)
        assert "Read-only file system" in verdict.error or "No such file" in verdict.error, target


@needs_bwrap
def test_visible_files_keep_their_owner_mode_and_times() -> None:
    """As root, the sandbox's uid is root outside: only read-only mounts keep it from host inodes."""
    python = isolation.interpreter()
    before = os.stat(python)
    for call in (f"os.chmod({python!r}, 0o777)", f"os.utime({python!r}, (0, 0))", "os.chmod('/usr/bin', 0o777)",
                 "os.chmod('/sandbox/in/verifier.py', 0o777)"):
        verdict = run(hostile(f"import os\n{call}"))
        assert_kernel_refused(verdict)
        assert "Read-only file system" in verdict.error, call
    after = os.stat(python)
    assert (after.st_mode, after.st_mtime_ns, after.st_uid) == (before.st_mode, before.st_mtime_ns, before.st_uid)


@needs_bwrap
def test_it_sees_no_home_no_workdir_and_no_host_tmp(tmp_path: Path) -> None:
    marker = tmp_path / "visible.txt"
    marker.write_text("host file")
    # The home folder shows only the path down to the Python install, when that lives there.
    home = [str(p) for p in Path.home().iterdir() if not sys.base_prefix.startswith(str(p))]
    places = [str(marker), os.getcwd(), *home, "/run", "/var/run", "/tmp", "/proc/1", "/proc/self", "/dev/null",
              "/sys", "/etc/passwd", "/etc/hosts"]
    verdict = run(textwrap.dedent(f"""
        import os
        def validate_task(env, final_answer=None):
            seen = [p for p in {places!r} if os.path.exists(p)]
            return {{"successes": 1, "errors": seen}} if seen else 1
    """))
    assert verdict.error is None and verdict.passed, verdict  # it ran, and saw none of them
    assert "bwrap" in verdict.checks[0].detail


@needs_bwrap
def test_scratch_space_is_a_small_private_tmpfs() -> None:
    verdict = run(hostile("""
        with open("big.bin", "wb") as handle:
            for _ in range(64):
                handle.write(b"x" * (1024 * 1024))
    """))
    assert not verdict.passed and verdict.error is not None
    assert "file size limit" in verdict.error or "No space left" in verdict.error or "kernel refused" in verdict.error


# ---------------------------------------------------------------------------------------------
#  Secrets: an empty environment, no /proc of the trainer, and scrubbed text
# ---------------------------------------------------------------------------------------------


@needs_bwrap
def test_the_parents_environment_cannot_be_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGYM_TEST_API_KEY", "sk-planted-secret-4f1c2e")
    monkeypatch.setenv("TOOLGYM_TEST_PLAIN", "plain-but-private-9d3a")  # not scrubbed by name: must not leak at all
    verdict = run(textwrap.dedent(f"""
        import os
        def validate_task(env, final_answer=None):
            found = [repr(dict(os.environ))]
            for pid in ({os.getpid()}, {os.getppid()}, 1, 2, "self"):
                for name in ("environ", "cmdline"):
                    try:
                        found.append(open(f"/proc/{{pid}}/{{name}}", "rb").read().decode(errors="replace"))
                    except OSError as exc:
                        found.append(f"{{pid}}/{{name}}: {{exc.strerror}}")
            return {{"successes": 0, "errors": found}}
    """))
    text = json.dumps(verdict.model_dump())
    assert verdict.error is None and not verdict.passed
    assert "sk-planted-secret" not in text and "plain-but-private" not in text
    assert "TOOLGYM_TEST" not in text
    assert "No such file or directory" in text  # there is no /proc to read


@needs_bwrap
def test_secret_values_are_scrubbed_from_verdict_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence in depth: even a value the verifier got some other way (here: its own code) is redacted."""
    monkeypatch.setenv("TOOLGYM_TEST_TOKEN", "tok-2b9e7d51")
    returned = run("def validate_task(env, final_answer=None):\n    return {'successes': 0, 'errors': ['tok-2b9e7d51']}\n")
    crashed = run("def validate_task(env, final_answer=None):\n    raise ValueError('tok-2b9e7d51')\n")
    printed = run("def validate_task(env, final_answer=None):\n    print('tok-2b9e7d51')\n    return 0\n")
    for verdict in (returned, crashed, printed):
        text = json.dumps(verdict.model_dump())
        assert "tok-2b9e7d51" not in text and "[redacted]" in text, text


def test_scrub_replaces_only_secret_looking_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_PASSWORD", "hunter2-long")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abc123")
    monkeypatch.setenv("HARMLESS_SETTING", "visible-value")
    text = "hunter2-long sk-abc123 visible-value"
    assert isolation.scrub(text) == "[redacted] [redacted] visible-value"
    assert isolation.scrub(None) is None


# ---------------------------------------------------------------------------------------------
#  No new processes, no native-code escape, no raised limits
# ---------------------------------------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize(
    "attempt",
    [
        "os.fork()",
        "status = os.system('touch MARKER')\nif status != 0:\n    raise OSError(f'os.system returned {status}')",
        "import subprocess\nsubprocess.run(['/bin/sh', '-c', 'touch MARKER'])",
        "os.posix_spawn('/bin/sh', ['sh', '-c', 'touch MARKER'], {})",
        "import threading\nthreading.Thread(target=lambda: None).start()",
        "os.unshare(os.CLONE_NEWUSER)" if hasattr(os, "unshare") else "os.fork()",
    ],
)
def test_no_process_can_be_started(tmp_path: Path, attempt: str) -> None:
    marker = tmp_path / "ran"
    code = hostile(f"import os\n{attempt.replace('MARKER', str(marker))}")
    verdict = run(code)
    assert_kernel_refused(verdict)
    assert "kernel refused" not in verdict.error  # killed, or its module was missing: never an error to catch
    assert not marker.exists()


@needs_bwrap
def test_exec_only_replaces_the_verifier_and_is_an_error(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    verdict = run(hostile(f"import os\nos.execv('/bin/sh', ['sh', '-c', 'touch {marker}; echo 1'])"))
    assert verdict.error is not None and not verdict.passed
    assert not marker.exists()


@needs_bwrap
def test_ctypes_gets_no_further_than_python(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    verdict = run(hostile(f"""
        import ctypes, ctypes.util
        libc = ctypes.CDLL(None, use_errno=True)
        results = {{
            "fork": libc.fork(),
            "socket": libc.socket(2, 1, 0),
            "unshare": libc.unshare(0x10000000),
            "setuid0": libc.setuid(0),
            "system": libc.system({f"touch {marker}".encode()!r}),
        }}
        if any(value >= 0 and name != "system" for name, value in results.items()) or results["system"] == 0:
            return {{"successes": 1, "errors": [repr(results)]}}
        raise OSError(f"every call failed: {{results}}")
    """))
    assert_kernel_refused(verdict)
    assert not marker.exists()


@needs_bwrap
@pytest.mark.parametrize(
    "attempt",
    [
        "os.memfd_create('hoard')",
        "import ctypes\nif ctypes.CDLL(None).shmget(0, 1 << 30, 0o1600) < 0:\n    raise OSError('shmget failed')",
        "import ctypes\nif ctypes.CDLL(None).msgget(0, 0o1600) < 0:\n    raise OSError('msgget failed')",
    ],
)
def test_memory_that_rlimit_as_does_not_count_is_refused(attempt: str) -> None:
    assert_kernel_refused(run(hostile(f"import os\n{attempt}")))


@needs_bwrap
def test_limits_cannot_be_raised_and_memory_is_capped() -> None:
    verdict = run(hostile("""
        import resource
        try:
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            return {"successes": 1, "errors": ["raised RLIMIT_AS"]}
        except ValueError:
            pass
        blob = bytearray(1024 * 1024 * 1024)
    """), memory_mb=256)
    assert verdict.error is not None and "memory limit of 256 MB" in verdict.error, verdict


@needs_bwrap
def test_it_runs_unprivileged_with_no_capabilities() -> None:
    verdict = run(textwrap.dedent("""
        import os
        def validate_task(env, final_answer=None):
            ids = (os.getuid(), os.geteuid(), os.getgid(), os.getpid())
            return 1 if ids[:3] == (65534, 65534, 65534) and ids[3] <= 3 else {"successes": 0, "errors": [repr(ids)]}
    """))
    assert verdict.error is None and verdict.passed, verdict


# ---------------------------------------------------------------------------------------------
#  Forgery: the result is read outside, strictly; forging it gains nothing and breaks nothing
# ---------------------------------------------------------------------------------------------

FIND_RESULT_FD = """
import os
def _write_result(text):
    written = []
    for fd in range(3, 64):
        try:
            os.write(fd, text.encode())
            written.append(fd)
        except OSError:
            pass
    return written
"""


def forger(body: str) -> str:
    return FIND_RESULT_FD + "\ndef validate_task(env, final_answer=None):\n" + textwrap.indent(
        textwrap.dedent(body).strip(), "    "
    ) + "\n"


OK_1 = json.dumps({"status": "ok", "value": {"type": "int", "value": 1}}) + "\n"


@needs_bwrap
@pytest.mark.parametrize(
    ("body", "cause"),
    [
        (f"_write_result({OK_1!r})\nos._exit(3)", "exited with code 3"),
        (f"import signal\n_write_result({OK_1!r})\nos.kill(os.getpid(), signal.SIGKILL)", "killed"),
        (f"import signal\n_write_result({OK_1!r})\nos.kill(os.getpid(), signal.SIGSEGV)", "SIGSEGV"),
        (f"_write_result({OK_1!r})\nraise SystemExit(1)", "malformed result"),
        (f"_write_result({OK_1!r})\nreturn 1", "malformed result"),
        (f"_write_result({OK_1!r} * 2)\nos._exit(0)", "malformed result"),
        ("_write_result('not json')\nos._exit(0)", "malformed result"),
        ("_write_result('x' * (2 * 1024 * 1024))\nos._exit(0)", "oversized result"),
        ("os._exit(0)", "without a result"),
        ("_write_result('[1]')\nos._exit(0)", "not an object"),
        ("_write_result('{\"status\": \"ok\", \"value\": {\"type\": \"int\", \"value\": 7}}')\nos._exit(0)", "must be 0 or 1"),
        ("_write_result('{\"status\": \"ok\", \"value\": {\"type\": \"float\", \"value\": \"1.0\"}}')\nos._exit(0)", "a score must be"),
        ("_write_result('{\"status\": \"ok\", \"value\": {\"type\": \"int\", \"value\": true}}')\nos._exit(0)", "malformed"),
        ("_write_result('{\"status\": \"ok\", \"value\": {\"type\": \"dict\", \"value\": [1]}}')\nos._exit(0)", "malformed"),
        ("_write_result('{\"status\": \"ok\"}')\nos._exit(0)", "malformed"),
        ("_write_result('{\"status\": \"fine\", \"value\": 1}')\nos._exit(0)", "malformed"),
        ("_write_result('{\"status\": \"ok\", \"value\": {\"type\": \"int\", \"value\": 1}, \"violations\": 5}')\nos._exit(0)", "malformed"),
        ("_write_result('[' * 100000)\nos._exit(0)", "malformed result"),
        (f"_write_result({OK_1!r})\nimport time\ntime.sleep(60)", "timed out"),
    ],
)
def test_a_forged_or_broken_result_is_an_error(body: str, cause: str) -> None:
    verdict = run(forger(body), timeout_s=2.0)
    assert verdict.error is not None and cause in verdict.error, (cause, verdict)
    assert not verdict.passed


def escape_then_forge(target: Path) -> str:
    """Tries writes outside, swallows the refusals, then patches json.dumps to report a pass and crashes."""
    return textwrap.dedent(f"""
        import json, os
        def validate_task(env, final_answer=None):
            for attempt in (lambda: open({str(target)!r}, "w"), lambda: os.mkdir({str(target)!r})):
                try:
                    attempt()
                except OSError:
                    pass
            json.dumps = lambda *args, **kwargs: {OK_1.strip()!r}
            raise RuntimeError("crashed, then lied about it")
    """)


@needs_bwrap
def test_without_the_hook_forging_a_pass_gains_only_what_returning_one_gives(tmp_path: Path) -> None:
    """With the hook left out, the kernel alone refused the escapes: the forged verdict is what `return 1`
    gives, and nothing reached the host, which is what makes any valid 1 harmless."""
    target = tmp_path / "escape"
    patched = run(escape_then_forge(target))
    honest = run("def validate_task(env, final_answer=None):\n    return 1\n")
    assert (patched.reward, patched.partial_score, patched.error) == (honest.reward, honest.partial_score, None)
    assert not os.path.lexists(target)


@needs_bwrap
def test_with_the_hook_a_forged_pass_after_an_escape_is_an_error(tmp_path: Path, with_hook: None) -> None:
    target = tmp_path / "escape"
    verdict = run(escape_then_forge(target))
    assert verdict.error is not None and not verdict.passed
    assert f"open({str(target)!r}) for writing outside the work directory" in verdict.error
    assert not os.path.lexists(target)


# ---------------------------------------------------------------------------------------------
#  Timeouts: the whole sandbox dies with it
# ---------------------------------------------------------------------------------------------


@needs_bwrap
def test_sleeping_forever_is_a_timeout_and_nothing_survives(private_tempdir: Path) -> None:
    verdict = run(hostile("""
        import signal, time
        for sig in (signal.SIGTERM, signal.SIGXCPU, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            time.sleep(0.05)
    """), timeout_s=1.0)
    assert verdict.error == "verifier timed out after 1s (its process group was killed)"
    assert processes_holding(private_tempdir) == []
    assert list(private_tempdir.iterdir()) == []


# ---------------------------------------------------------------------------------------------
#  Without strong isolation: refused, unless the risk is accepted
# ---------------------------------------------------------------------------------------------

PLAIN = "def validate_task(env, final_answer=None):\n    return 1\n"


@pytest.fixture(params=["missing", "broken"])
def no_bwrap(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """bwrap not installed, or installed but unable to create its namespaces."""
    if request.param == "missing":
        binary = str(tmp_path / "no-such-dir" / "bwrap")
    else:
        fake = tmp_path / "bwrap"
        fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
        binary = str(fake)
    monkeypatch.setattr(isolation, "bwrap_binary", lambda: binary)
    return str(request.param)


def test_without_bwrap_verifiers_are_refused_naming_the_option(no_bwrap: str) -> None:
    verdict = run(PLAIN)
    assert verdict.error is not None and not verdict.passed
    assert "--trust-verifiers" in verdict.error and isolation.TRUST_ENV in verdict.error
    expected = "not installed" if no_bwrap == "missing" else "No permissions to create new namespace"
    assert expected in verdict.error
    with pytest.raises(isolation.IsolationUnavailable, match="--trust-verifiers"):
        isolation.require_isolation()


def test_without_bwrap_trust_runs_weakly_and_says_so(no_bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(isolation.TRUST_ENV, "1")
    verdict = run(PLAIN)
    assert verdict.error is None and verdict.passed
    assert "isolation: weak" in verdict.checks[0].detail
    assert isolation.require_isolation() == isolation.WEAK


def test_require_isolation_with_trust_sets_the_env_for_workers(no_bwrap: str) -> None:
    assert isolation.require_isolation(trust=True) == isolation.WEAK
    assert os.environ[isolation.TRUST_ENV] == "1"
    os.environ.pop(isolation.TRUST_ENV)


def test_the_seccomp_filter_is_well_formed() -> None:
    for machine in ("x86_64", "aarch64"):
        program = isolation.seccomp_program(machine)
        assert program is not None and len(program) % 8 == 0 and len(program) // 8 < 255
    assert isolation.seccomp_program("sparc") is None


# ---------------------------------------------------------------------------------------------
#  End to end through the CLI: a hostile task is dropped, not kept
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.APP_MODULES, "toy", "toolgym.envs.examples.toy")
    monkeypatch.setitem(registry._loaded, "toy", APP)


def toy_task(task_id: str, verifier: str) -> Task:
    return Task(
        id=task_id, env="toy", env_version="1.0.0", prompt=f"Add a note 'buy milk' ({task_id})",
        env_variables={"CURRENT_DATE": "2026-06-15", "LOGGED_IN_USER": "ana"},
        reference_solution=[ToolCall(name="add_note", arguments={"title": "buy milk", "due": "tomorrow"})],
        expected_answer="Added.", verifier_code=verifier,
    )


@needs_bwrap
def test_tasks_validate_drops_a_hostile_verifier(tmp_path: Path, toy_registered: None, with_hook: None) -> None:
    target = tmp_path / "escape"
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        dumps(toy_task("toy/hostile", hostile(f"open({str(target)!r}, 'w').write('x')"))) + "\n"
        + dumps(toy_task("toy/honest", PLAIN)) + "\n"
    )
    out = tmp_path / "validated"
    result = CliRunner().invoke(app, ["tasks", "validate", str(path), "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    kept = [json.loads(line)["id"] for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert kept == ["toy/honest"]
    report = {row["id"]: row for row in map(json.loads, (out / "report.jsonl").read_text().splitlines())}
    assert report["toy/hostile"]["reason"] == "verifier_error"
    assert "outside the work directory" in report["toy/hostile"]["detail"]
    assert not target.exists()


def test_tasks_validate_refuses_without_bwrap_and_runs_with_trust(
    tmp_path: Path, toy_registered: None, no_bwrap: str
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(dumps(toy_task("toy/honest", PLAIN)) + "\n")
    runner = CliRunner()
    refused = runner.invoke(app, ["tasks", "validate", str(path), "--out", str(tmp_path / "a"), "--workers", "1"])
    assert refused.exit_code == 2, refused.output
    assert "--trust-verifiers" in refused.output.replace("\n", "")
    assert not (tmp_path / "a" / "tasks.jsonl").exists()
    trusted = runner.invoke(
        app, ["tasks", "validate", str(path), "--out", str(tmp_path / "b"), "--workers", "1", "--trust-verifiers"]
    )
    os.environ.pop(isolation.TRUST_ENV, None)
    assert trusted.exit_code == 0, trusted.output
    assert "toy/honest" in (tmp_path / "b" / "tasks.jsonl").read_text()


def test_bwrap_is_available_where_ci_installs_it() -> None:
    """On CI (.ci/run installs bubblewrap) the hostile suite above must not be skipped silently."""
    if os.environ.get("CI") and STRONG is None:
        pytest.fail(f"strong isolation unavailable on CI: {PROBLEM}")
    if STRONG is not None:
        probe = subprocess.run([STRONG.binary, "--version"], capture_output=True, text=True, check=False)
        assert probe.returncode == 0


@needs_bwrap
def test_rollout_with_the_oracle_scores_no_hostile_pass(tmp_path: Path, toy_registered: None, with_hook: None) -> None:
    """The oracle solves the task; the verifier then tries to escape: an error row, no reward."""
    target = tmp_path / "escape"
    dataset = tmp_path / "data"
    dataset.mkdir()
    (dataset / "tasks.jsonl").write_text(
        dumps(toy_task("toy/hostile", hostile(f"import os\nos.mkfifo({str(target)!r})"))) + "\n"
        + dumps(toy_task("toy/honest", PLAIN)) + "\n"
    )
    result = CliRunner().invoke(
        app, ["rollout", "--tasks", str(dataset), "--policy", "oracle", "--out", str(tmp_path / "run"), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    rows = {row["task_id"]: row for row in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    assert (rows["toy/honest"]["status"], rows["toy/honest"]["reward"]) == ("ok", 1.0)
    hostile_row = rows["toy/hostile"]
    assert hostile_row["status"] == "error" and hostile_row["reward"] is None
    assert "a forbidden system call" in hostile_row["error"]  # mknod: a call only the kernel sees
    assert not os.path.lexists(target)


@pytest.mark.parametrize("command", ["rollout", "eval"])
def test_rollout_and_eval_refuse_without_bwrap(tmp_path: Path, toy_registered: None, no_bwrap: str, command: str) -> None:
    dataset = tmp_path / "data"
    dataset.mkdir()
    (dataset / "tasks.jsonl").write_text(dumps(toy_task("toy/honest", PLAIN)) + "\n")
    result = CliRunner().invoke(
        app, [command, "--tasks", str(dataset), "--policy", "oracle", "--out", str(tmp_path / "run"), "--no-progress"]
    )
    assert result.exit_code == 2, result.output
    assert "--trust-verifiers" in result.output.replace("\n", "")
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").rglob("results.jsonl"))


# ---------------------------------------------------------------------------------------------
#  Blocked native modules: their files are stand-ins the parent watches
# ---------------------------------------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize("module", ["_socket", "socket", "_ctypes", "subprocess", "multiprocessing"])
def test_a_blocked_module_loaded_past_the_hook_is_seen_by_the_kernel(module: str) -> None:
    """With no hook to name it, the import fails on the stand-in file, and opening that file was reported."""
    verdict = run(f"def validate_task(env, final_answer=None):\n    try:\n        import {module}\n"
                  "    except ImportError:\n        pass\n    return 1\n")
    assert verdict.error is not None and not verdict.passed
    assert verdict.error.startswith("verifier broke a sandbox rule: it loaded the blocked module _"), verdict.error


def test_the_watch_reports_each_opened_stand_in_and_nothing_else(tmp_path: Path) -> None:
    if not module_watch.blocked_extensions():
        pytest.skip("this interpreter builds its blocked modules in")
    with module_watch.ModuleWatch(tmp_path / "stubs") as watch:
        assert watch.opened() == []
        targets = dict(zip(watch.stubs.values(), watch.stubs.keys(), strict=True))
        first, *_ = sorted(watch.stubs.values())
        first.read_bytes()
        first.read_bytes()
        assert watch.opened() == [first.name]
        assert watch.opened() == []  # each open is reported once
        binds = watch.bind_args()
        assert binds[binds.index(str(first)) + 1] == targets[first]
    assert watch.fd == -1


def test_the_blocked_extensions_are_this_interpreters_own() -> None:
    for name, path in module_watch.blocked_extensions().items():
        assert name in sandbox_rules.BLOCKED_IMPORTS and os.path.isfile(path)
        assert os.path.basename(path).startswith(name + ".") and "lib-dynload" in path
