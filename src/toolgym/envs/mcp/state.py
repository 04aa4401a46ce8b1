"""What verifiers read of a remote environment: its apps, and a clear refusal where no state is exposed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, SupportsIndex

from toolgym.envs.database import RowChange


class RemoteStateError(ValueError):
    """The remote server exposes no state, so a check that reads the database or diff cannot run."""


@dataclass(frozen=True)
class RemoteApp:
    """What verifiers read of an app: its name (the sandbox snapshots `db(which, app.name)`)."""

    name: str
    version: str = ""
    data_id: str | None = None


class UnavailableChanges(list[RowChange]):
    """The diff of a server without state: empty until something reads it, then a clear error.

    `evaluate_checks` computes the diff up front for every task; answer and tool-call checks
    never read it, so only the checks that need state fail - loudly.
    """

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def _refuse(self) -> RemoteStateError:
        return RemoteStateError(self.reason)

    def __iter__(self) -> Iterator[RowChange]:
        raise self._refuse()

    def __len__(self) -> int:
        raise self._refuse()

    def __bool__(self) -> bool:
        raise self._refuse()

    def __getitem__(self, index: SupportsIndex | slice) -> Any:
        raise self._refuse()
