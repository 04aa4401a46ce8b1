"""The Fleet verifier API over SQLite files: `env.db("seed" | "current")`, a query builder, diffs.

Fleet verifiers (`def validate_task(env, final_answer=None) -> int`) are written against
fleet-python's `DatabaseSnapshot` / `QueryBuilder` / `SnapshotDiff`. This module offers the calls
they use — `table(...).eq(...).all() / first() / count()`, `assert_*`, raw `query(sql, args)`
returning `.columns` / `.rows`, and `seed.diff(current).expect_only / expect_only_v2 /
expect_exactly / expect` — over read-only SQLite files.

Standard library only: this module and the fleet_*.py files it imports (relatively) are loaded
inside the verifier sandbox (`python -I -S`), where nothing else can be imported, as one package
(see FLEET_API_FILES). Connections are opened read-only, so a verifier can look but never write.
"""

from __future__ import annotations

from .fleet_diff import IgnoreConfig, SnapshotDiff
from .fleet_query import Count, DatabaseSnapshot, QueryBuilder, QueryResult
from .fleet_values import (
    TASK_FAILED_SCORE,
    TASK_SUCCESSFUL_SCORE,
    TOUCHED_TABLE,
    contains_number,
    extract_numbers,
    normalized_contains,
    normalized_string_comparison,
    values_equivalent,
)

# Every file of the API: the sandbox copies them all beside its child, which loads them as one package.
FLEET_API_FILES = ("fleet_api.py", "fleet_diff.py", "fleet_query.py", "fleet_values.py")

__all__ = [
    "FLEET_API_FILES",
    "TASK_FAILED_SCORE",
    "TASK_SUCCESSFUL_SCORE",
    "TOUCHED_TABLE",
    "Count",
    "DatabaseSnapshot",
    "IgnoreConfig",
    "QueryBuilder",
    "QueryResult",
    "SnapshotDiff",
    "VerifierEnv",
    "contains_number",
    "extract_numbers",
    "normalized_contains",
    "normalized_string_comparison",
    "values_equivalent",
]


class _Instance:
    """Fleet verifiers sometimes call `env.instance.load()`; locally there is nothing to load."""

    def load(self) -> None:
        return None


class VerifierEnv:
    """`env.db("seed")` / `env.db("current")` (and `env.db(which, app)` when several apps are joined)."""

    def __init__(self, databases: dict[str, dict[str, str]], env_variables: dict[str, str] | None = None) -> None:
        self._paths = databases
        self._snapshots: dict[tuple[str, str], DatabaseSnapshot] = {}
        self.apps = list(databases)
        self.env_variables = dict(env_variables or {})
        self.instance = _Instance()

    def db(self, name: str = "current", app: str | None = None) -> DatabaseSnapshot:
        if name not in ("seed", "current"):
            raise KeyError(f"unknown database {name!r}; available: 'seed', 'current'")
        if app is None:
            if len(self.apps) != 1:
                raise ValueError(f"this environment joins apps {self.apps}; name one: env.db({name!r}, app)")
            app = self.apps[0]
        if app not in self._paths:
            raise KeyError(f"unknown app {app!r}; available: {self.apps}")
        key = (app, name)
        if key not in self._snapshots:
            self._snapshots[key] = DatabaseSnapshot(self._paths[app][name], name=f"{app}:{name}")
        return self._snapshots[key]

    def open_all(self) -> None:
        """Open every database now (the sandbox allows no new connections once the verifier runs)."""
        for app in self.apps:
            for which in ("seed", "current"):
                _ = self.db(which, app).connection

    def close(self) -> None:
        for snapshot in self._snapshots.values():
            snapshot.close()
