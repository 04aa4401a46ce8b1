"""Seed data for the drive app: 28 Drive users of the shared population (every mail-app mailbox owner
plus eight others) with profile-shaped folder trees, files with edit histories by their collaborators,
team project folders shared with teammates, individual shares, links, comments, trash and an
activity log. Five users on the 2 GB basic plan are planted close to their quota, and a few trashed
files have a live namesake in the same folder (restoring them would clash).

Everything comes from the seeded `fake` and `rng` in a fixed call order, so the database is
byte-identical on every build.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from faker import Faker

from toolgym.envs.apps.drive.content import (
    COMMENTS,
    COMMON_FOLDERS,
    DEFAULT_FILES_PER_FOLDER,
    FILE_TEMPLATES,
    FILE_TYPES,
    FILES_PER_FOLDER,
    PROFILES,
    PROJECTS,
    ROLES,
    TEAMS,
)
from toolgym.envs.people import Person, population

# The mailbox owners of the mail app's seed (tests/test_app_drive.py checks the two stay in step), so
# "the report Karen asked for by email" can be found in Karen's Drive.
MAILBOX_OWNERS: tuple[str, ...] = (
    "andrea.velazquez", "beverly.gentry", "brittany.davis", "cheryl.beard", "christina.garner", "craig.flores",
    "james.vazquez", "jamie.jimenez", "jennifer.bonilla", "karen.thomas", "kimberly.bullock", "lynn.carlson",
    "meagan.chen", "michael.hoffman", "michael.melton", "nichole.richards", "scott.villanueva", "stephanie.chung",
    "warren.abbott", "yvonne.howell",
)
EXTRA_DRIVE_USERS = 8
TEAM_SIZE = 4
BASIC_USERS = 5

MB = 1024 * 1024
GB = 1024 * MB
QUOTAS = {"none": 0, "basic": 2 * GB, "standard": 15 * GB, "business": 100 * GB}

FOLDERS_FROM = dt.date(2024, 6, 3)
FOLDERS_UNTIL = dt.date(2026, 2, 27)  # every seed folder predates the task window
OLD_FILES_FROM = dt.date(2025, 6, 2)
RECENT_FROM = dt.date(2026, 3, 2)
LAST_CREATE = dt.date(2026, 8, 28)
LAST_EVENT = dt.date(2026, 9, 11)
ACTIVITY_FROM = "2026-01-01"
VERSION_WEIGHTS = ((1, 40), (2, 28), (3, 16), (4, 9), (5, 5), (6, 2))
ROLE_RANK = {"viewer": 1, "commenter": 2, "editor": 3}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _stamp(day: dt.date, rng: random.Random, first_hour: int = 8) -> str:
    return f"{day.isoformat()}T{rng.randint(first_hour, 17):02d}:{rng.randint(0, 59):02d}"


def _workday(rng: random.Random, start: dt.date, end: dt.date) -> dt.date:
    """A random day in [start, end], mostly on weekdays."""
    if end < start:
        end = start
    day = start + dt.timedelta(days=rng.randint(0, (end - start).days))
    if day.weekday() >= 5 and rng.random() < 0.85:
        shifted = day + dt.timedelta(days=7 - day.weekday())
        if shifted <= end:
            day = shifted
    return day


def _date(stamp: str) -> dt.date:
    return dt.date.fromisoformat(stamp[:10])


@dataclass
class Folder:
    id: int
    owner: str
    path: str
    kind: str | None
    created_at: str
    parent: Folder | None = None
    shares: dict[str, tuple[str, str]] = field(default_factory=dict)  # grantee -> (role, granted_at)


@dataclass
class File:
    id: int
    owner: str
    folder: Folder
    name: str
    created_at: str
    trashed_at: str | None = None
    shares: dict[str, tuple[str, str]] = field(default_factory=dict)
    versions: list[tuple[int, str, str]] = field(default_factory=list)  # (size, author, at)


@dataclass
class DriveUser:
    person: Person
    profile: str
    folders: dict[str, Folder] = field(default_factory=dict)
    team: list[str] = field(default_factory=list)


class DriveSeeder:
    """Fills the schema; one instance per seed run."""

    def __init__(self, db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
        self.db = db
        self.fake = fake
        self.rng = rng
        self.people = population()
        self.names = {p.username: p.name for p in self.people}
        self.files: list[File] = []
        self.folders: list[Folder] = []
        self.events: list[dict[str, Any]] = []

    def insert(self, table: str, row: dict[str, Any]) -> int:
        columns = ", ".join(f'"{c}"' for c in row)
        marks = ", ".join("?" for _ in row)
        cur = self.db.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(row.values()))
        return int(cur.lastrowid or 0)

    def log(self, actor: str, action: str, at: str, file: File | None = None, folder: Folder | None = None,
            detail: str = "") -> None:
        if at >= ACTIVITY_FROM:
            self.events.append({"actor": actor, "action": action, "file_id": file.id if file else None,
                                "folder_id": folder.id if folder else None, "detail": detail, "occurred_at": at})

    # -- users --------------------------------------------------------------------------------
    def seed_users(self) -> list[DriveUser]:
        by_name = {p.username: p for p in self.people}
        missing = [u for u in MAILBOX_OWNERS if u not in by_name]
        if missing:
            raise ValueError(f"mailbox owners missing from the population: {missing}")
        others = [p.username for p in self.people if p.username not in MAILBOX_OWNERS]
        chosen = set(MAILBOX_OWNERS) | set(self.rng.sample(others, EXTRA_DRIVE_USERS))
        for person in self.people:
            has_drive = person.username in chosen
            plan = ("business" if person.username in MAILBOX_OWNERS else "standard") if has_drive else "none"
            self.insert("users", {
                "username": person.username, "name": person.name, "email": person.email, "plan": plan,
                "quota_bytes": QUOTAS[plan], "has_drive": int(has_drive),
            })
        drive_people = [p for p in self.people if p.username in chosen]
        profiles = sorted(PROFILES)
        deck: list[str] = []
        while len(deck) < len(drive_people):
            deck.extend(profiles)
        self.rng.shuffle(deck)
        return [DriveUser(person, deck[i]) for i, person in enumerate(drive_people)]

    # -- folders ------------------------------------------------------------------------------
    def folder(self, owner: str, path: str, kind: str | None, parent: Folder | None, created: dt.date) -> Folder:
        name = "My Drive" if path == "/" else path.rsplit("/", 1)[-1]
        at = _stamp(created, self.rng)
        folder_id = self.insert("folders", {
            "owner": owner, "parent_id": parent.id if parent else None, "name": name, "path": path,
            "created_at": at,
        })
        made = Folder(folder_id, owner, path, kind, at, parent)
        self.folders.append(made)
        return made

    def seed_folders(self, user: DriveUser, project: str | None) -> None:
        owner = user.person.username
        day = _workday(self.rng, FOLDERS_FROM, FOLDERS_FROM + dt.timedelta(days=120))
        root = self.folder(owner, "/", None, None, day)
        user.folders["/"] = root
        layout = [*PROFILES[user.profile], *COMMON_FOLDERS]
        if project:
            layout += [("Projects", None), (f"Projects/{project}", "project")]
        for relative, kind in layout:
            parent_path = "/" + relative.rsplit("/", 1)[0] if "/" in relative else "/"
            parent = user.folders[parent_path]
            day = _workday(self.rng, max(_date(parent.created_at), FOLDERS_FROM), FOLDERS_UNTIL)
            user.folders["/" + relative] = self.folder(owner, "/" + relative, kind, parent, day)

    # -- files --------------------------------------------------------------------------------
    def slots(self, created: dt.date) -> dict[str, str]:
        return {
            "q": str((created.month - 1) // 3 + 1), "month": created.strftime("%B").lower(),
            "mmdd": created.strftime("%m%d"), "day": created.isoformat(), "num": str(self.rng.randint(1000, 9999)),
            "v": str(self.rng.randint(1, 4)), "company": _slug(self.fake.company().split()[0].rstrip(",")),
            "city": _slug(self.fake.city()), "product": self.rng.choice(PROJECTS).lower(),
            "role": self.rng.choice(ROLES), "team": self.rng.choice(TEAMS),
        }

    def created_day(self, kind: str) -> dt.date:
        if kind == "invoices":  # invoice names carry their 2026 quarter
            return _workday(self.rng, dt.date(2026, 1, 5), LAST_CREATE)
        if self.rng.random() < 0.3:
            return _workday(self.rng, OLD_FILES_FROM, RECENT_FROM - dt.timedelta(days=1))
        return _workday(self.rng, RECENT_FROM, LAST_CREATE)

    def new_file(self, folder: Folder, name: str, created_at: str, trashed_at: str | None = None) -> File:
        extension = name.rsplit(".", 1)[-1]
        file_id = self.insert("files", {
            "owner": folder.owner, "folder_id": folder.id, "name": name, "mime_type": FILE_TYPES[extension][0],
            "created_at": created_at, "trashed_at": trashed_at, "copied_from": None,
        })
        made = File(file_id, folder.owner, folder, name, created_at, trashed_at)
        self.files.append(made)
        return made

    def seed_files(self, folder: Folder, project: str | None) -> None:
        if folder.kind is None:
            return
        low, high = FILES_PER_FOLDER.get(folder.kind, DEFAULT_FILES_PER_FOLDER)
        taken: set[str] = set()
        for _ in range(self.rng.randint(low, high)):
            for _attempt in range(8):
                day = max(self.created_day(folder.kind), _date(folder.created_at))
                values = self.slots(day)
                if project:
                    values["product"] = project.lower()
                name = self.rng.choice(FILE_TEMPLATES[folder.kind]).format(**values)
                if name.lower() not in taken:
                    break
            else:
                continue
            taken.add(name.lower())
            self.new_file(folder, name, _stamp(day, self.rng))

    # -- sharing ------------------------------------------------------------------------------
    def role(self, weights: tuple[float, float, float]) -> str:
        roll = self.rng.random()
        return "viewer" if roll < weights[0] else "commenter" if roll < weights[0] + weights[1] else "editor"

    def inherited(self, folder: Folder | None, grantee: str) -> tuple[str, str] | None:
        """The best folder share `grantee` has on `folder` or its ancestors: (role, granted_at)."""
        best: tuple[str, str] | None = None
        while folder is not None:
            share = folder.shares.get(grantee)
            if share and (best is None or ROLE_RANK[share[0]] > ROLE_RANK[best[0]]):
                best = share
            folder = folder.parent
        return best

    def share_folder(self, folder: Folder, grantee: str, role: str, day: dt.date) -> None:
        at = _stamp(day, self.rng)
        folder.shares[grantee] = (role, at)
        self.insert("permissions", {"file_id": None, "folder_id": folder.id, "grantee": grantee, "role": role,
                                    "granted_by": folder.owner, "granted_at": at})
        self.log(folder.owner, "share", at, folder=folder, detail=f"{self.names[grantee]} as {role}")

    def seed_folder_shares(self, users: list[DriveUser], teams: list[list[DriveUser]],
                           projects: dict[str, str]) -> None:
        for team in teams:
            lead = team[0]
            folder = lead.folders[f"/Projects/{projects[lead.person.username]}"]
            for mate in team[1:]:
                late = self.rng.random() < 0.25
                start, end = (dt.date(2026, 4, 1), dt.date(2026, 8, 28)) if late else (
                    dt.date(2026, 1, 5), dt.date(2026, 3, 31))
                self.share_folder(folder, mate.person.username, self.role((0.2, 0.2)), _workday(self.rng, start, end))
        drive_names = [u.person.username for u in users]
        for user in users:
            if self.rng.random() < 0.5:
                continue
            top = sorted(p for p, f in user.folders.items() if p.count("/") == 1 and f.kind and p != "/Personal")
            folder = user.folders[self.rng.choice(top)]
            candidates = [n for n in user.team if n != user.person.username] or drive_names
            for grantee in self.rng.sample(candidates, min(len(candidates), self.rng.randint(1, 2))):
                day = _workday(self.rng, dt.date(2026, 1, 5), dt.date(2026, 8, 28))
                self.share_folder(folder, grantee, self.role((0.6, 0.3)), day)

    def seed_file_shares(self, users: dict[str, DriveUser]) -> None:
        everyone = [p.username for p in self.people]
        for file in self.files:
            if file.folder.path == "/Personal" or self.rng.random() > 0.4:
                continue
            team = [n for n in users[file.owner].team if n != file.owner]
            for _ in range(self.rng.randint(1, 3)):
                grantee = self.rng.choice(team) if team and self.rng.random() < 0.6 else self.rng.choice(everyone)
                if grantee == file.owner or grantee in file.shares or self.inherited(file.folder, grantee):
                    continue
                created = _date(file.created_at)
                role = self.role((0.45, 0.2))
                span = 6 if role == "editor" else 40  # collaborators get edit access early
                day = _workday(self.rng, created, min(created + dt.timedelta(days=span), dt.date(2026, 9, 4)))
                at = _stamp(day, self.rng)
                if at <= file.created_at:
                    at = file.created_at[:11] + "18:30"
                file.shares[grantee] = (role, at)
                self.insert("permissions", {"file_id": file.id, "folder_id": None, "grantee": grantee,
                                            "role": role, "granted_by": file.owner, "granted_at": at})
                self.log(file.owner, "share", at, file=file, detail=f"{self.names[grantee]} as {role}")

    def access(self, file: File, person: str, at: str) -> int:
        """`person`'s role rank on `file` at time `at` (4 for the owner)."""
        if person == file.owner:
            return 4
        best = 0
        direct = file.shares.get(person)
        if direct and direct[1] <= at:
            best = ROLE_RANK[direct[0]]
        folder: Folder | None = file.folder
        while folder is not None:
            share = folder.shares.get(person)
            if share and share[1] <= at:
                best = max(best, ROLE_RANK[share[0]])
            folder = folder.parent
        return best

    def collaborators(self, file: File) -> list[str]:
        people = set(file.shares)
        folder: Folder | None = file.folder
        while folder is not None:
            people |= set(folder.shares)
            folder = folder.parent
        return sorted(people)

    # -- versions, comments, links, trash -----------------------------------------------------------
    def seed_versions(self, file: File) -> None:
        extension = file.name.rsplit(".", 1)[-1]
        _, kind, (low_kb, high_kb) = FILE_TYPES[extension]
        size = self.rng.randint(low_kb, high_kb) * 1024 + self.rng.randint(0, 1023)
        file.versions.append((size, file.owner, file.created_at))
        self.log(file.owner, "upload", file.created_at, file=file)
        count = 1 if kind in ("video", "archive") else self.rng.choices(
            [n for n, _ in VERSION_WEIGHTS], [w for _, w in VERSION_WEIGHTS])[0]
        collaborators = self.collaborators(file)
        if any(self.access(file, p, "9999") == 3 for p in collaborators):
            count += self.rng.randint(1, 2)  # shared documents get edited more
        if kind == "image":
            count = min(count, 2)
        at = file.created_at
        for _ in range(count - 1):
            day = _workday(self.rng, _date(at), min(_date(at) + dt.timedelta(days=18), LAST_EVENT))
            stamp = _stamp(day, self.rng)
            if stamp <= at:
                break
            editors = [p for p in collaborators if self.access(file, p, stamp) == 3]
            author = self.rng.choice(editors) if editors and self.rng.random() < 0.6 else file.owner
            size = max(1024, min(high_kb * 1024, int(size * self.rng.uniform(0.85, 1.3))))
            file.versions.append((size, author, stamp))
            self.log(author, "edit", stamp, file=file, detail=f"version {len(file.versions)}")
            at = stamp

    def seed_comments(self, file: File) -> None:
        commenters = [p for p in self.collaborators(file) if self.access(file, p, "9999") >= 2]
        if not commenters or self.rng.random() > 0.4:
            return
        at = file.created_at
        for _ in range(self.rng.randint(1, 3)):
            author = self.rng.choice([*commenters, file.owner])
            day = _workday(self.rng, _date(at), min(_date(at) + dt.timedelta(days=12), LAST_EVENT))
            stamp = _stamp(day, self.rng)
            if stamp <= at or self.access(file, author, stamp) < 2:
                continue
            self.insert("comments", {"file_id": file.id, "author": author, "body": self.rng.choice(COMMENTS),
                                     "created_at": stamp, "resolved": int(self.rng.random() < 0.3)})
            self.log(author, "comment", stamp, file=file)
            at = stamp

    def seed_link(self, file: File) -> None:
        if self.rng.random() > 0.07:
            return
        created = _date(file.created_at)
        stamp = _stamp(_workday(self.rng, created, min(created + dt.timedelta(days=30), LAST_EVENT)), self.rng)
        if stamp <= file.created_at:
            return
        role = self.role((0.8, 0.1))
        self.insert("share_links", {"file_id": file.id, "token": self.fake.bothify("????????##").lower(),
                                    "role": role, "created_by": file.owner, "created_at": stamp})
        self.log(file.owner, "link", stamp, file=file, detail=f"anyone with the link as {role}")

    def seed_trash(self, file: File) -> None:
        if file.folder.kind == "project" or self.rng.random() > 0.05:
            return
        last = file.versions[-1][2]
        day = _workday(self.rng, _date(last) + dt.timedelta(days=1), min(_date(last) + dt.timedelta(days=30),
                                                                          LAST_EVENT))
        stamp = _stamp(day, self.rng)
        if stamp <= last:
            return
        file.trashed_at = stamp
        self.db.execute("UPDATE files SET trashed_at=? WHERE id=?", (stamp, file.id))
        self.log(file.owner, "trash", stamp, file=file)

    def plant_trashed_namesakes(self, users: list[DriveUser]) -> None:
        """An older file with the same name, trashed before its namesake was uploaded (restore clashes)."""
        for user in self.rng.sample(users, 26):
            candidates = [f for f in self.files if f.owner == user.person.username and not f.trashed_at
                          and f.folder.kind not in ("project", "backups") and f.created_at >= "2026-03-20"]
            if not candidates:
                continue
            live = self.rng.choice(candidates)
            start = max(_date(live.folder.created_at) + dt.timedelta(days=1), _date(live.created_at) - dt.timedelta(days=60))
            created = _stamp(_workday(self.rng, start, _date(live.created_at) - dt.timedelta(days=8)), self.rng)
            trashed = _stamp(_workday(self.rng, _date(created) + dt.timedelta(days=1),
                                      _date(live.created_at) - dt.timedelta(days=1)), self.rng)
            if not created < trashed < live.created_at:
                continue
            twin = self.new_file(live.folder, live.name, created, trashed)
            extension = live.name.rsplit(".", 1)[-1]
            low_kb, high_kb = FILE_TYPES[extension][2]
            twin.versions.append((self.rng.randint(low_kb, high_kb) * 1024, twin.owner, created))
            self.log(twin.owner, "upload", created, file=twin)
            self.log(twin.owner, "trash", trashed, file=twin)

    def write_versions(self) -> None:
        for file in sorted(self.files, key=lambda f: f.id):
            for number, (size, author, at) in enumerate(file.versions, start=1):
                self.insert("file_versions", {"file_id": file.id, "version_number": number, "size_bytes": size,
                                              "author": author, "created_at": at, "restored_from": None})

    # -- quota --------------------------------------------------------------------------------------
    def usage(self, username: str) -> int:
        return sum(f.versions[-1][0] for f in self.files if f.owner == username)

    def seed_basic_plans(self, users: list[DriveUser]) -> None:
        """Move five light users to the 2 GB plan and fill their Drive to within 40-400 MB of it."""
        light = [u for u in users if self.usage(u.person.username) < 1.4 * GB]
        for user in self.rng.sample(light, BASIC_USERS):
            username = user.person.username
            self.db.execute("UPDATE users SET plan='basic', quota_bytes=? WHERE username=?", (QUOTAS["basic"], username))
            root = user.folders["/"]
            backups = self.folder(username, "/Backups", "backups", root,
                                  _workday(self.rng, _date(root.created_at), FOLDERS_UNTIL))
            user.folders["/Backups"] = backups
            left = QUOTAS["basic"] - self.usage(username) - self.rng.randint(40, 400) * MB
            first = int(left * self.rng.uniform(0.35, 0.65))
            parts = [first, left - first] if left > 1200 * MB else [left]
            for index, size in enumerate(parts):
                day = _workday(self.rng, dt.date(2025, 9, 1), dt.date(2026, 2, 20))
                name = f"laptop_backup_{day.isoformat()}.zip" if index == 0 else "photo_archive_2025.zip"
                file = self.new_file(backups, name, _stamp(day, self.rng))
                file.versions.append((size, username, file.created_at))
                self.log(username, "upload", file.created_at, file=file)

    def write_activity(self) -> None:
        for event in sorted(self.events, key=lambda e: (e["occurred_at"], e["file_id"] or 0, e["folder_id"] or 0,
                                                        e["action"])):
            self.insert("activity", event)


def seed_drive(db: sqlite3.Connection, fake: Faker, rng: random.Random) -> None:
    """Entry point: DriveApp.seed_data."""
    seeder = DriveSeeder(db, fake, rng)
    users = seeder.seed_users()
    order = list(users)
    rng.shuffle(order)
    teams = [order[i:i + TEAM_SIZE] for i in range(0, len(order), TEAM_SIZE)]
    projects: dict[str, str] = {}
    for index, team in enumerate(teams):
        projects[team[0].person.username] = PROJECTS[index % len(PROJECTS)]
        for member in team:
            member.team = [m.person.username for m in team]
    for user in users:
        seeder.seed_folders(user, projects.get(user.person.username))
    for user in users:
        for path in sorted(user.folders):
            seeder.seed_files(user.folders[path], projects.get(user.person.username) if path.startswith(
                "/Projects/") else None)
    seeder.seed_folder_shares(users, teams, projects)
    seeder.seed_file_shares({u.person.username: u for u in users})
    for file in list(seeder.files):
        seeder.seed_versions(file)
        seeder.seed_comments(file)
        seeder.seed_link(file)
        seeder.seed_trash(file)
    seeder.plant_trashed_namesakes(users)
    seeder.seed_basic_plans(users)
    seeder.write_versions()
    seeder.write_activity()
