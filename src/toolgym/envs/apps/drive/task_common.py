"""Helpers for the drive task generators: Drive users, read-only tool calls on the seed, relative-day
phrases that resolve to a chosen day, people to share with, and the check builders the families share.

Generators read the seed through the app's own tools (on the read-only seed connection), so a
task's expected answer is computed with exactly the semantics the agent's tool calls will have.
A draw whose answer would be ambiguous (a tie, a duplicate name) is rejected rather than guessed.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Any

from toolgym.envs import World, kit, resolve_date
from toolgym.envs.apps.drive import tools as t
from toolgym.envs.apps.drive.tool_common import RANK, name_taken, now
from toolgym.envs.kit.grouped import pick_group
from toolgym.envs.kit.task_user import TaskUser
from toolgym.envs.registry import get_app
from toolgym.schema import AnswerContains, Check, DiffOnly, ExpectedChange

TEXTS = kit.module_texts(__file__)

ROLE_PHRASES = TEXTS["ROLE_PHRASES"]
KIND_NOUNS = TEXTS["KIND_NOUNS"]


def drive_users(world: World) -> list[TaskUser]:
    rows = world.query("SELECT username, name FROM users WHERE has_drive=1 ORDER BY username")
    return [TaskUser(r["username"], r["name"]) for r in rows]


class Reader(kit.SeedReader):
    """The drive tools run on the read-only seed as `owner` on `today` (tools that write would fail)."""

    def __init__(self, world: World, owner: TaskUser, today: dt.date) -> None:
        super().__init__(get_app("drive"), world, owner.env(today))
        self.owner = owner
        self.today = today

    def stamp(self, offset: int = 0) -> str:
        """The timestamp the `offset`-th change of the episode gets (0: the first)."""
        first = now(self.ctx)
        return f"{first[:14]}{min(int(first[14:]) + offset, 59):02d}"

    def my_files(self) -> list[dict[str, Any]]:
        return self(t.search_files, owner="me", limit=50)["files"]

    def pick_folder(self, rng: random.Random) -> tuple[str, list[dict[str, Any]]] | None:
        """One of my folders but /Personal and its files, as list_drive_folder shows them; None if I have none."""
        folders = sorted({f["folder"] for f in self.my_files()} - {"/Personal"})
        if not folders:
            return None
        path = rng.choice(folders)
        return path, self(t.list_drive_folder, path=path)["files"]

    def all_files(self) -> list[dict[str, Any]]:
        return self(t.search_files, limit=50)["files"]

    def by_name(self, name: str) -> dict[str, Any] | None:
        """The one file I can open with exactly this name (ignoring case), or None if none or several."""
        hits = [f for f in self(t.search_files, query=name, limit=50)["files"] if f["name"].lower() == name.lower()]
        return hits[0] if len(hits) == 1 else None

    def has_no_access(self, file_id: int, person: str) -> bool:
        """`person` cannot open the file today and has no share of it waiting in the future."""
        details = self(t.get_file, file_id=file_id)
        if any(a["username"] == person for a in details["access"]):
            return False
        future = self.ctx.one("SELECT id FROM permissions WHERE file_id=? AND grantee=?", (file_id, person))
        return future is None


def people(world: World, exclude: set[str]) -> list[dict[str, Any]]:
    return [r for r in world.query("SELECT username, name FROM users ORDER BY username") if r["username"] not in exclude]


def pick_grantee(rng: random.Random, world: World, reader: Reader, file_ids: list[int],
                 exclude: set[str]) -> dict[str, Any] | None:
    """Someone who has no access (now or later) to any of the files."""
    candidates = people(world, exclude | {reader.owner.username})
    for _ in range(6):
        person = rng.choice(candidates)
        if all(reader.has_no_access(f, person["username"]) for f in file_ids):
            return person
    return None


def pick_share(rng: random.Random, world: World, reader: Reader,
               file_ids: list[int]) -> tuple[dict[str, Any], str, str] | None:
    """What a share task draws: a person without access to the files, the role to give them and how the
    prompt says that role; None when no such person was found."""
    person = pick_grantee(rng, world, reader, file_ids, set())
    if person is None:
        return None
    role = rng.choice(("viewer", "commenter", "editor"))
    return person, role, rng.choice(ROLE_PHRASES[role])


@dataclass(frozen=True)
class When:
    """A relative day: how the prompt says it, what a tool is given, and the CURRENT_DATE that makes it `day`."""

    phrase: str
    argument: str
    today: dt.date
    day: dt.date


def past_day_options(day: dt.date) -> list[When]:
    """Every (phrase, CURRENT_DATE in the task window) for which a past-day phrase resolves to `day`."""
    options: list[When] = []

    def add(text: str, argument: str, today: dt.date) -> None:
        if kit.FIRST_DAY <= today <= kit.LAST_DAY and resolve_date(argument, today) == day:
            options.append(When(text, argument, today, day))

    add("yesterday", "yesterday", day + dt.timedelta(days=1))
    for back in range(2, 6):
        add(f"{back} days ago", f"{back} days ago", day + dt.timedelta(days=back))
    name = kit.WEEKDAY_NAMES[day.weekday()]
    for ahead in range(2, 8):
        add(f"last {name}", f"last {name}", day + dt.timedelta(days=ahead))
    return options


def pick_past_day(rng: random.Random, day: dt.date) -> When | None:
    """A past-day phrase for `day`: its kind ('yesterday', 'ago', 'last') drawn evenly, then one of that kind."""
    group = pick_group(rng, past_day_options(day), _phrase_kind)
    return rng.choice(group) if group else None


def _phrase_kind(option: When) -> str:
    return "ago" if "ago" in option.phrase else option.phrase.split()[0]


# -- checks --------------------------------------------------------------------------------------------

def names_checks(names: list[str], weight: float = 1.0) -> list[Check]:
    """One answer check per name (partial credit per name found)."""
    return [AnswerContains(values=[n], weight=weight, label=f"mentions {n}") for n in names]


def logged(actor: str, action: str, **where: Any) -> ExpectedChange:
    """The activity row a change writes."""
    return ExpectedChange(table="activity", op="insert", where={"actor": actor, "action": action, **where})


def file_field_changed(actor: str, action: str, file_id: int, field: str, value: Any, label: str,
                       only_label: str) -> list[Check]:
    """The file's `field` now holds `value`, and nothing changed but that field and the activity row that
    logs `action` on it."""
    return [kit.field_is("files", {"id": file_id}, field, value, label, weight=2.0),
            DiffOnly(expected=[ExpectedChange(table="files", op="update", where={"id": file_id}, fields=[field]),
                               logged(actor, action, file_id=file_id)], weight=1.0, label=only_label)]


EDITOR = RANK["editor"]


def setup(rng: random.Random, world: World) -> Reader:
    return Reader(world, rng.choice(drive_users(world)), kit.random_day(rng))


def uniquely_named(reader: Reader, files: list[dict]) -> list[dict]:
    """The files whose name alone identifies them among everything the user can open."""
    return [f for f in files if reader.by_name(f["name"]) is not None]


def live_namesake(reader: Reader, file_id: int) -> bool:
    """A file outside the trash in the same folder already has this (trashed) file's name."""
    row = reader.ctx.one("SELECT folder_id, name FROM files WHERE id=?", (file_id,))
    return row is None or name_taken(reader.ctx, row["folder_id"], row["name"], except_id=file_id) is not None
