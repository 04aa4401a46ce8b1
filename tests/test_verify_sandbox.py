"""Fleet-form Python verifiers in the sandbox: real subprocesses, real SQLite files, real sockets.

Every broken verifier must come back as `Verdict.failure(...)` with its cause, never as reward 0.
"""

from __future__ import annotations

import contextlib
import socket
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from toolgym.envs import Environment
from toolgym.envs.examples.toy import APP, ToyApp
from toolgym.verify import isolation
from toolgym.verify.sandbox import run_python_verifier, verdict_from_return


class OtherToy(ToyApp):
    name = "toy_two"
    tools = []


def done_env() -> Environment:
    """ana added 'buy milk' for tomorrow and completed note 1."""
    env = Environment([APP])
    env.reset({"LOGGED_IN_USER": "ana", "CURRENT_DATE": "2026-06-15"})
    env.call_tool("add_note", {"title": "buy milk", "due": "tomorrow"})
    env.call_tool("complete_note", {"note_id": 1})
    return env


def run(code: str, env: Environment | None = None, answer: str | None = "Added buy milk.", **limits: float):  # type: ignore[no-untyped-def]
    return run_python_verifier(textwrap.dedent(code), env or done_env(), answer, **limits)


@pytest.fixture(autouse=True)
def private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Sandbox directories go under this test's tmp_path, so leftovers can be seen."""
    sandbox_root = tmp_path / "sandboxes"
    sandbox_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(sandbox_root))
    # Where no bubblewrap sandbox can be made, these rules are still checked, in the weak mode;
    # what only the kernel sandbox holds is tested in test_verify_hostile.py.
    if isolation.strong_isolation()[0] is None:
        monkeypatch.setenv(isolation.TRUST_ENV, "1")
    else:
        monkeypatch.delenv(isolation.TRUST_ENV, raising=False)
    return sandbox_root


# ---------------------------------------------------------------------------------------------
#  Correct verifiers read both databases
# ---------------------------------------------------------------------------------------------

FLEET_VERIFIER = """
from fleet.verifiers.db import IgnoreConfig

@verifier(key="add_buy_milk")
def validate_task(env, final_answer=None):
    seed, current = env.db("seed"), env.db("current")
    row = current.table("notes").eq("owner", "ana").eq("title", "buy milk").first()
    if row is None or row["due"] != "2026-06-16":
        return TASK_FAILED_SCORE
    if seed.table("notes").count() != 6 or current.query("SELECT COUNT(*) FROM notes").rows[0][0] != 7:
        return TASK_FAILED_SCORE
    seed.diff(current, IgnoreConfig()).expect_exactly([
        {"type": "insert", "table": "notes", "pk": row["id"],
         "fields": [("id", ...), ("owner", "ana"), ("title", "buy milk"), ("due", "2026-06-16"), ("done", 0)]},
        {"type": "modify", "table": "notes", "pk": 1, "resulting_fields": [("done", 1)], "no_other_changes": True},
    ])
    if not normalized_contains("buy milk", final_answer):
        return TASK_FAILED_SCORE
    return TASK_SUCCESSFUL_SCORE
"""


def test_a_fleet_verifier_reads_seed_and_current_and_passes(private_tempdir: Path) -> None:
    verdict = run(FLEET_VERIFIER)
    assert verdict.error is None, verdict.error
    assert (verdict.reward, verdict.partial_score) == (1.0, 1.0)
    assert verdict.checks[0].kind == "python_verifier" and verdict.checks[0].passed
    assert list(private_tempdir.iterdir()) == []  # the sandbox directory is gone


def test_a_fleet_verifier_with_another_name_and_fleet_imports_runs() -> None:
    verdict = run("""
        import fleet
        from fleet.verifiers import verifier, TASK_SUCCESSFUL_SCORE, TASK_FAILED_SCORE
        from fleet.verifiers.local_executor import contains_number

        def _helper(x):
            return x

        @verifier
        def check_milk(env, final_answer=None):
            env.instance.load()
            done = env.db().table("notes").eq("id", 1).first()["done"]
            return TASK_SUCCESSFUL_SCORE if done == 1 and contains_number(final_answer, 2) else TASK_FAILED_SCORE
    """, answer="Added 2 notes")
    assert verdict.error is None and verdict.reward == 1.0


def test_the_same_verifier_gives_zero_when_the_work_was_not_done() -> None:
    env = Environment([APP])
    env.reset({"LOGGED_IN_USER": "ana", "CURRENT_DATE": "2026-06-15"})
    verdict = run(FLEET_VERIFIER, env=env)
    assert verdict.error is None
    assert (verdict.reward, verdict.partial_score) == (0.0, 0.0)


def test_a_failed_diff_assertion_is_reward_zero_with_the_reason() -> None:
    verdict = run("""
        def validate_task(env, final_answer=None):
            env.db("seed").diff(env.db("current")).expect_only([])
            return 1
    """)
    assert verdict.error is None
    assert verdict.reward == 0.0
    assert "assertion failed at verifier line 3" in verdict.checks[0].detail
    assert "found 2 change(s) in table 'notes'" in verdict.checks[0].detail


def test_final_answer_and_env_variables_reach_the_verifier() -> None:
    verdict = run("""
        def validate_task(env, final_answer=None):
            return final_answer == "forty-two" and env.env_variables["LOGGED_IN_USER"] == "ana"
    """, answer="forty-two")
    assert verdict.reward == 1.0


def test_a_joined_environment_names_its_app() -> None:
    env = Environment([APP, OtherToy()])
    env.reset({"LOGGED_IN_USER": "ana"})
    env.call_tool("add_note", {"title": "x"})
    good = run("""
        def validate_task(env, final_answer=None):
            toy = env.db("current", "toy").table("notes").count()
            other = env.db("current", "toy_two").table("notes").count()
            return int(toy == 7 and other == 6)
    """, env=env)
    assert good.reward == 1.0, good.error
    ambiguous = run("def validate_task(env, final_answer=None):\n    return env.db('current').table('notes').count()\n", env=env)
    assert ambiguous.error is not None and "name one" in ambiguous.error


# ---------------------------------------------------------------------------------------------
#  Return values: binary and partial credit
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reward", "partial"),
    [
        ("return 1", 1.0, 1.0),
        ("return 0", 0.0, 0.0),
        ("return True", 1.0, 1.0),
        ("return 0.25", 0.0, 0.25),
        ("return 1.0", 1.0, 1.0),
        ("return {'score': 0.5}", 0.0, 0.5),
        ("return {'successes': 3, 'errors': ['due date wrong']}", 0.0, 0.75),
        ("return {'successes': ['a', 'b'], 'errors': []}", 1.0, 1.0),
    ],
)
def test_return_values_become_reward_and_partial_score(body: str, reward: float, partial: float) -> None:
    verdict = run(f"def validate_task(env, final_answer=None):\n    {body}\n")
    assert verdict.error is None, verdict.error
    assert (verdict.reward, verdict.partial_score) == (reward, pytest.approx(partial))


def test_partial_credit_errors_are_listed() -> None:
    verdict = run("def validate_task(env, final_answer=None):\n    return {'successes': 1, 'errors': ['due date wrong']}\n")
    assert "1 of 2 verifier checks passed; errors: due date wrong" in verdict.checks[0].detail


@pytest.mark.parametrize(
    ("body", "cause"),
    [
        ("return 'yes'", "verifier returned a str ('yes')"),
        ("return None", "verifier returned None"),
        ("return 7", "verifier returned 7; an int score must be 0 or 1"),
        ("return 1.5", "verifier returned 1.5; a score must be a number in [0, 1]"),
        ("return float('nan')", "a score must be a number in [0, 1]"),
        ("return [1]", "verifier returned a list"),
        ("return {'ok': True}", "a dict without 'score' or 'successes'/'errors'"),
        ("return {'successes': 0, 'errors': 0}", "no successes and no errors"),
    ],
)
def test_bad_return_types_are_verifier_errors(body: str, cause: str) -> None:
    verdict = run(f"def validate_task(env, final_answer=None):\n    {body}\n")
    assert verdict.error is not None and cause in verdict.error
    assert not verdict.passed


def test_verdict_rules_without_a_subprocess() -> None:
    assert verdict_from_return({"type": "int", "value": 1}).reward == 1.0
    assert verdict_from_return({"type": "dict", "value": {"errors": 2}}).partial_score == 0.0
    assert verdict_from_return({"type": "dict", "value": {"successes": -1}}).error is not None


# ---------------------------------------------------------------------------------------------
#  Broken verifiers are errors with a clear cause, never a reward 0
# ---------------------------------------------------------------------------------------------


def test_a_crash_names_the_exception_and_line() -> None:
    verdict = run("""
        def validate_task(env, final_answer=None):
            rows = env.db("current").table("notes").all()
            return rows[0]["no_such_column"]
    """)
    assert verdict.error == "verifier crashed at verifier line 4: KeyError: 'no_such_column'"


def test_a_bad_sql_query_is_a_crash_not_a_zero() -> None:
    verdict = run("def validate_task(env, final_answer=None):\n    return env.db().query('SELECT * FROM nope').rows\n")
    assert verdict.error is not None and "OperationalError: no such table: nope" in verdict.error


def test_a_syntax_error_names_the_line() -> None:
    verdict = run("def validate_task(env, final_answer=None)\n    return 1\n")
    assert verdict.error is not None and verdict.error.startswith("verifier has a syntax error")
    assert "verifier line 1" in verdict.error


def test_a_missing_function_is_an_error() -> None:
    verdict = run("def helper(x):\n    return 1\n")
    assert verdict.error == (
        "verifier error: no function validate_task(env, final_answer=None) defined (found: helper)"
    )


def test_empty_code_is_an_error() -> None:
    assert run("   \n").error == "verifier error: the verifier code is empty"


def test_writing_the_database_is_refused() -> None:
    verdict = run("""
        def validate_task(env, final_answer=None):
            env.db("current").query("DELETE FROM notes")
            return 1
    """)
    assert verdict.error is not None and "readonly" in verdict.error.replace("-", "").lower()


def test_an_infinite_loop_is_killed_at_its_timeout(private_tempdir: Path) -> None:
    started = time.monotonic()
    verdict = run("def validate_task(env, final_answer=None):\n    while True:\n        pass\n", timeout_s=1.0)
    elapsed = time.monotonic() - started
    assert verdict.error == "verifier timed out after 1s (its process group was killed)"
    assert elapsed < 10  # generous: proves the kill happened, not how fast the machine is
    assert list(private_tempdir.iterdir()) == []


@pytest.mark.parametrize(
    "body",
    ["x = bytearray(400 * 1024 * 1024)", "x = []\n    while True:\n        x.append(bytearray(8 * 1024 * 1024))"],
)
def test_a_memory_hog_hits_its_limit(body: str) -> None:
    verdict = run(f"def validate_task(env, final_answer=None):\n    {body}\n    return 1\n", memory_mb=128)
    assert verdict.error is not None and "memory limit of 128 MB" in verdict.error


# ---------------------------------------------------------------------------------------------
#  No network, no processes, no writes outside the sandbox directory
# ---------------------------------------------------------------------------------------------


def test_a_verifier_cannot_reach_a_listening_socket() -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        with contextlib.suppress(OSError):  # the timeout: nobody connected
            accepted.append(listener.accept())

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        verdict = run(f"""
            def validate_task(env, final_answer=None):
                try:
                    import socket
                    socket.create_connection(("127.0.0.1", {port}), timeout=1).close()
                except Exception:
                    return 0
                return 1
        """)
    finally:
        thread.join()
        listener.close()
    # Trying is a broken rule: an error naming it, not the 0 the verifier chose to return.
    assert verdict.error is not None and "import of 'socket'" in verdict.error and not verdict.passed
    assert accepted == []


def test_importing_network_or_process_modules_is_refused() -> None:
    for module in ("socket", "_socket", "subprocess", "ctypes", "multiprocessing"):
        verdict = run(f"import {module}\ndef validate_task(env, final_answer=None):\n    return 1\n")
        assert verdict.error is not None and f"import of '{module}'" in verdict.error, module


def test_writing_outside_the_sandbox_is_refused_even_if_caught(tmp_path: Path) -> None:
    target = tmp_path / "escape.txt"
    verdict = run(f"""
        def validate_task(env, final_answer=None):
            try:
                open({str(target)!r}, "w").write("escaped")
            except PermissionError:
                pass
            return 1
    """)
    assert verdict.error is not None and "for writing outside the work directory" in verdict.error
    assert not target.exists()


def test_deleting_or_running_commands_outside_is_refused(tmp_path: Path) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("precious")
    marker = tmp_path / "ran.txt"
    calls = (
        f"os.remove({str(keep)!r})", f"os.truncate({str(keep)!r}, 0)", f"os.system('touch {marker}')",
        "os.fork()", "os.kill(1, 0)", "os.posix_spawn('/bin/true', ['true'], {})", "os.chdir('/')",
        "os.open('/etc', os.O_RDONLY)",
    )
    for call in calls:
        verdict = run(f"import os\ndef validate_task(env, final_answer=None):\n    {call}\n    return 1\n")
        assert verdict.error is not None and "verifier broke a sandbox rule" in verdict.error, call
    assert keep.read_text() == "precious"
    assert not marker.exists()


def test_sqlite_cannot_open_other_databases(tmp_path: Path) -> None:
    """A verifier's own connection could ATTACH or VACUUM INTO any file; it gets none."""
    target = tmp_path / "new.db"
    for name in (str(target), f"file://{target}", ":memory:", "scratch.db"):
        verdict = run(f"""
            import sqlite3
            def validate_task(env, final_answer=None):
                conn = sqlite3.connect({name!r}, uri=True)
                conn.execute("VACUUM INTO '{target}'")
                return 1
        """)
        assert verdict.error is not None and "sqlite3.connect" in verdict.error, name
    assert not target.exists()


def test_scratch_files_inside_the_sandbox_are_allowed() -> None:
    verdict = run("""
        import os
        def validate_task(env, final_answer=None):
            with open("scratch.txt", "w") as handle:
                handle.write("notes")
            with open(os.path.join(os.environ["TMPDIR"], "more.txt"), "w") as handle:
                handle.write("more")
            os.mkdir("work")
            os.rename("more.txt", "work/moved.txt")
            os.remove("work/moved.txt")
            os.rmdir("work")
            return int(open("scratch.txt").read() == "notes")
    """)
    assert verdict.error is None and verdict.reward == 1.0


# ---------------------------------------------------------------------------------------------
#  The reader outside the sandbox, and the weak mode a user must opt into
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [None, [], {"type": 1}, {"type": "int"}, {"type": "int", "value": "1"}, {"type": "bool", "value": 1},
     {"type": "dict", "value": [1]}, {"type": "float", "value": True}, {"type": "float", "value": "nan"}],
)
def test_malformed_values_are_errors_never_exceptions(value: object) -> None:
    verdict = verdict_from_return(value)  # type: ignore[arg-type]
    assert verdict.error is not None and not verdict.passed


def test_a_verdict_records_its_isolation() -> None:
    verdict = run("def validate_task(env, final_answer=None):\n    return 1\n")
    expected = isolation.STRONG if isolation.strong_isolation()[0] is not None else isolation.WEAK
    assert verdict.passed and verdict.checks[0].detail.endswith(f"[isolation: {expected}]")


@pytest.fixture
def weak_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """No bwrap on this 'machine', and the user accepted the risk."""
    monkeypatch.setattr(isolation, "bwrap_binary", lambda: None)
    monkeypatch.setenv(isolation.TRUST_ENV, "1")


def test_weak_mode_still_runs_fleet_verifiers_and_keeps_its_hook(weak_mode: None, tmp_path: Path) -> None:
    good = run(FLEET_VERIFIER)
    assert good.error is None and good.reward == 1.0
    assert "isolation: weak" in good.checks[0].detail
    refused = run("import socket\ndef validate_task(env, final_answer=None):\n    return 1\n")
    assert refused.error is not None and "import of 'socket'" in refused.error
    target = tmp_path / "escape.txt"
    written = run(f"def validate_task(env, final_answer=None):\n    open({str(target)!r}, 'w')\n    return 1\n")
    assert written.error is not None and "outside the work directory" in written.error
    assert not target.exists()
    slow = run("def validate_task(env, final_answer=None):\n    while True:\n        pass\n", timeout_s=1.0)
    assert slow.error == "verifier timed out after 1s (its process group was killed)"
