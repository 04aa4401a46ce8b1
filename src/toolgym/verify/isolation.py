"""OS-level isolation for task-supplied verifier code: a bubblewrap sandbox, or an explicit opt-in to go without.

A guard inside the process it guards can be removed by the code it guards, so the boundary is
set up by the kernel before that code starts: `bwrap` gives the verifier's process its own user,
PID, network, IPC, UTS and cgroup namespaces (no network of any kind, no view of the trainer's
processes), a non-root uid with no capabilities and `no_new_privs`, an empty environment, a
filesystem holding only the Python install and its inputs (read-only) and a small tmpfs to
write, and a seccomp filter that kills the process on any call that would start a process or
namespace, mount, open a socket, touch keyrings or other kernel attack surface: a kill, not an
error code, so the verifier cannot catch it and carry on. Where that cannot be had, verifiers do not run unless the user
accepts the risk (`--trust-verifiers` or TOOLGYM_TRUST_VERIFIERS=1); nothing falls back silently.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

TRUST_ENV = "TOOLGYM_TRUST_VERIFIERS"
TRUST_OPTION = "--trust-verifiers"
TRUST_HELP = (
    "Run task-supplied Python verifiers even where no bubblewrap sandbox can be set up, with weak in-process "
    f"isolation that verifier code can switch off (also: {TRUST_ENV}=1)."
)
STRONG = "bwrap"
WEAK = "weak (in-process audit hook; verifiers trusted)"

SANDBOX_INPUT = "/sandbox/in"  # the child script, the Fleet API and the verifier's inputs, read-only
SANDBOX_WORK = "/sandbox/work"  # a tmpfs: the only place it may write
SANDBOX_UID = 65534  # nobody: never root inside, even when toolgym runs as root
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
_PROBE_TIMEOUT_S = 20.0


class IsolationUnavailable(RuntimeError):
    """Strong isolation cannot be set up here and running untrusted verifier code was not accepted."""


def verifiers_trusted() -> bool:
    """Whether the user accepted running verifier code without strong isolation (the env var carries to workers)."""
    return os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def trust_verifiers() -> None:
    """Accept the risk for this process and every process it starts (rollout workers, replay pools)."""
    os.environ[TRUST_ENV] = "1"


def bwrap_binary() -> str | None:
    """Where bubblewrap is installed, or None; tests point this elsewhere to simulate a machine without it."""
    return shutil.which("bwrap")


def interpreter() -> str:
    """The real interpreter binary: the child runs `-I -S`, so a virtualenv's site-packages are never needed."""
    return os.path.realpath(sys.executable)


# ---------------------------------------------------------------------------------------------
#  Seccomp: a deny list compiled to classic BPF by hand (no libseccomp binding needed); a listed call kills
# ---------------------------------------------------------------------------------------------

# Process creation, namespaces and mounts, kernel attack surface, sockets, memory that RLIMIT_AS
# does not count (SysV shared memory and message queues outlive their mapping; memfd), and device
# and FIFO nodes (mknod raises no audit event, so only the kernel can make it a broken rule).
# execve stays allowed (bwrap needs it to start Python); with no fork it can only replace the
# verifier itself, inside the same namespaces and limits, and the result channel closes on exec.
_DENIED_X86_64 = {
    "shmget": 29, "socket": 41, "msgget": 68, "clone": 56, "fork": 57, "vfork": 58, "ptrace": 101, "syslog": 103, "uselib": 134,
    "mknod": 133, "personality": 135, "pivot_root": 155, "chroot": 161, "acct": 163, "mount": 165, "umount2": 166,
    "swapon": 167, "reboot": 169, "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176,
    "quotactl": 179, "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272,
    "mknodat": 259, "perf_event_open": 298, "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308,
    "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "finit_module": 313,
    "memfd_create": 319, "kexec_file_load": 320, "bpf": 321, "execveat": 322, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_open": 434,
    "clone3": 435, "pidfd_getfd": 438, "mount_setattr": 442,
}
_DENIED_AARCH64 = {  # the asm-generic table
    "umount2": 39, "mount": 40, "pivot_root": 41, "chroot": 51, "quotactl": 60, "acct": 89,
    "personality": 92, "unshare": 97, "kexec_load": 104, "init_module": 105, "delete_module": 106,
    "syslog": 116, "ptrace": 117, "reboot": 142, "msgget": 186, "shmget": 194, "socket": 198, "add_key": 217, "request_key": 218,
    "keyctl": 219, "clone": 220, "swapon": 224, "perf_event_open": 241, "name_to_handle_at": 264,
    "open_by_handle_at": 265, "setns": 268, "process_vm_readv": 270, "process_vm_writev": 271,
    "kcmp": 272, "finit_module": 273, "memfd_create": 279, "bpf": 280, "execveat": 281, "userfaultfd": 282,
    "kexec_file_load": 294, "mknodat": 33, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "pidfd_open": 434, "clone3": 435, "pidfd_getfd": 438, "mount_setattr": 442,
}
_AUDIT_ARCH = {"x86_64": (0xC000003E, _DENIED_X86_64), "aarch64": (0xC00000B7, _DENIED_AARCH64)}
_X32_SYSCALL_BIT = 0x40000000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x06
_RET_KILL_PROCESS, _RET_ALLOW = 0x80000000, 0x7FFF0000


def _machine() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def seccomp_program(machine: str | None = None) -> bytes | None:
    """The filter for this CPU (the whole process killed by SIGSYS on a denied call or a foreign ABI), or None
    where its table is unknown."""
    arch = _AUDIT_ARCH.get(machine or _machine())
    if arch is None:
        return None
    audit_arch, denied = arch
    numbers = sorted(set(denied.values()))

    def op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    program = [
        op(_BPF_LD_W_ABS, 4),  # seccomp_data.arch
        op(_BPF_JEQ_K, audit_arch, jt=1),
        op(_BPF_RET_K, _RET_KILL_PROCESS),
        op(_BPF_LD_W_ABS, 0),  # seccomp_data.nr
    ]
    # The tail is [allow, kill]: the x32 check and each listed number jump to kill.
    count = len(numbers) + (1 if audit_arch == 0xC000003E else 0)
    if audit_arch == 0xC000003E:
        program.append(op(_BPF_JGE_K, _X32_SYSCALL_BIT, jt=count))
    for index, number in enumerate(numbers):
        remaining = len(numbers) - index - 1
        program.append(op(_BPF_JEQ_K, number, jt=remaining + 1))
    program += [op(_BPF_RET_K, _RET_ALLOW), op(_BPF_RET_K, _RET_KILL_PROCESS)]
    return b"".join(program)


# ---------------------------------------------------------------------------------------------
#  The bwrap command line
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bwrap:
    """A working bubblewrap and the options this version understands."""

    binary: str
    disable_userns: bool
    tmpfs_size: bool


def _under(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _system_mounts() -> list[str]:
    """/usr read-only, the top-level /bin, /lib* either as the same symlinks (merged /usr) or read-only."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    for name in ("/etc/ld.so.cache", "/etc/localtime"):
        args += ["--ro-bind-try", name, name]
    return args


def _python_mounts() -> list[str]:
    """The interpreter's install read-only, its site-packages hidden (the child imports the standard library only)."""
    binary = interpreter()
    roots: list[str] = []
    for path in (sys.base_prefix, sys.base_exec_prefix, os.path.dirname(binary)):
        real = os.path.realpath(path)
        if os.path.isdir(real) and not _under(real, ["/usr", *roots]):
            roots = [r for r in roots if not _under(r, [real])] + [real]
    args: list[str] = []
    for root in roots:
        args += ["--ro-bind", root, root]
    hidden = set()
    for key in ("purelib", "platlib"):
        path = os.path.realpath(sysconfig.get_path(key, vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix}))
        if path not in hidden and os.path.isdir(path) and _under(path, [*roots, "/usr"]):
            hidden.add(path)
            args += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    return args


def bwrap_command(
    bwrap: Bwrap, input_dir: Path, child_name: str, work_mb: int, seccomp_fd: int | None, binds: Sequence[str] = ()
) -> list[str]:
    """The full command: namespaces, a non-root user, a minimal read-only filesystem, then the child.

    `binds` are further bwrap options laid over the Python install (the blocked modules' stand-ins).

    Run as root, bwrap maps the sandbox's uid onto real uid 0: outside its namespaces the process
    still owns root's files and RLIMIT_NPROC does not bind it. So nothing writable of the host is
    mounted (no /dev, no /proc: every bind is read-only), and the seccomp filter, not the rlimit,
    is what stops new processes. Every bind also costs bwrap a mount-table walk, so the child
    script travels inside `input_dir` rather than as binds of its own.
    """
    args = [
        bwrap.binary,
        "--unshare-all", "--unshare-user",  # user, pid, net, ipc, uts, cgroup
        *(["--disable-userns"] if bwrap.disable_userns else []),
        "--die-with-parent", "--new-session",
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--cap-drop", "ALL",
        "--hostname", "sandbox",
        "--clearenv",
        "--setenv", "PATH", "/usr/bin:/bin",
        "--setenv", "HOME", SANDBOX_WORK, "--setenv", "TMPDIR", SANDBOX_WORK,
        "--setenv", "LANG", "C.UTF-8", "--setenv", "LC_ALL", "C.UTF-8",
        *_system_mounts(),
        *_python_mounts(),
        *binds,
        "--ro-bind", str(input_dir), SANDBOX_INPUT,
        *(["--size", str(work_mb * 1024 * 1024)] if bwrap.tmpfs_size else []),
        "--tmpfs", SANDBOX_WORK,
        "--remount-ro", "/",  # its tmpfs is the only writable place
        "--chdir", SANDBOX_WORK,
        *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
        "--", interpreter(), "-I", "-S", f"{SANDBOX_INPUT}/{child_name}", SANDBOX_INPUT, SANDBOX_WORK,
    ]
    return args


def seccomp_fd() -> int | None:
    """A pipe's read end holding the filter, for `--seccomp FD` (the caller closes it once bwrap started), or None."""
    program = seccomp_program()
    if program is None:
        return None
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)  # a few hundred bytes: well within a pipe's buffer
    finally:
        os.close(write_end)
    return read_end


def bwrap_env() -> dict[str, str]:
    """bwrap's own environment: nothing from ours, so even its /proc/<pid>/environ holds no secret."""
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


# ---------------------------------------------------------------------------------------------
#  Is strong isolation available here?
# ---------------------------------------------------------------------------------------------

_PROBE_OK = "toolgym-sandbox-ok"
_PROBE_CODE = (
    "import os, sys\n"
    "assert os.getuid() != 0 and os.geteuid() != 0, 'root inside'\n"
    "assert os.getpid() <= 3, 'no PID namespace'\n"
    "assert not os.path.exists('/proc/1') and not os.path.exists('/dev/null'), 'host /proc or /dev visible'\n"
    "assert not os.environ.get('" + TRUST_ENV + "'), 'environment leaked'\n"
    "sys.stdout.write('" + _PROBE_OK + "')\n"
    "sys.stdout.flush()\n"
    "try:\n"  # the seccomp filter must kill the process right here
    "    pid = os.fork()\n"
    "except OSError as exc:\n"
    "    sys.exit(f'fork failed without a kill: {exc}')\n"
    "if pid == 0:\n"
    "    os._exit(0)\n"
    "sys.exit('a new process could be started')\n"
)
_SIGSYS_EXIT = 128 + signal.SIGSYS  # bwrap's exit status for a child killed by SIGSYS


_probed: dict[tuple[str, str], tuple[Bwrap | None, str]] = {}


def _probe(binary: str, executable: str) -> tuple[Bwrap | None, str]:
    """Start one real sandbox with the full option set, once per binary and interpreter (a timeout is tried again)."""
    key = (binary, executable)
    if key not in _probed:
        try:
            _probed[key] = _probe_once(binary, executable)
        except subprocess.TimeoutExpired:
            return None, f"bwrap did not start within {_PROBE_TIMEOUT_S:g}s"
    return _probed[key]


def _probe_once(binary: str, executable: str) -> tuple[Bwrap | None, str]:
    try:
        usage = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{binary} cannot run: {exc}"
    bwrap = Bwrap(binary, "--disable-userns" in usage.stdout, "--size" in usage.stdout)
    if seccomp_program() is None:
        return None, f"no seccomp filter is known for this CPU ({_machine()}), and without one nothing stops new processes"
    fd = seccomp_fd()
    command = bwrap_command(bwrap, Path(__file__).parent, Path(__file__).name, 1, fd)
    command = [*command[: command.index("--") + 1], executable, "-I", "-S", "-c", _PROBE_CODE]
    try:
        probe = subprocess.run(
            command, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False, env=bwrap_env(),
            stdin=subprocess.DEVNULL, pass_fds=() if fd is None else (fd,),
        )
    except subprocess.TimeoutExpired:
        raise
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"bwrap could not start: {exc}"
    finally:
        if fd is not None:
            os.close(fd)
    if probe.returncode != _SIGSYS_EXIT or probe.stdout != _PROBE_OK:
        detail = (probe.stderr or probe.stdout).strip().splitlines()
        return None, f"bwrap cannot create its sandbox here: {detail[-1] if detail else f'exit code {probe.returncode}'}"
    return bwrap, ""


def strong_isolation() -> tuple[Bwrap | None, str]:
    """A working bwrap, or None and why not."""
    binary = bwrap_binary()
    if binary is None or not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        return None, "bubblewrap (bwrap) is not installed"
    return _probe(binary, interpreter())


def refusal(problem: str) -> str:
    """The error a user sees when verifier code is refused: what is missing and the option that accepts the risk."""
    return (
        f"refusing to run task-supplied verifier code: strong isolation is unavailable ({problem}). "
        f"Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) on a kernel that allows user namespaces, "
        f"or accept the risk with {TRUST_OPTION} (or {TRUST_ENV}=1), which runs verifiers with weak in-process isolation "
        f"that verifier code can switch off"
    )


def select_isolation() -> tuple[str, Bwrap | None]:
    """STRONG with its bwrap, or WEAK when trusted; raises IsolationUnavailable otherwise."""
    bwrap, problem = strong_isolation()
    if bwrap is not None:
        return STRONG, bwrap
    if verifiers_trusted():
        return WEAK, None
    raise IsolationUnavailable(refusal(problem))


def require_isolation(trust: bool = False) -> str:
    """For commands about to run verifiers: accept `trust` (their --trust-verifiers), then fail early if refused."""
    if trust:
        trust_verifiers()
    return select_isolation()[0]


def verifier_refusal(needs_sandbox: bool, trust: bool = False) -> str | None:
    """The error a command prints and stops on before running verifier code, or None to go ahead.

    Commands call this once up front, so a refused machine fails at once instead of turning
    every task into a verifier error.
    """
    if trust:
        trust_verifiers()
    if not needs_sandbox:
        return None
    try:
        select_isolation()
    except IsolationUnavailable as exc:
        return str(exc)
    return None


def tasks_have_verifiers(tasks: Iterable[object]) -> bool:
    """Whether any task carries Python verifier code (checks alone never need the sandbox)."""
    return any(getattr(task, "verifier_code", None) for task in tasks)


def dataset_has_verifiers(path: Path) -> bool:
    """The same for a tasks.jsonl, read row by row without building tasks (bad rows are the caller's to report)."""
    with open(path, "rb") as handle:
        for line in handle:
            if b"verifier_code" not in line:
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):  # an unreadable row is dropped by validation, by line
                continue
            if isinstance(row, dict) and row.get("verifier_code"):
                return True
    return False


# ---------------------------------------------------------------------------------------------
#  Secrets never reach verdict text
# ---------------------------------------------------------------------------------------------


def secret_values() -> list[str]:
    """Values of this process's environment variables whose names look secret, longest first."""
    values = {
        value for name, value in os.environ.items()
        if any(marker in name.upper() for marker in _SECRET_MARKERS) and len(value.strip()) >= 4
    }
    return sorted(values, key=len, reverse=True)


def scrub(text: str | None) -> str | None:
    """`text` with every secret-looking environment value replaced: defence in depth behind the empty environment."""
    if not text:
        return text
    for value in secret_values():
        text = text.replace(value, "[redacted]")
    return text
