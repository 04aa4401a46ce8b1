"""Environment: one or more apps with per-episode state, a tool-call log and the seed → current diff.

Whose fault is a failed call? `call_tool` answers that once, for every app:

- The model's (a tool error: an `Error: ...` result the model reads; the episode goes on and is
  scored): an unknown tool, a tool of the other party, arguments that break the schema or the tool
  boundary (envs/tool.py), a `ToolError`, and an exception a tool raises on the values it was
  given. Those are the exceptions Python and SQLite raise for a bad value: ValueError (with
  UnicodeError), TypeError, LookupError, ArithmeticError, RecursionError, sqlite3.IntegrityError,
  DataError and InterfaceError, sqlite3.ProgrammingError about binding a parameter, and
  sqlite3.OperationalError naming a limit a value hit ("too big", "too complex", "too many" …).
- Infrastructure's (`EnvError`; the episode ends as `error`, outside pass rates): everything
  else, i.e. the machine or the engine failing (MemoryError, OSError, a locked, busy, full,
  read-only, closed or corrupt database, a missing table), exceptions that say the code itself is
  wrong (AttributeError, NameError, AssertionError, NotImplementedError, other RuntimeErrors), and
  any exception of a tool called with no arguments, which no model input can have caused.

So no exception escapes `call_tool` but `EnvError`, and no model input can end an episode as an
infrastructure error unless a tool has a bug of that second kind (bench/fuzz_tools.py looks for them).
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from toolgym.envs.app import App, ToolContext
from toolgym.envs.context import EnvContext
from toolgym.envs.database import RowChange, diff
from toolgym.envs.tool import Tool, ToolError, short_repr
from toolgym.schema import ToolSpec


class EnvError(RuntimeError):
    """The environment itself broke (a tool bug, a dead server): an infrastructure error, not a reward."""


MAX_ERROR_CHARS = 1_000  # an error the model reads; longer ones keep their head and tail

# Exceptions Python raises for a bad value: from a tool given arguments, the arguments were bad.
_VALUE_FAULTS: tuple[type[BaseException], ...] = (
    ValueError, TypeError, LookupError, ArithmeticError, RecursionError,
    sqlite3.IntegrityError, sqlite3.DataError, sqlite3.InterfaceError,
)
# SQLite limits a value can hit: LIKE pattern, string or blob length, bound variables, expression depth.
_SQLITE_LIMIT_WORDS = ("too big", "too complex", "too many", "too large", "too long", "stack overflow")


def model_caused(exc: BaseException, had_arguments: bool) -> bool:
    """Whether a tool's exception is the model's fault (a tool error) rather than infrastructure's."""
    if not had_arguments or isinstance(exc, EnvError | MemoryError | OSError):
        return False
    message = str(exc).lower()
    if isinstance(exc, sqlite3.ProgrammingError):
        return "binding parameter" in message or "not supported" in message
    if isinstance(exc, sqlite3.OperationalError):
        return any(words in message for words in _SQLITE_LIMIT_WORDS)
    return isinstance(exc, _VALUE_FAULTS)


def clip(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """`text` cut to `limit` characters around a marker, keeping the start and the advice at the end."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3 - 20
    return f"{text[:head]} … [{len(text) - head - tail:,} characters cut] … {text[-tail:]}"


@dataclass
class ToolResult:
    content: str
    is_error: bool = False


@dataclass
class ToolCallRecord:
    """What was called, by whom, and whether it worked: the input of tool_called checks and traces."""

    name: str
    arguments: dict[str, Any]
    caller: str
    ok: bool
    error: str | None = None
    seconds: float = 0.0


def render_result(value: Any) -> str:
    """Tool return values become compact JSON text for the model."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


_CALL_SAVEPOINT = "toolgym_tool_call"


def _end_savepoint(conn: sqlite3.Connection, atomic: bool, undo: bool) -> None:
    """Release (or roll back to) the per-call savepoint, unless the tool already ended it with COMMIT."""
    try:
        if not atomic or not conn.in_transaction:
            return
        if undo:
            conn.execute(f"ROLLBACK TO {_CALL_SAVEPOINT}")
        conn.execute(f"RELEASE {_CALL_SAVEPOINT}")
    except sqlite3.OperationalError:
        pass  # the tool closed the transaction itself
    except sqlite3.Error as exc:  # a closed or broken connection: the call's effect is unknown
        raise EnvError(f"could not end the tool call's transaction: {type(exc).__name__}: {exc}") from exc


@dataclass
class Environment:
    """Apps composed over shared users. Call `reset` before each episode."""

    apps: list[App]
    context: EnvContext = field(default_factory=EnvContext)
    calls: list[ToolCallRecord] = field(default_factory=list)
    _conns: dict[str, sqlite3.Connection] = field(default_factory=dict)
    _tools: dict[str, tuple[App, Tool]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for app in self.apps:
            for t in app.tools:
                if t.name in self._tools:
                    other = self._tools[t.name][0].name
                    raise ValueError(f"tool {t.name!r} is defined by both {other!r} and {app.name!r}")
                self._tools[t.name] = (app, t)

    @property
    def name(self) -> str:
        return "+".join(a.name for a in self.apps)

    @property
    def version(self) -> str:
        return "+".join(a.version for a in self.apps)

    @property
    def policy(self) -> str:
        return "\n\n".join(a.policy.strip() for a in self.apps)

    def reset(self, env_variables: dict[str, str] | None = None) -> None:
        """Fresh copies of every app's seed database; the seed itself is never written."""
        self.close()
        self.context = EnvContext(dict(env_variables or {}))
        self.calls = []
        for app in self.apps:
            self._conns[app.name] = app.snapshot().fresh()

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns = {}

    def tool_specs(self, owner: str = "agent") -> list[ToolSpec]:
        return [t.spec for _, t in self._tools.values() if t.owner == owner]

    def _app(self, app: str | None) -> App:
        if app is None:
            if len(self.apps) != 1:
                raise ValueError(f"environment {self.name!r} has several apps; name one of them")
            return self.apps[0]
        for candidate in self.apps:
            if candidate.name == app:
                return candidate
        raise ValueError(f"environment {self.name!r} has no app {app!r}")

    def db(self, which: str = "current", app: str | None = None) -> sqlite3.Connection:
        """`seed` (read-only, shared) or `current` (this episode's) database of an app."""
        target = self._app(app)
        if which == "seed":
            return target.snapshot().reader()
        if which != "current":
            raise ValueError(f"unknown database {which!r}; use 'seed' or 'current'")
        if target.name not in self._conns:
            raise EnvError("environment was not reset before use")
        return self._conns[target.name]

    def diff(self, app: str | None = None) -> list[RowChange]:
        """Exact net row changes seed → current, for one app or (prefixed 'app.table') for all."""
        if app is not None or len(self.apps) == 1:
            target = self._app(app)
            return diff(target.snapshot(), self.db("current", target.name))
        changes: list[RowChange] = []
        for a in self.apps:
            for c in diff(a.snapshot(), self.db("current", a.name)):
                changes.append(RowChange(f"{a.name}.{c.table}", c.op, c.rowid, c.before, c.after))
        return changes

    def call_tool(self, name: str, arguments: Any, caller: str = "agent") -> ToolResult:
        """Run a tool. Anything the model got wrong comes back as a readable error result; only an
        infrastructure fault (module docstring) raises, and then always as EnvError."""
        started = time.perf_counter()
        args = arguments if isinstance(arguments, dict) else {}
        entry = self._tools.get(name) if isinstance(name, str) else None
        if entry is None:
            known = ", ".join(sorted(n for n, (_, t) in self._tools.items() if t.owner == caller))
            return self._record(
                str(name), args, caller, started, f"unknown tool {short_repr(name)}; available tools: {known}"
            )
        app, fn = entry
        if fn.owner != caller:
            return self._record(
                name, args, caller, started,
                f"tool {name!r} belongs to the {fn.owner}, not the {caller}; ask the {fn.owner} to do it",
            )
        try:
            bound = fn.bind_arguments(arguments)
        except ToolError as exc:
            return self._record(name, args, caller, started, str(exc))
        conn = self.db("current", app.name)
        # A call is all-or-nothing: a tool that writes and then fails leaves no half-done change.
        try:
            atomic = not conn.in_transaction
            if atomic:
                conn.execute(f"SAVEPOINT {_CALL_SAVEPOINT}")
        except sqlite3.Error as exc:
            raise EnvError(f"database of app {app.name!r} is unusable: {type(exc).__name__}: {exc}") from exc
        try:
            value = fn.fn(ToolContext(db=conn, env=self.context, app=app), **bound)
            content = render_result(value)
        except ToolError as exc:
            _end_savepoint(conn, atomic, undo=True)
            return self._record(name, args, caller, started, str(exc))
        except Exception as exc:
            _end_savepoint(conn, atomic, undo=True)
            if model_caused(exc, had_arguments=bool(bound)):
                return self._record(
                    name, args, caller, started,
                    f"{name} could not use these arguments ({type(exc).__name__}: {exc}); check their values",
                )
            self.calls.append(ToolCallRecord(name, args, caller, False, repr(exc), time.perf_counter() - started))
            raise EnvError(f"tool {name!r} of app {app.name!r} crashed: {type(exc).__name__}: {clip(str(exc))}") from exc
        _end_savepoint(conn, atomic, undo=False)
        self.calls.append(ToolCallRecord(name, args, caller, True, None, time.perf_counter() - started))
        return ToolResult(content)

    def _record(self, name: str, args: dict[str, Any], caller: str, started: float, error: str) -> ToolResult:
        error = clip(error)
        self.calls.append(ToolCallRecord(name, args, caller, False, error, time.perf_counter() - started))
        return ToolResult(f"Error: {error}", is_error=True)
